"""The webhook server: HTTPS, one path per webhook, AdmissionReviews and ConversionReviews.

    server = WebhookServer(host="127.0.0.1", port=9443, cert_dir=Path("certs"))
    server.register("/mutate--v1-pod", inject_sidecar)
    server.register_conversion(v1.At)   # /convert, for At's hub and spokes
    await server.start()            # the manager does this; stop() ends it

controller-runtime's webhook.Server in Python: port 9443, certificates `tls.crt` and `tls.key`
in `<tmp>/k8s-webhook-server/serving-certs` by default and reloaded when they change, each
webhook instrumented with controller-runtime's metrics under its path. Every request to a
registered path is answered 200 with an AdmissionReview, as controller-runtime answers:
a malformed review (empty or oversized body, another content type, bad JSON, not an
AdmissionReview) gets a response with `allowed: false` and a Status of code 400 (413 for the
size) saying what is wrong, and an exception in a handler one of code 500. The conversion
webhook answers as _webhook/conversion.py describes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from kubeforge._api.conversion import kind_versions
from kubeforge._api.meta import ResourceInfo, WebhookConversion
from kubeforge._api.webhooks import WebhookSpec, check_path, marker_for, markers_of
from kubeforge._webhook.admission import (
    AdmissionHandler,
    HandlerFunction,
    as_handler,
    call,
    handling,
    response_for_error,
)
from kubeforge._webhook.certwatcher import CertWatcher
from kubeforge._webhook.conversion import MAX_CONVERSION_REVIEW_BYTES, ConversionWebhook
from kubeforge._webhook.metrics import NoMetrics, WebhookMetrics
from kubeforge._webhook.review import (
    MAX_REVIEW_BYTES,
    AdmissionResponse,
    ReviewError,
    decode_review,
    encode_review,
)

__all__ = ["DEFAULT_CERT_DIR", "DEFAULT_PORT", "RegisteredWebhook", "WebhookServer"]

log = logging.getLogger("kubeforge.webhook")

DEFAULT_PORT = 9443
# controller-runtime's os.TempDir(): $TMPDIR, else /tmp. tempfile.gettempdir() would probe for
# a writable directory and fail on a read-only root filesystem, where the manager's pod runs.
DEFAULT_CERT_DIR = Path(os.environ.get("TMPDIR") or "/tmp") / "k8s-webhook-server" / "serving-certs"
# A review that cannot be read is answered in v1. controller-runtime leaves apiVersion and kind
# out of that answer; naming them makes it a well-formed review, and an API server fails the
# call either way (it has no uid to match).
_ERROR_REVIEW_VERSION = "admission.k8s.io/v1"


Endpoint = Callable[[web.Request], Awaitable[tuple[int, bytes]]]


@dataclass(frozen=True)
class RegisteredWebhook:
    """A webhook the server serves: its path, handler, and, when known, the spec a
    Mutating/ValidatingWebhookConfiguration needs to call it. The conversion webhook has
    `conversion=True` and a ConversionWebhook as its handler (its `kinds` say which)."""

    path: str
    handler: AdmissionHandler | HandlerFunction | ConversionWebhook
    mutating: bool | None = None
    kind: Any = None
    spec: WebhookSpec | None = None
    conversion: bool = False


def _site(runner: web.AppRunner, host: str, port: int, context: ssl.SSLContext) -> web.BaseSite:
    """Where the server listens. Every interface (an empty host) is one socket for IPv4 and
    IPv6, as Go's listener on ":port" is: a socket per address family would each get a port
    of its own when the port is 0, and the server would have no one port to be called at."""
    if host:
        return web.TCPSite(runner, host, port, ssl_context=context)
    if socket.has_dualstack_ipv6():
        sock = socket.create_server(
            ("::", port), family=socket.AF_INET6, dualstack_ipv6=True, backlog=128
        )
    else:
        sock = socket.create_server(("0.0.0.0", port), backlog=128)
    return web.SockSite(runner, sock, ssl_context=context)


def _connect_host(host: str) -> str:
    """An address that reaches a server listening on `host` from this machine."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


class WebhookServer:
    """Serves admission webhooks over HTTPS. `host`, `port` (0: any free port) and the
    certificate options may be changed until the server starts."""

    def __init__(
        self,
        *,
        host: str = "",
        port: int = DEFAULT_PORT,
        cert_dir: str | os.PathLike[str] | None = None,
        cert_name: str = "tls.crt",
        key_name: str = "tls.key",
        client_ca_name: str | None = None,
        cert_check_interval: float = 1.0,
        metrics: WebhookMetrics | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.cert_dir = Path(cert_dir) if cert_dir is not None else DEFAULT_CERT_DIR
        self.cert_name = cert_name
        self.key_name = key_name
        self.client_ca_name = client_ca_name
        self.cert_check_interval = cert_check_interval
        self.metrics: WebhookMetrics = metrics or NoMetrics()
        self._hooks: dict[str, tuple[RegisteredWebhook, Endpoint]] = {}
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()
        self._watch: asyncio.Task[None] | None = None
        self.certificates: CertWatcher | None = None
        self.bound: tuple[str, int] | None = None
        self.serving = asyncio.Event()

    def use_metrics(self, metrics: WebhookMetrics) -> None:
        """Report to `metrics` from now on (webhooks already registered are published)."""
        self.metrics = metrics
        for path in self._hooks:
            metrics.registered(path)

    # registration ------------------------------------------------------------------------

    def register(
        self,
        path: str,
        handler: AdmissionHandler | HandlerFunction,
        *,
        mutating: bool | None = None,
        kind: Any = None,
        spec: WebhookSpec | None = None,
    ) -> RegisteredWebhook:
        """Serve `handler` at `path`.

        The webhook's spec (what a Mutating/ValidatingWebhookConfiguration needs) is `spec`,
        or else the handler's `@admission_webhook` marker (on the function or the handler's
        class) completed with `mutating` and `kind`; without either, no configuration can be
        generated for it.
        """
        check_path(path)
        if path in self._hooks:
            raise ValueError(f"a webhook is already registered at {path}")
        answer = as_handler(handler)
        if spec is None:
            spec = _spec_from_marker(path, handler, mutating, kind)
        elif spec.path not in (None, path):
            raise ValueError(f"{path}: the spec names another path, {spec.path}")
        entry = RegisteredWebhook(
            path=path,
            handler=handler,
            mutating=spec.mutating if spec is not None else mutating,
            kind=kind,
            spec=spec,
        )

        async def admit(request: web.Request) -> tuple[int, bytes]:
            return 200, await self._answer(request, answer, path)

        self._hooks[path] = (entry, admit)
        self.metrics.registered(path)
        log.debug("registered webhook %s", path)
        return entry

    def register_conversion(self, kind: type) -> RegisteredWebhook:
        """Convert between the versions of `kind` (its hub or any of its spokes) at the
        kind's conversion path (`/convert` unless its `conversion=WebhookConversion(path=)`
        says otherwise). One conversion webhook serves every kind registered at a path.

        ValueError when the kind has no hub and spokes, or the path serves an admission
        webhook."""
        versions = kind_versions(kind)
        name = getattr(kind, "__qualname__", repr(kind))
        if versions is None:
            raise ValueError(
                f"{name}: its kind has no versions to convert between (a kubeforge.Hub and "
                "classes that are kubeforge.Convertible to it)"
            )
        path = _conversion_path(list(versions.classes.values()))
        found = self._hooks.get(path)
        if found is None:
            webhook = ConversionWebhook(on_panic=lambda: self.metrics.conversion_panic())
            entry = RegisteredWebhook(path=path, handler=webhook, conversion=True)

            async def convert(request: web.Request) -> tuple[int, bytes]:
                try:
                    body = await _read_body(request, MAX_CONVERSION_REVIEW_BYTES)
                except ReviewError as exc:
                    return webhook.refusal(exc)
                return await webhook.answer(body)

            self._hooks[path] = (entry, convert)
            self.metrics.registered(path)
            log.debug("registered the conversion webhook at %s", path)
        else:
            entry = found[0]
            if not isinstance(entry.handler, ConversionWebhook):
                raise ValueError(f"{path} already serves an admission webhook")
            webhook = entry.handler
        webhook.add(versions)
        return entry

    @property
    def webhooks(self) -> list[RegisteredWebhook]:
        """The registered webhooks, in registration order."""
        return [entry for entry, _ in self._hooks.values()]

    def specs(self) -> list[WebhookSpec]:
        """The specs of the registered webhooks that have one (what configurations need)."""
        return [entry.spec for entry in self.webhooks if entry.spec is not None]

    # serving ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """`https://host:port` of the running server, as reached from this machine."""
        if self.bound is None:
            raise RuntimeError("the webhook server is not running")
        host, port = self.bound
        return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"

    async def start(self) -> None:
        """Load the certificate and listen (CertificateError, OSError when it cannot)."""
        if self._runner is not None:
            raise RuntimeError("the webhook server is already running")
        self.certificates = CertWatcher(
            self.cert_dir / self.cert_name,
            self.cert_dir / self.key_name,
            client_ca_path=None
            if self.client_ca_name is None
            else self.cert_dir / self.client_ca_name,
            interval=self.cert_check_interval,
            on_read=self.metrics.certificate_read,
        )
        context = self.certificates.server_context()
        app = web.Application(client_max_size=MAX_REVIEW_BYTES + 1)
        app.router.add_route("*", "/{tail:.*}", self._serve)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = _site(runner, self.host, self.port, context)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        port = sockets[0].getsockname()[1] if sockets else self.port
        self.bound = (_connect_host(self.host), port)
        self._stopping = asyncio.Event()
        self._watch = asyncio.create_task(self.certificates.watch(self._stopping))
        self.serving.set()
        log.info("serving webhooks on %s: %s", self.url, ", ".join(self._hooks) or "none")

    async def stop(self) -> None:
        """Stop listening; requests being answered finish first."""
        self.serving.clear()
        self._stopping.set()
        if self._watch is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
            self._watch = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def run(self, stopping: asyncio.Event) -> None:
        """start(), then stop() once `stopping` is set (a manager runnable)."""
        await self.start()
        try:
            await stopping.wait()
        finally:
            await self.stop()

    async def ready(self) -> bool:
        """A readiness check: the server is started and completes a TLS handshake (as
        controller-runtime's StartedChecker does)."""
        if not self.serving.is_set() or self.bound is None:
            return False
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        host, port = self.bound
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=context), 10.0
            )
        except (OSError, TimeoutError, ssl.SSLError):
            return False
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
        return True

    # one request ------------------------------------------------------------------------

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        found = self._hooks.get(request.path)
        if found is None:
            return web.Response(status=404, text="404 page not found\n")
        entry, endpoint = found
        path = entry.path
        self.metrics.request_started(path)
        started = time.perf_counter()  # latency is the machine's time on any clock
        status = 500
        try:
            status, body = await endpoint(request)
            response = web.Response(status=status, body=body, content_type="application/json")
            if not request.content.at_eof():
                # A body refused unread (too large): send the answer, then close the
                # connection (its buffered answer still goes out) instead of lingering to
                # read the rest, which would hold a stop for up to ten seconds.
                await response.prepare(request)
                await response.write_eof()
                request.protocol.force_close()
            return response
        finally:
            self.metrics.request_finished(path, status, time.perf_counter() - started)

    async def _answer(self, request: web.Request, answer: Callable[..., Any], path: str) -> bytes:
        try:
            body = await _read_body(request, MAX_REVIEW_BYTES)
            api_version, review = decode_review(body, request.headers.get("Content-Type"))
        except ReviewError as exc:
            log.info("%s: bad request: %s", path, exc.message)
            error = AdmissionResponse.error(exc.code, exc.message)
            return encode_review(_ERROR_REVIEW_VERSION, error.complete(""))
        with handling(review):
            try:
                response = await call(answer, review)
                if not isinstance(response, AdmissionResponse):
                    raise TypeError(
                        f"the handler returned {type(response).__name__}, not an AdmissionResponse"
                    )
            except Exception as exc:
                refusal = response_for_error(exc, review)
                if refusal is None:
                    self.metrics.panic()
                    log.exception("%s: the handler failed on request %s", path, review.uid)
                    refusal = AdmissionResponse.error(500, f"{type(exc).__name__}: {exc}")
                response = refusal
        return encode_review(api_version, response.complete(review.uid))


def _spec_from_marker(
    path: str, handler: Any, mutating: bool | None, kind: Any
) -> WebhookSpec | None:
    markers = markers_of(handler)
    if not markers:
        return None
    if mutating is None and len(markers) > 1:
        raise ValueError(f"{path}: the handler has several webhook markers; say mutating=")
    marker = markers[0] if mutating is None else marker_for(handler, mutating)
    if marker is None:
        return None
    try:
        return marker.spec(kind=kind, mutating=mutating, path=path)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None


def _conversion_path(classes: list[type]) -> str:
    """The path a kind's CRD names for its conversion webhook (_api/crd.py writes the same)."""
    for cls in classes:
        info = getattr(cls, "__kubeforge__", None)
        if isinstance(info, ResourceInfo) and info.conversion is not None:
            return info.conversion.path
    return WebhookConversion().path


async def _read_body(request: web.Request, limit: int) -> bytes:
    """The request body, refusing more than `limit` bytes (ReviewError 413)."""
    too_large = ReviewError(413, f"request entity is too large; limit is {limit} bytes")
    length = request.content_length
    if length is not None and length > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)
