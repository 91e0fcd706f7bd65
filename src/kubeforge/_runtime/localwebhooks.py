"""Serving a manager's webhooks from this machine to a cluster, as envtest's
WebhookInstallOptions does for Go tests.

During development the webhook server runs here, not behind the in-cluster Service that
`config/webhook/manifests.yaml` names. Two steps make a cluster call it:

- `serve_locally(server)` points the server at this machine: it listens on 127.0.0.1 (any
  free port unless told) with a serving certificate signed by a throwaway CA, both written to
  a private temporary directory, or with the certificate of a given directory.
- `register_webhook_server(client, server, ca_bundle=...)` waits until the server serves (its
  readiness check: a TLS handshake succeeds), then applies the project's
  Mutating/ValidatingWebhookConfiguration — built from the webhooks the server has registered,
  as `kubeforge manifests` builds them — with `clientConfig.url` pointing at the server and
  `caBundle` the CA, with server-side apply, and points the CRDs whose objects the server
  converts at it (_runtime/localconversion.py). `WebhookRegistration.remove()` deletes the
  configurations and gives the CRDs their own conversion back.

Registering only once the server answers matters: a configuration with failurePolicy Fail that
points at a server not yet listening refuses every request it matches, and a CRD pointed at
it fails every read in a version its objects are not stored in. A manager registers between
starting its webhook server and its caches (`registered_while_serving` as the manager's
webhook registration), since the caches' first list may need the conversion webhook. Applying
the same names with `force` takes over what a killed run left behind, so a stale
registration lasts only until the next run registers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeforge._api.machinery.certificates import generate_certificates
from kubeforge._api.webhooks import (
    MUTATING_CONFIGURATION,
    VALIDATING_CONFIGURATION,
    webhook_configurations,
)
from kubeforge._client.client import Client
from kubeforge._client.errors import Conflict, NotFound
from kubeforge._runtime.localconversion import ConversionRegistration, register_conversion_webhooks
from kubeforge._webhook.certwatcher import CertificateError
from kubeforge._webhook.server import WebhookServer

__all__ = [
    "LOCAL_HOST",
    "LocalServing",
    "WebhookRegistration",
    "register_webhook_server",
    "registered_while_serving",
    "serve_locally",
    "wait_until_serving",
]

log = logging.getLogger("kubeforge.webhook")

LOCAL_HOST = "127.0.0.1"
FIELD_MANAGER = "kubeforge"
CA_NAME = "ca.crt"
_ANY_ADDRESS = ("", "0.0.0.0", "::")


@dataclass
class LocalServing:
    """Where a webhook server serves on this machine and the CA that signs its certificate
    (the configurations' caBundle). `cleanup()` removes a generated certificate directory."""

    ca_bundle: bytes
    cert_dir: Path
    _temporary: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    def cleanup(self) -> None:
        """Remove the generated certificate and key (nothing for a given directory)."""
        if self._temporary is not None:
            self._temporary.cleanup()
            self._temporary = None


def serve_locally(
    server: WebhookServer,
    *,
    host: str = LOCAL_HOST,
    port: int = 0,
    cert_dir: str | Path | None = None,
) -> LocalServing:
    """Have `server` (not started yet) listen on `host`:`port` of this machine.

    Without `cert_dir`, a CA and a serving certificate for `host`, 127.0.0.1, ::1 and
    localhost are generated into a new private directory. With one, the server uses the
    certificate there (its `cert_name` and `key_name`), and the CA is that directory's
    `ca.crt` (as cert-manager writes it) or, without one, the certificate itself (right for a
    self-signed certificate). CertificateError when the directory has neither.
    """
    if server.serving.is_set():
        raise RuntimeError("serve_locally() configures a webhook server before it starts")
    server.host = host
    server.port = port
    if cert_dir is not None:
        server.cert_dir = Path(cert_dir)
        return LocalServing(_ca_of(server.cert_dir, server.cert_name), server.cert_dir)
    temporary = tempfile.TemporaryDirectory(prefix="kubeforge-webhook-certs-")
    directory = Path(temporary.name)
    hosts = (LOCAL_HOST, "::1", "localhost") + (() if host in _ANY_ADDRESS else (host,))
    certs = generate_certificates(hosts, common_name="kubeforge-webhook")
    (directory / server.cert_name).write_bytes(certs.cert_pem)
    key = directory / server.key_name
    key.touch(mode=0o600)
    key.write_bytes(certs.key_pem)
    (directory / CA_NAME).write_bytes(certs.ca_pem)
    server.cert_dir = directory
    return LocalServing(certs.ca_pem, directory, temporary)


def _ca_of(directory: Path, cert_name: str) -> bytes:
    for candidate in (directory / CA_NAME, directory / cert_name):
        try:
            return candidate.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise CertificateError(f"cannot read {candidate}: {exc.strerror}") from None
    raise CertificateError(f"no {CA_NAME} and no {cert_name} in {directory}")


async def wait_until_serving(server: WebhookServer, timeout: float = 10.0) -> None:
    """Return once `server` completes TLS handshakes (its readiness check); TimeoutError
    after `timeout` seconds. The machine's time: this waits for a server to come up, which
    no clock a test advances would hurry."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        await asyncio.wait_for(server.serving.wait(), timeout)
    except TimeoutError:
        raise TimeoutError(f"the webhook server did not start within {timeout} s") from None
    while not await server.ready():
        if loop.time() >= deadline:
            raise TimeoutError(f"the webhook server at {server.url} did not answer in {timeout} s")
        await asyncio.sleep(0.05)


@dataclass
class WebhookRegistration:
    """What register_webhook_server did: `(group/version/Kind, name, uid)` of each
    configuration applied, the CRDs pointed at the server for conversion, and the URL the
    cluster calls."""

    client: Client
    objects: list[tuple[str, str, str]]
    url: str
    conversion: ConversionRegistration | None = None

    @property
    def names(self) -> list[str]:
        """The names of the configurations applied."""
        return [name for _, name, _ in self.objects]

    @property
    def crds(self) -> list[str]:
        """The names of the CRDs that convert through the server."""
        return self.conversion.names if self.conversion is not None else []

    async def remove(self) -> None:
        """Delete the configurations applied and give the CRDs their conversion back (once;
        later calls do nothing). An object deleted meanwhile, or replaced by another (another
        uid: a later run's), and a CRD whose conversion someone changed since, are left
        alone. Everything is tried; the first error, if any, is raised after."""
        objects, self.objects = self.objects, []
        conversion, self.conversion = self.conversion, None
        failure: Exception | None = None
        if conversion is not None:
            try:
                await conversion.restore()
            except Exception as exc:
                failure = exc
        for kind, name, uid in objects:
            try:
                await self.client.delete(kind, name, preconditions={"uid": uid})
            except (NotFound, Conflict):
                continue
            except Exception as exc:
                failure = failure or exc
                continue
            log.info("removed %s %s", kind.rpartition("/")[2], name)
        if failure is not None:
            raise failure


def _admission_configurations(
    server: WebhookServer, base_url: str, ca_bundle: bytes, name_prefix: str
) -> list[dict[str, Any]]:
    unmarked = [
        entry.path for entry in server.webhooks if entry.spec is None and not entry.conversion
    ]
    if unmarked:
        log.warning(
            "not registered (no @admission_webhook marker says what they admit): %s",
            ", ".join(unmarked),
        )
    return webhook_configurations(
        server.specs(),
        base_url=base_url,
        ca_bundle=ca_bundle,
        mutating_name=name_prefix + MUTATING_CONFIGURATION,
        validating_name=name_prefix + VALIDATING_CONFIGURATION,
    )


async def register_webhook_server(
    client: Client,
    server: WebhookServer,
    *,
    ca_bundle: bytes,
    name_prefix: str = "",
    field_manager: str = FIELD_MANAGER,
    timeout: float = 10.0,
) -> WebhookRegistration:
    """Register with the cluster everything `server` serves, once it serves.

    Admission: the Mutating/ValidatingWebhookConfiguration of its registered webhooks (named
    `<name_prefix>mutating-webhook-configuration` and `...validating...`), each webhook's
    clientConfig the server's URL plus its path and `ca_bundle`, applied with server-side
    apply (forced: the registration of an earlier run is taken over).

    Conversion: each installed CRD whose kinds the server converts gets
    `spec.conversion.webhook.clientConfig` with the same URL (plus the conversion path) and
    `ca_bundle`, as envtest does for convertible types; `remove()` restores what it had.
    """
    await wait_until_serving(server, timeout)
    documents = _admission_configurations(server, server.url, ca_bundle, name_prefix)
    registration = WebhookRegistration(client, [], server.url)
    try:
        for document in documents:
            stored = await client.apply(document, field_manager=field_manager, force=True)
            kind = f"{document['apiVersion']}/{document['kind']}"
            name = document["metadata"]["name"]
            registration.objects.append((kind, name, stored["metadata"]["uid"]))
            log.info("registered %s %s at %s", document["kind"], name, server.url)
        registration.conversion = await register_conversion_webhooks(
            client, server, ca_bundle=ca_bundle, field_manager=field_manager
        )
    except BaseException:
        # The error that stopped the registration is the one to report.
        with contextlib.suppress(Exception):
            await asyncio.shield(registration.remove())
        raise
    return registration


@contextlib.asynccontextmanager
async def registered_while_serving(
    client: Client,
    server: WebhookServer,
    *,
    ca_bundle: bytes,
    name_prefix: str = "",
    field_manager: str = FIELD_MANAGER,
    timeout: float = 10.0,
) -> AsyncIterator[WebhookRegistration]:
    """register_webhook_server for the block, removed after it: what a manager's
    `add_webhook_registration` takes, entered once its webhook server has started and
    before its caches list anything, left once they have stopped."""
    registration = await register_webhook_server(
        client,
        server,
        ca_bundle=ca_bundle,
        name_prefix=name_prefix,
        field_manager=field_manager,
        timeout=timeout,
    )
    try:
        yield registration
    finally:
        await registration.remove()
