"""The serving certificate, reloaded when its files change (controller-runtime's certwatcher).

Certificates are rotated by replacing `tls.crt` and `tls.key` (cert-manager updates the
Secret, the kubelet swaps the mounted files). The watcher reads both files every `interval`
seconds and, when their content changed, builds a fresh SSL context from them; the listening
context's SNI callback, which runs during every handshake, hands each new connection the
newest context. Connections already open keep the certificate they started with, and no
restart is needed. A pair that does not load (say, the certificate is written and the key not
yet) leaves the previous certificate in use until the next read succeeds.

Polling the content rather than watching for file events (controller-runtime uses fsnotify
plus a 10 s poll) needs no extra dependency, sees Secret volume symlink swaps the same way as
in-place writes, and costs two small reads a second.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from pathlib import Path

__all__ = ["CertWatcher", "CertificateError"]

log = logging.getLogger("kubeforge.webhook.certwatcher")


class CertificateError(Exception):
    """The serving certificate or key cannot be read or do not belong together."""


class CertWatcher:
    """Holds the current serving certificate of `cert_path` and `key_path` (PEM)."""

    def __init__(
        self,
        cert_path: str | Path,
        key_path: str | Path,
        *,
        client_ca_path: str | Path | None = None,
        interval: float = 1.0,
        on_read: Callable[[bool], None] | None = None,
    ) -> None:
        self.cert_path = Path(cert_path)
        self.key_path = Path(key_path)
        self.client_ca_path = None if client_ca_path is None else Path(client_ca_path)
        self.interval = interval
        self._on_read = on_read or (lambda ok: None)
        self._pem: tuple[bytes, bytes] | None = None
        self._context: ssl.SSLContext | None = None
        self._listening: ssl.SSLContext | None = None

    @property
    def certificate_pem(self) -> bytes:
        """The PEM of the certificate in use (empty before the first read)."""
        return self._pem[0] if self._pem else b""

    def read(self) -> bool:
        """Load the files if their content changed: True when a new certificate is in use.

        CertificateError when they cannot be read or loaded; the previous one stays in use.
        """
        try:
            pem = (self.cert_path.read_bytes(), self.key_path.read_bytes())
        except OSError as exc:
            self._on_read(False)
            raise CertificateError(
                f"cannot read the serving certificate: {exc.strerror}: {exc.filename}"
            ) from None
        if pem == self._pem:
            self._on_read(True)
            return False
        try:
            context = self._new_context()
        except (OSError, ssl.SSLError) as exc:
            self._on_read(False)
            raise CertificateError(
                f"cannot load the serving certificate {self.cert_path} with key "
                f"{self.key_path}: {exc}"
            ) from None
        self._on_read(True)
        self._pem = pem
        self._context = context
        return True

    def _new_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # HTTP/1.1 only: the server speaks nothing else, as kubebuilder's scaffold turns
        # HTTP/2 off for its webhook server.
        context.set_alpn_protocols(["http/1.1"])
        context.load_cert_chain(self.cert_path, self.key_path)
        if self.client_ca_path is not None:
            context.load_verify_locations(cafile=self.client_ca_path)
            context.verify_mode = ssl.CERT_REQUIRED
        return context

    def server_context(self) -> ssl.SSLContext:
        """The context to listen with: each handshake gets the newest certificate."""
        if self._context is None:
            self.read()
        assert self._context is not None
        listening = self._listening = self._context

        def newest(
            connection: ssl.SSLObject | ssl.SSLSocket, _name: str | None, _ctx: object
        ) -> None:
            current = self._context
            if current is not None and current is not listening:
                connection.context = current

        listening.sni_callback = newest
        return listening

    async def watch(self, stopping: asyncio.Event) -> None:
        """Reload the files every `interval` seconds until `stopping` is set (the machine's
        time: this polls files, and a certificate's validity is OpenSSL's to judge, on the
        machine's clock)."""
        while not stopping.is_set():
            try:
                await asyncio.wait_for(stopping.wait(), self.interval)
            except TimeoutError:
                pass
            if stopping.is_set():
                return
            try:
                if self.read():
                    log.info("serving certificate %s reloaded", self.cert_path)
            except CertificateError as exc:
                log.error("%s; still serving the previous certificate", exc)
