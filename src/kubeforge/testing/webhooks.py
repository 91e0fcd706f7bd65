"""A manager's webhooks in tests, served from this machine as envtest serves them.

controller-runtime's envtest (WebhookInstallOptions) makes a serving certificate, has the
webhook server listen on a local port and installs the webhook configurations pointing at
it. TestEnv does the same when the manager has webhooks and no certificate where its
webhook server looks for one: the server listens on 127.0.0.1 at a free port with a fresh
certificate, and, on a cluster TestEnv started, the configurations from the webhooks'
markers are installed with that URL and CA, and the CRDs whose objects the server converts
call it for conversion (their previous conversion is restored afterwards).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

from kubeforge.api.webhooks import webhook_configurations
from kubeforge.apiserver.tls import generate_certificates
from kubeforge.client.client import Client
from kubeforge.client.errors import ApiError
from kubeforge.runtime.localconversion import (
    ConversionRegistration,
    register_conversion_webhooks,
)
from kubeforge.webhook.server import WebhookServer

__all__ = ["LocalWebhooks"]

log = logging.getLogger("kubeforge.testing")


class LocalWebhooks:
    """Local serving for a webhook server that has webhooks but no certificate."""

    def __init__(self, server: WebhookServer) -> None:
        self.server = server
        self.ca_pem = b""
        self._directory: Path | None = None
        self._conversion: ConversionRegistration | None = None

    def prepare(self) -> bool:
        """Point the server at 127.0.0.1:0 with a new certificate (before it starts);
        False, changing nothing, when it has no webhooks or has certificate files."""
        server = self.server
        if not server.webhooks or (server.cert_dir / server.cert_name).exists():
            return False
        certificates = generate_certificates(("127.0.0.1", "localhost"))
        self._directory = Path(tempfile.mkdtemp(prefix="kubeforge-webhook-certs-"))
        (self._directory / server.cert_name).write_bytes(certificates.cert_pem)
        key = self._directory / server.key_name
        key.write_bytes(certificates.key_pem)
        key.chmod(0o600)
        self.ca_pem = certificates.ca_pem
        server.cert_dir = self._directory
        server.host = "127.0.0.1"
        server.port = 0
        return True

    async def install(self, client: Client, field_manager: str) -> list[str]:
        """Apply the webhook configurations, calling the running server, and point the CRDs
        it converts at it; the names of the configurations and CRDs."""
        configurations = webhook_configurations(
            self.server.specs(), base_url=self.server.url, ca_bundle=self.ca_pem
        )
        for configuration in configurations:
            await client.apply(configuration, field_manager=field_manager, force=True)
        self._conversion = await register_conversion_webhooks(
            client, self.server, ca_bundle=self.ca_pem
        )
        return [c["metadata"]["name"] for c in configurations] + self._conversion.names

    async def uninstall(self) -> None:
        """Give the CRDs pointed at the server their previous conversion back."""
        if self._conversion is not None:
            conversion, self._conversion = self._conversion, None
            try:
                await conversion.restore()
            except (ApiError, OSError) as exc:
                # The cluster may be gone already; a failed test must keep its own error.
                log.warning("could not restore the CRDs' conversion: %s", exc)

    def cleanup(self) -> None:
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None
