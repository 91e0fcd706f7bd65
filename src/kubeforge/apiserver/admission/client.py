"""Posting AdmissionReviews to webhooks over HTTPS.

One aiohttp session per server keeps connections to webhooks alive between calls. TLS is
always verified: against the configuration's `caBundle`, else the system's roots; the name
checked is the URL's host, or `<service>.<namespace>.svc` for a service reference (as
k8s.io/apiserver pkg/util/webhook/client.go does). A call that fails is described the way
Go's HTTP client and client-go describe it (`Post "<url>": dial tcp ...: connect: connection
refused`, `context deadline exceeded`, ...), since that text ends up in kube-apiserver's error.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "CallFailed",
    "ClientConfig",
    "Reply",
    "ServiceResolver",
    "WebhookClient",
]

# (namespace, name, port) -> (host, port) to connect to; raises LookupError with the reason.
ServiceResolver = Callable[[str, str, int], tuple[str, int]]

# Larger answers than this are refused (a patch rarely comes near it).
MAX_RESPONSE_BYTES = 16 * 1024 * 1024

_USER_AGENT = "kube-apiserver-admission"


class CallFailed(Exception):
    """The webhook could not be called, or answered something unusable (the reason is in
    Go's words); failurePolicy decides what happens next."""


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """A webhook's clientConfig: exactly one of `url` or a service reference."""

    url: str | None
    service: tuple[str, str, str, int] | None  # namespace, name, path, port
    ca_bundle: bytes | None
    ca_error: str | None

    @classmethod
    def parse(cls, raw: Any) -> ClientConfig:
        raw = raw if isinstance(raw, dict) else {}
        ca: bytes | None = None
        ca_error = None
        bundle = raw.get("caBundle")
        if bundle:
            try:
                ca = base64.b64decode(str(bundle), validate=True)
            except (binascii.Error, ValueError):
                ca_error = "unable to load root certificates: unable to parse bytes as PEM block"
        service = raw.get("service")
        if isinstance(service, dict):
            port = service.get("port")
            return cls(
                None,
                (
                    str(service.get("namespace") or ""),
                    str(service.get("name") or ""),
                    str(service.get("path") or ""),
                    port if isinstance(port, int) else 443,
                ),
                ca,
                ca_error,
            )
        url = raw.get("url")
        return cls(str(url) if url is not None else None, None, ca, ca_error)


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    content_type: str | None
    body: bytes


class WebhookClient:
    """Calls webhooks; `close()` when the server stops."""

    def __init__(self, resolve_service: ServiceResolver) -> None:
        self.resolve_service = resolve_service
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[bytes | None, ssl.SSLContext] = {}

    def _context(self, config: ClientConfig) -> ssl.SSLContext:
        if config.ca_error is not None:
            raise CallFailed(f"could not get REST client: {config.ca_error}")
        key = config.ca_bundle
        context = self._contexts.get(key)
        if context is None:
            try:
                if key is None:
                    context = ssl.create_default_context()
                else:
                    context = ssl.create_default_context(cadata=key.decode("ascii", "replace"))
            except (ssl.SSLError, ValueError):
                raise CallFailed(
                    "could not get REST client: unable to load root certificates: unable to "
                    "parse bytes as PEM block"
                ) from None
            self._contexts[key] = context
        return context

    def _session_now(self) -> aiohttp.ClientSession:
        # Imported on the first call: a server without webhooks never loads the client.
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=30),
                auto_decompress=True,
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, config: ClientConfig, body: bytes, timeout: int) -> Reply:
        """POST `body` with kube-apiserver's `?timeout=` parameter; the reply whatever its
        status, or CallFailed for a call that did not complete."""
        import aiohttp

        context = self._context(config)
        suffix = f"?timeout={timeout}s"
        server_hostname: str | None = None
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, */*",
            "User-Agent": _USER_AGENT,
        }
        if config.service is not None:
            namespace, name, path, port = config.service
            dns_name = f"{name}.{namespace}.svc"
            shown = f"https://{dns_name}:{port}{path}{suffix}"
            try:
                host, target_port = self.resolve_service(namespace, name, port)
            except LookupError as exc:
                raise CallFailed(f'failed to call webhook: Post "{shown}": {exc}') from None
            connect = f"https://{_host(host)}:{target_port}{path or '/'}{suffix}"
            server_hostname = dns_name
            headers["Host"] = dns_name if port == 443 else f"{dns_name}:{port}"
        else:
            if config.url is None:
                raise CallFailed("could not get REST client: neither url nor service is set")
            shown = connect = config.url + suffix
            parts = urlsplit(config.url)
            host, target_port = parts.hostname or "", parts.port or 443
        try:
            async with asyncio.timeout(timeout):
                async with self._session_now().post(
                    connect,
                    data=body,
                    headers=headers,
                    ssl=context,
                    server_hostname=server_hostname,
                    allow_redirects=False,
                ) as response:
                    data = bytearray()
                    async for chunk in response.content.iter_chunked(65536):
                        data += chunk
                        if len(data) > MAX_RESPONSE_BYTES:
                            raise CallFailed(
                                f"failed to call webhook: the response is larger than "
                                f"{MAX_RESPONSE_BYTES} bytes"
                            )
                    return Reply(response.status, response.headers.get("Content-Type"), bytes(data))
        except CallFailed:
            raise
        except TimeoutError:
            reason = "context deadline exceeded"
        except aiohttp.ClientError as exc:
            reason = _describe(exc, host, target_port)
        except OSError as exc:
            reason = str(exc)
        raise CallFailed(f'failed to call webhook: Post "{shown}": {reason}')


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


_UNKNOWN_AUTHORITY = {2, 18, 19, 20, 21}  # OpenSSL verify codes for an untrusted issuer
_NOT_VALID_NOW = {9, 10}


def _describe(exc: aiohttp.ClientError, host: str, port: int) -> str:
    """A client error as Go's net/http and crypto/tls word it."""
    import aiohttp

    address = f"{_host(host)}:{port}"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        cert_error = exc.certificate_error
        code = getattr(cert_error, "verify_code", None)
        if code in _UNKNOWN_AUTHORITY:
            return (
                "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            )
        if code in _NOT_VALID_NOW:
            return (
                "tls: failed to verify certificate: x509: certificate has expired or is not "
                "yet valid"
            )
        detail = getattr(cert_error, "verify_message", None) or str(cert_error)
        return f"tls: failed to verify certificate: x509: {detail}"
    if isinstance(exc, aiohttp.ClientConnectorSSLError):
        return f"remote error: tls: {exc.os_error}"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"dial tcp: lookup {host}: no such host"
    if isinstance(exc, aiohttp.ClientConnectorError):
        os_error = exc.os_error
        if isinstance(os_error, ConnectionRefusedError) or os_error.errno == errno.ECONNREFUSED:
            return f"dial tcp {address}: connect: connection refused"
        text = os_error.strerror or str(os_error)
        return f"dial tcp {address}: connect: {text.lower()}"
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return "EOF"
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"net/http: HTTP/1.x transport connection broken: {exc.message}"
    return str(exc) or type(exc).__name__
