"""Posting reviews (AdmissionReviews, ConversionReviews) to webhooks over HTTPS.

One aiohttp session per server keeps connections to webhooks alive between calls, for
admission and conversion webhooks alike. TLS is always verified: against the
configuration's `caBundle`, else the system's roots; the name checked is the URL's host, or
`<service>.<namespace>.svc` for a service reference (as k8s.io/apiserver
pkg/util/webhook/client.go does). A call that fails is described the way Go's HTTP client and
client-go describe it (`Post "<url>": dial tcp ...: connect: connection refused`, `context
deadline exceeded`, ...), since that text ends up in kube-apiserver's error; `decode_reply`
and `reply_error` read an answer as client-go's REST client reads it (rest/request.go:
transformResponse, Result.Into).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import json
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson
import yaml

from kubeforge.clock import activity

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "CallFailed",
    "ClientConfig",
    "Reply",
    "ServiceResolver",
    "WebhookClient",
    "decode_reply",
    "reply_error",
]

# (namespace, name, port) -> (host, port) to connect to; raises LookupError with the reason.
ServiceResolver = Callable[[str, str, int], tuple[str, int]]

# Larger answers than this are refused (a patch rarely comes near it).
MAX_RESPONSE_BYTES = 16 * 1024 * 1024

_USER_AGENT = "kube-apiserver-admission"


class CallFailed(Exception):
    """The webhook could not be called, or answered something unusable (the reason is in
    Go's words); for admission, failurePolicy decides what happens next.

    The message is what admission reports; `detail` is the cause alone, without the
    "failed to call webhook: " admission puts in front (what a conversion error quotes)."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = message if detail is None else detail

    @classmethod
    def calling(cls, detail: str) -> CallFailed:
        """A call that failed on the way, as admission words it."""
        return cls(f"failed to call webhook: {detail}", detail)


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
                raise CallFailed.calling(f'Post "{shown}": {exc}') from None
            connect = f"https://{_host(host)}:{target_port}{path or '/'}{suffix}"
            server_hostname = dns_name
            headers["Host"] = dns_name if port == 443 else f"{dns_name}:{port}"
        else:
            if config.url is None:
                raise CallFailed("could not get REST client: neither url nor service is set")
            shown = connect = config.url + suffix
            parts = urlsplit(config.url)
            host, target_port = parts.hostname or "", parts.port or 443
        # The webhook's timeout is the machine's time (an I/O deadline); the call is counted as
        # in flight meanwhile, for a virtual clock to wait for.
        activity.requests += 1
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
                            raise CallFailed.calling(
                                f"the response is larger than {MAX_RESPONSE_BYTES} bytes"
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
        finally:
            activity.requests -= 1
        raise CallFailed.calling(f'Post "{shown}": {reason}')


_GENERIC = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: (
        "the server was unable to return a response in the time allotted, but may still be "
        "processing the request"
    ),
}
_JSON_TYPES = ("application/json",)
_YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")


def _media_type(content_type: str | None) -> str:
    return (content_type or "application/json").split(";")[0].strip().lower()


def _go_quote(text: str) -> str:
    """Go's %q: a double-quoted string with Go escapes."""
    return json.dumps(text, ensure_ascii=False)


def reply_error(reply: Reply) -> str:
    """What client-go makes of a non-2xx answer: the Status it carries, else a generic
    message by status code (apimachinery errors.NewGenericServerResponse)."""
    media = _media_type(reply.content_type)
    if media in _JSON_TYPES and reply.body:
        try:
            status = orjson.loads(reply.body)
        except orjson.JSONDecodeError:
            status = None
        if (
            isinstance(status, dict)
            and status.get("kind") == "Status"
            and status.get("status") == "Failure"
        ):
            return str(status.get("message") or "")
    code = reply.status
    textual = reply.content_type is None or media.startswith("text/")
    server_message = reply.body[:1024].decode("utf-8", "replace").strip() if textual else "unknown"
    if code == 403:
        return server_message
    if code in _GENERIC:
        return _GENERIC[code]
    if code >= 500:
        return (
            f"an error on the server ({_go_quote(server_message)}) has prevented the request "
            "from succeeding"
        )
    return f"the server responded with the status code {code} but did not return more information"


def _json_error(body: bytes) -> str:
    text = body.decode("utf-8", "replace").lstrip()
    if text and text[0] not in '{["-0123456789tfn':
        return f"invalid character {_go_char(text[0])} looking for beginning of value"
    return "unexpected end of JSON input"


def _go_char(char: str) -> str:
    return "'\\''" if char == "'" else f"'{char}'"


def decode_reply(reply: Reply) -> Any:
    """The JSON or YAML document a 2xx answer carries (CallFailed when there is none)."""
    media = _media_type(reply.content_type)
    if media not in _JSON_TYPES and media not in _YAML_TYPES:
        raise CallFailed.calling(f"serializer for {reply.content_type} doesn't exist")
    if not reply.body:
        raise CallFailed.calling(
            f"0-length response with status code: {reply.status} and "
            f"content type: {reply.content_type or 'application/json'}"
        )
    try:
        if media in _YAML_TYPES:
            return yaml.safe_load(reply.body)
        return orjson.loads(reply.body)
    except (orjson.JSONDecodeError, yaml.YAMLError):
        raise CallFailed.calling(
            "couldn't get version/kind; json parse error: " + _json_error(reply.body)
        ) from None


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
