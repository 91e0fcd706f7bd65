"""The API server's HTTP/1.1 server: asyncio protocols over llhttp, the parser of Node.js.

Request framing (request line, header fields, Content-Length, chunked bodies) is llhttp's,
through httptools, in its strict mode. On top of it this layer checks what HTTP/1.1 asks of
a server beyond framing (one valid Host, the protocol version, no Transfer-Encoding in
HTTP/1.0), enforces the size limits, timeouts and the connection cap, and does keep-alive and
pipelining, `Expect: 100-continue`, whole responses and chunked streams (watch, logs) with
flow control, and hands a connection a handler upgrades (`101 Switching Protocols`: exec,
attach, port-forward) to it as a byte stream. What a handler is given and answers with are
the messages of `messages.py`. It is several times cheaper than a general web framework's
request path (docs/decisions/0012-own-http-layer-for-the-api-server.md,
0013-llhttp-request-parsing.md).
"""

from __future__ import annotations

import asyncio
import logging
import re
import resource
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import httptools

from kubeforge._apiserver.http.inprocess import InProcessExchanges
from kubeforge._apiserver.http.messages import Headers, Request, Response, ResponseStream, Upgraded

__all__ = [
    "ConnectionLimits",
    "HTTPServer",
    "connection_cap",
    "raise_open_file_limit",
]

log = logging.getLogger("kubeforge.apiserver.http")

# Past this a refused body is not worth reading through: answer and close instead.
MAX_DISCARD_BYTES = 64 * 1024 * 1024
_MAX_QUEUED = 32  # pipelined requests waiting before reading pauses
# Connections over the cap still being answered (429, or a probe's answer); past this many,
# the oldest of them still waiting for its request is closed to make room for a new one, so
# that refusing cannot itself use up the file descriptors, nor idle connections keep a probe
# out.
_MAX_REFUSING = 64
# Descriptors kept free for everything else the process opens: probes served over the cap,
# the store (SQLite and its write-ahead log), the clients of the server's own loops and of a
# development cluster's controllers and nodes (watches included), outgoing webhook and
# conversion calls, the files of local containers.
_RESERVED_FDS = 256
# What kube-apiserver never throttles: its "probes" FlowSchema puts these paths on the
# exempt priority level (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go).
_PROBE_PATHS = (b"/healthz", b"/livez", b"/readyz")
# Per chunk, what its size line and CRLFs take (hex digits, CRLF, CRLF) when written plainly;
# a chunked body's framing may take this much per chunk, plus max_header_bytes in all for
# extensions and trailers.
_CHUNK_FRAMING = 24

_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
# What a client may send after an upgrade request before it is answered, kept for the
# protocol the connection is upgraded to; more ends the connection.
_MAX_EARLY_UPGRADE_BYTES = 1 << 20
# RFC 3986 host [ ":" port ]: reg-name and IP-literal characters, nothing else.
_HOST = re.compile(r"[A-Za-z0-9\-._~%!$&'()*+,;=:\[\]]*")

# What the parser is reading.
_IDLE = 0  # between requests
_HEAD = 1  # a request line and header fields
_BODY = 2  # a body (or a chunked body's trailer section)


@dataclass(frozen=True)
class ConnectionLimits:
    """How long a client may take and how many may be connected; defaults are kube-apiserver's.

    kube-apiserver's HTTP server (k8s.io/apiserver/pkg/server/secure_serving.go) sets
    ReadHeaderTimeout 32 s, IdleTimeout 90 s and MaxHeaderBytes 1 MiB, and a request,
    reading its body included, is bounded by --request-timeout (60 s). It has no cap on
    connections (it caps requests in flight instead, answering 429); here, where a request
    needs a connection of its own, connections are capped, and the excess answered 429.
    """

    header_timeout: float = 32.0  # from a request's first byte (or the connection) to its head
    body_timeout: float = 60.0  # from a request's head to the end of its body
    idle_timeout: float = 90.0  # a kept-alive connection waiting for its next request
    max_header_bytes: int = 1 << 20  # request line and header fields
    max_connections: int = 1024  # lowered to fit the open-file limit (connection_cap)

    def __post_init__(self) -> None:
        for name in ("header_timeout", "body_timeout", "idle_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a positive number of seconds")
        if self.max_header_bytes < 1024:
            raise ValueError("max_header_bytes must be at least 1024")
        if self.max_connections < 1:
            raise ValueError("max_connections must be at least 1")


def raise_open_file_limit() -> int:
    """Raise the process's soft RLIMIT_NOFILE to its hard limit, as Go's runtime does for every
    program since Go 1.19 (os/rlimit.go, later syscall/rlimit.go): the soft limit (often 1024)
    is kept low for programs that use select(), which this one does not. Returns the soft
    limit now in force (RLIM_INFINITY when unlimited); a limit that cannot be raised is left
    as it is."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard or soft == resource.RLIM_INFINITY:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (OSError, ValueError):
        # An unlimited hard limit may exceed what the kernel allows (macOS's OPEN_MAX).
        log.debug("the open-file limit stays at %d", soft)
        return soft
    return hard


def connection_cap(requested: int, open_files: int | None = None) -> int:
    """The connection cap that fits the process's open-file limit (RLIMIT_NOFILE).

    Running out of descriptors would stop the server accepting anyone, probes included, so
    the cap keeps room for the connections being refused and for everything else.
    """
    if open_files is None:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return requested
        open_files = soft
    room = max(1, open_files - _RESERVED_FDS - _MAX_REFUSING)
    return min(requested, room)


# A handler answers at once with a Response, or returns an awaitable for the answers that
# must wait (streams, upgraded connections); the connection runs those in a task.
Handler = Callable[[Request], "Response | Awaitable[Response | ResponseStream | Upgraded]"]


class HTTPServer:
    """Serves `handler` on one address, over TLS when given an SSL context."""

    def __init__(
        self,
        handler: Handler,
        *,
        max_body_bytes: int,
        error: Callable[[int, str], Response],
        limits: ConnectionLimits | None = None,
        shutdown_timeout: float = 5.0,
    ) -> None:
        self.handler = handler
        self.max_body_bytes = max_body_bytes
        self.error = error  # builds the answer to a request refused while parsing
        self.limits = limits or ConnectionLimits()
        self.max_connections = self.limits.max_connections
        self.shutdown_timeout = shutdown_timeout
        self.connections: set[_Connection] = set()
        # Over the cap, being answered (429, or a probe's answer); oldest first.
        self.refusing: dict[_Connection, None] = {}
        self.refused_connections = 0  # turned away over the cap, since the start
        # Handlers of connections their clients closed, cancelled and not yet unwound.
        self.ending: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self._local: asyncio.Server | None = None
        # Exchanges of clients in this process (made when the server starts, in its context).
        self.in_process: InProcessExchanges | None = None
        self._valid_host = ""  # the last Host an in-process request had, found valid

    async def start(self, host: str, port: int, ssl_context: ssl.SSLContext | None) -> int:
        """Listen and return the port bound."""
        raise_open_file_limit()
        self.max_connections = connection_cap(self.limits.max_connections)
        if self.max_connections < self.limits.max_connections:
            log.warning(
                "serving at most %d connections, not %d: the open-file limit is too low",
                self.max_connections,
                self.limits.max_connections,
            )
        loop = asyncio.get_running_loop()
        # A TLS handshake gets as long as a head, as in Go's server.
        handshake = self.limits.header_timeout if ssl_context is not None else None
        self._server = await loop.create_server(
            lambda: _Connection(self),
            host,
            port,
            ssl=ssl_context,
            backlog=1024,
            ssl_handshake_timeout=handshake,
        )
        self.in_process = InProcessExchanges(self)
        return int(self._server.sockets[0].getsockname()[1])

    async def serve_unix(self, path: str) -> None:
        """Also serve plain HTTP on a Unix socket at `path` (a stale socket there is replaced):
        the same handler, limits and connection cap. Whoever may open the path may connect;
        requests still authenticate as over TCP."""
        loop = asyncio.get_running_loop()
        self._local = await loop.create_unix_server(lambda: _Connection(self), path, backlog=1024)

    async def stop(self) -> None:
        """Stop listening, let requests in progress finish (up to the timeout), then close.

        Connections closed gracefully finish sending what was written to them; only those
        whose requests outlast the timeout are cut off.
        """
        if self._server is None:
            return
        self._server.close()
        self._server = None
        if self._local is not None:
            self._local.close()
            self._local = None
        pending = self.in_process.pending if self.in_process is not None else set()
        for conn in [*self.connections, *self.refusing]:
            conn.close_when_idle()
        if any(conn.scheduled for conn in self.connections):
            await asyncio.sleep(0)  # requests already read get their answers
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.shutdown_timeout
        while busy := {c.task: c for c in self.connections if c.task is not None}:
            remaining = deadline - loop.time()
            if remaining <= 0:
                for task, conn in busy.items():
                    task.cancel()
                    conn.abort()
                await asyncio.wait(busy)
                break
            # A pipelined request behind one in progress may start a task of its own.
            await asyncio.wait(busy, timeout=remaining)
        if pending:
            # In-process exchanges still waiting (on a webhook, say) get the same time.
            _, late = await asyncio.wait(set(pending), timeout=max(deadline - loop.time(), 0.001))
            for late_task in late:
                late_task.cancel()
            if late:
                await asyncio.wait(late)
        if self.ending:
            # Stopped means no handler of this server runs any more, not even one unwinding
            # from its client's going.
            await asyncio.wait(set(self.ending), timeout=self.shutdown_timeout)

    @property
    def serving(self) -> bool:
        """Between start() and stop()."""
        return self._server is not None

    def crashed(self, request: Request, exc: Exception) -> Response:
        """The answer to a request whose handler failed."""
        log.error("%s %s failed", request.method, request.target, exc_info=exc)
        return self.error(500, f"{type(exc).__name__}: {exc}")

    def refusal(self, target: str, headers: Mapping[str, str], body_size: int) -> Response | None:
        """What a connection answers a request it reads with these parts before any handler
        sees it (too large, no valid Host), for a request that came without one."""
        limit = self.limits.max_header_bytes
        if len(target) + sum(len(k) + len(v) for k, v in headers.items()) > limit:
            # Counted as _Connection._head_size counts a head.
            size = len(target) + 20 + sum(len(k) + len(v) + 4 for k, v in headers.items())
            if size > limit:
                return self.error(400, "request headers too large")
        host = headers.get("host")
        if host is None:
            return self.error(400, "missing Host header")
        if host != self._valid_host:
            if not _HOST.fullmatch(host):
                return self.error(400, "invalid Host header")
            self._valid_host = host
        if body_size > self.max_body_bytes:
            return self.too_large()
        return None

    def too_large(self) -> Response:
        """The answer to a request whose body is over the limit."""
        return self.error(413, f"Request entity too large: limit is {self.max_body_bytes}")

    def make_room(self) -> bool:
        """Close the oldest connection over the cap still waiting for its request, for a new
        one to take its place; False when every one of them is being answered."""
        for conn in self.refusing:
            if conn.completed == 0 and not conn.queue and conn.task is None:
                del self.refusing[conn]
                conn.closing = True
                conn.abort()
                return True
        return False


def _is_probe(target: bytes) -> bool:
    """Whether a request target is a health probe (`/readyz`, `/livez?verbose`, ...)."""
    path = target.split(b"?", 1)[0].rstrip(b"/")
    return path in _PROBE_PATHS or path.startswith((b"/healthz/", b"/livez/", b"/readyz/"))


class _Connection(asyncio.Protocol):
    """One client connection: parses requests as bytes arrive, answers them in order.

    The parser calls the `on_*` methods; what they build is queued and answered from the
    loop's next turn.
    """

    def __init__(self, server: HTTPServer) -> None:
        self.server = server
        self.limits = server.limits
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        # The connection's TLS object (None without TLS), looked up once: asyncio makes the
        # connection once the handshake is done, so it is there from the start.
        self.tls: ssl.SSLObject | None = None
        self.task: asyncio.Task[None] | None = None
        self.queue: deque[Request | _Canned] = deque()
        self.parser = httptools.HttpRequestParser(self)
        self.phase = _IDLE
        self.refuse = False  # over the connection cap: the first request is answered 429
        self.closing = False
        self.lost = False
        self.paused_reading = False
        self.sent_continue = False
        self.streaming = False  # a ResponseStream has sent its head
        # An upgrade request was read (nothing after it is HTTP); `early` keeps what the
        # client sent after it, for the protocol the handler may switch to (`upgraded`).
        self.upgrade_pending = False
        self.upgrade_request: Request | None = None
        self.early = bytearray()
        self.upgraded: Upgraded | None = None
        self.input_paused = False
        self.scheduled = False  # _answer() is due in the loop's next turn
        self.drain: asyncio.Future[None] | None = None
        # The request being read.
        self.method = ""
        self.url = b""
        self.values: dict[str, str] = {}
        self.body: list[bytes] = []
        self.body_size = 0
        self.chunked = False
        self.chunks = 0
        self.keep_alive = True
        self.http10 = False
        self.expect_continue = False
        self.refused: Response | None = None  # a 413 already queued; the body is skipped
        # What the limits count: bytes of the head, of blank lines before it, and of a
        # chunked body's framing and trailers.
        self.head_bytes = 0
        self.blank = 0
        self.framing = 0
        self.read = 0  # size of the read being parsed
        self.completed = 0  # requests read
        self.valid_host = ""
        # One timer a connection, moved lazily: `deadline` says when the current wait ends.
        self.deadline: float | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.now = 0.0  # the loop's time when the input being parsed arrived

    # asyncio callbacks -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.tls = transport.get_extra_info("ssl_object")
        server = self.server
        if len(server.connections) >= server.max_connections:
            server.refused_connections += 1
            if len(server.refusing) >= _MAX_REFUSING and not server.make_room():
                self.closing = True
                transport.close()
                return
            self.refuse = True
            server.refusing[self] = None
        else:
            server.connections.add(self)
        # The first request's head is due within the head timeout, as in Go's server.
        self._expire_in(self.limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.upgraded is not None:
            self.upgraded.feed_eof()
        self.server.connections.discard(self)
        self.server.refusing.pop(self, None)
        self.queue.clear()
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.drain is not None and not self.drain.done():
            self.drain.set_result(None)  # writers waiting on it find the connection lost
        if self.task is not None and self.upgraded is None:
            # A streaming handler (a watch) ends when its client goes; a switched protocol
            # reads the end of its input and finishes by itself.
            self.task.cancel()
            self.server.ending.add(self.task)
            self.task.add_done_callback(self.server.ending.discard)

    def pause_writing(self) -> None:
        if self.drain is None or self.drain.done():
            self.drain = self.loop.create_future()

    def resume_writing(self) -> None:
        if self.drain is not None and not self.drain.done():
            self.drain.set_result(None)
        self.now = self.loop.time()
        self._schedule()

    def data_received(self, data: bytes) -> None:
        if self.upgraded is not None:
            self.upgraded.feed(data)
            return
        if self.closing:
            if self.upgrade_pending:
                self._keep_early(data)
            return
        self.now = self.loop.time()
        phase = self.phase
        if phase == _IDLE and data[0] in b"\r\n":
            data = self._skip_blank_lines(data)
        if data and not self.closing:
            self._parse(data, phase)
        if self.phase == _BODY:
            self._continue()
        self._schedule()
        if len(self.queue) >= _MAX_QUEUED and not self.paused_reading and not self.lost:
            self.paused_reading = True
            assert self.transport is not None
            self.transport.pause_reading()

    def _parse(self, data: bytes, phase: int) -> None:
        completed = self.completed
        body_before = self.body_size
        self.read = len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade as exc:
            # What follows is not HTTP/1.1: the handler switches the connection to another
            # protocol (Request.upgrade), or answers with an error and it is closed.
            self.closing = True
            self.upgrade_pending = True
            last = self.queue[-1] if self.queue else None
            self.upgrade_request = last if isinstance(last, Request) else None
            offset = exc.args[0] if exc.args and isinstance(exc.args[0], int) else len(data)
            self._keep_early(data[offset:])
        except httptools.HttpParserCallbackError as exc:
            self._parse_failed(exc.__context__)
        except httptools.HttpParserError as exc:
            self._fail(400, str(exc) or "malformed request")
        else:
            if self.phase != _IDLE and self.completed == completed:
                self._count(data, phase, body_before)

    def _count(self, data: bytes, phase: int, body_before: int) -> None:
        """Count toward the limits a read that went wholly to the request being read.

        The parser holds on to a partial header or trailer field until it ends, so the
        limits count bytes read, not fields parsed. A read that also completed earlier
        (pipelined) requests is not counted; the next ones are.
        """
        limits = self.limits
        if self.phase == _HEAD:
            self.head_bytes += len(data)
            if self.head_bytes > limits.max_header_bytes:
                self._fail(400, "request headers too large")
        elif self.chunked:  # the body's chunk sizes, extensions and trailers
            start = 0
            if phase != _BODY:  # the read began with the end of the head
                start = data.find(b"\r\n\r\n") + 4
                if start < 4:
                    return
            self.framing += max(0, len(data) - start - (self.body_size - body_before))
            if self.framing > limits.max_header_bytes + _CHUNK_FRAMING * self.chunks:
                self._fail(400, "chunked framing or trailers too large")

    def _keep_early(self, data: bytes) -> None:
        """Keep bytes sent after an upgrade request, before its answer."""
        self.early += data
        if len(self.early) > _MAX_EARLY_UPGRADE_BYTES:
            self.early.clear()
            self.upgrade_pending = False
            self.abort()

    def pause_input(self) -> None:
        if not self.input_paused and not self.lost and self.transport is not None:
            self.input_paused = True
            self.transport.pause_reading()

    def resume_input(self) -> None:
        if self.input_paused and not self.lost and self.transport is not None:
            self.input_paused = False
            self.transport.resume_reading()

    def _skip_blank_lines(self, data: bytes) -> bytes:
        """RFC 9112 2.2: one empty line before a request is tolerated, no more."""
        rest = data.lstrip(b"\r\n")
        self.blank += len(data) - len(rest)
        if self.blank > 2:
            self._fail(400, "malformed request line")
            return b""
        return rest

    # parser callbacks ---------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.phase = _HEAD
        self.url = b""
        self.values = {}
        self.body = []
        self.body_size = 0
        self.head_bytes = self.blank = 0
        self.deadline = self.now + self.limits.header_timeout
        if self.timer is None:
            self._arm()

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.phase != _HEAD:
            return  # a trailer field: nothing here uses them (RFC 9110 6.5.2)
        key = name.decode("latin-1").lower()  # the parser admits only token characters
        text = value.rstrip(b" \t").decode("latin-1")  # it drops the leading whitespace
        values = self.values
        if key in values:
            if key == "host":
                raise _BadRequest("more than one Host header")
            # Impersonation headers are lists whose items may hold commas (Go reads each
            # line as one value): a line feed, which no header value can contain, keeps
            # them apart. Every other repeated field is comma-joined (RFC 9110 5.3).
            joiner = "\n" if key.startswith("impersonate-") else ", "
            values[key] = f"{values[key]}{joiner}{text}"
        else:
            values[key] = text

    def on_headers_complete(self) -> None:
        if self.refuse and not _is_probe(self.url):
            self._refuse_connection()
            raise _Stop
        parser = self.parser
        limits = self.limits
        # The head is at most what was read for it; only when that is over the limit is
        # its size worth adding up.
        limit = limits.max_header_bytes
        if self.head_bytes + self.read > limit and self._head_size() > limit:
            raise _BadRequest("request headers too large")
        version = parser.get_http_version()
        if version != "1.1" and version != "1.0":
            raise _BadRequest(f"unsupported protocol HTTP/{version}")
        http10 = self.http10 = version == "1.0"
        values = self.values
        host = values.get("host")
        if host is None:
            if not http10:
                raise _BadRequest("missing Host header")  # RFC 9112 3.2
        elif host != self.valid_host:  # a client sends the same Host every time
            if not _HOST.fullmatch(host):
                raise _BadRequest("invalid Host header")
            self.valid_host = host
        length = 0
        coding = values.get("transfer-encoding")
        if coding is not None:
            if http10:
                # RFC 9112 6.1: the framing of such a message cannot be trusted.
                raise _BadRequest("Transfer-Encoding in an HTTP/1.0 request")
            if coding.lower() != "chunked":
                raise _BadRequest("unsupported Transfer-Encoding")
            self.chunked = True
            self.chunks = self.framing = 0
        elif "content-length" in values:
            length = int(values["content-length"])  # the parser has checked it
        self.method = parser.get_method().decode("ascii")
        # A probe over the cap is answered, and its connection closed after.
        self.keep_alive = parser.should_keep_alive() and not self.refuse
        if parser.should_upgrade():
            # The parser would leave a body unread here, which could then be taken for
            # a request of its own.
            if coding is not None or length:
                raise _BadRequest("a body with an Upgrade or CONNECT request")
            self.keep_alive = False
        # RFC 9110 10.1.1: an HTTP/1.0 client cannot ask to wait for 100 Continue.
        self.expect_continue = (
            "expect" in values and not http10 and values["expect"].lower() == "100-continue"
        )
        self.phase = _BODY
        self.deadline = self.now + limits.body_timeout
        if length > self.server.max_body_bytes:
            response = self._too_large()
            if length > MAX_DISCARD_BYTES or self.expect_continue:
                self._send_and_close(response)
                raise _Stop
            # Answered now, in its place among the answers; the body is skipped as it comes.
            self.refused = response
            self.queue.append(_Canned(response, self.keep_alive))

    def _head_size(self) -> int:
        """The request line and header fields, as sent but for optional whitespace."""
        size = len(self.url) + 20  # the method, the version, spaces and line ends
        return size + sum(len(name) + len(value) + 4 for name, value in self.values.items())

    def on_chunk_header(self) -> None:
        self.chunks += 1

    def on_body(self, data: bytes) -> None:
        size = self.body_size + len(data)
        self.body_size = size
        if self.refused is not None:
            return
        if size > self.server.max_body_bytes:  # a chunked body growing past the limit
            self._send_and_close(self._too_large())
            raise _Stop
        self.body.append(data)

    def on_message_complete(self) -> None:
        self.phase = _IDLE
        self.completed += 1
        self.chunked = self.sent_continue = False
        if self.refused is not None:
            self.refused = None
            return
        body = self.body
        self.queue.append(
            Request(
                self.method,
                self.url.decode("latin-1"),
                Headers(self.values),
                body[0] if len(body) == 1 else b"".join(body),
                self.keep_alive,
                self,
                self.http10,
            )
        )

    # parsing helpers ----------------------------------------------------------------------

    def _parse_failed(self, cause: BaseException | None) -> None:
        if isinstance(cause, _BadRequest):
            self._fail(400, str(cause))
        elif not isinstance(cause, _Stop):
            log.error("parsing a request failed", exc_info=cause)
            self._fail(500, "the request could not be read")

    def _continue(self) -> None:
        """Invite the body of a request that asked to be (`Expect: 100-continue`), once the
        answers to the requests before it are out, so responses stay in order."""
        if self.phase != _BODY or not self.expect_continue or self.sent_continue:
            return
        if self.queue or self.task is not None or self.scheduled or self.lost or self.closing:
            return
        self.sent_continue = True
        assert self.transport is not None
        self.transport.write(_CONTINUE)

    def _too_large(self) -> Response:
        return self.server.too_large()

    def _refuse_connection(self) -> None:
        """Answer a connection over the cap with 429, as kube-apiserver answers requests over
        its in-flight limit, so clients retry after a second."""
        response = self.server.error(429, "Too many requests, please try again later.")
        response.headers.append(("Retry-After", "1"))
        self._send_and_close(response)

    def _fail(self, status: int, message: str) -> None:
        self._send_and_close(self.server.error(status, message))

    def _send_and_close(self, response: Response) -> None:
        """Answer after the requests already queued, then close."""
        self.closing = True
        self.queue.append(_Canned(response, False))

    # timeouts -----------------------------------------------------------------------------
    # The event loop's time, the machine's: these bound a client's I/O, whatever clock the
    # cluster's objects live by (a virtual clock in tests leaves connections alone).

    def _expire_in(self, seconds: float) -> None:
        self.deadline = self.loop.time() + seconds
        if self.timer is None:
            self._arm()

    def _arm(self) -> None:
        assert self.deadline is not None
        self.timer = self.loop.call_at(self.deadline, self._expired)

    def _expired(self) -> None:
        """The timer rang: move it to the current deadline, or end the connection's wait."""
        self.timer = None
        deadline = self.deadline
        if deadline is None or self.lost or self.closing:
            return
        if self.loop.time() < deadline:
            self._arm()
            return
        self.deadline = None
        if self.queue or self.task is not None or self.scheduled:
            return  # the server is answering: the client's clock restarts after (_waiting)
        if self.phase == _IDLE:
            self.close_when_idle()
        else:
            what = "headers" if self.phase == _HEAD else "body"
            self._fail(408, f"timed out reading the request {what}")
            self._schedule()

    def _waiting(self) -> None:
        """Everything read has been answered: the client's turn, with its timeout.

        Its clock starts at `now`: when the last bytes came in, or when a long answer ended.
        """
        if self.phase == _IDLE:
            self.deadline = self.now + self.limits.idle_timeout
        elif self.deadline is None:
            limits = self.limits
            timeout = limits.header_timeout if self.phase == _HEAD else limits.body_timeout
            self.deadline = self.now + timeout
        if self.timer is None:
            self._arm()

    # answering ----------------------------------------------------------------------------

    def _schedule(self) -> None:
        if self.queue and self.task is None and not self.scheduled:
            # Answering from the event loop's next turn, rather than now, lets one turn
            # parse what every connection sent before any handler runs: the same code runs
            # back to back, which under load is measurably faster than interleaving.
            self.scheduled = True
            self.loop.call_soon(self._answer)

    def _answer(self) -> None:
        """Answer queued requests in order: at once while the handler answers at once, and
        from the first one it must wait for (a watch, a followed log) on in a task."""
        self.scheduled = False
        transport = self.transport
        assert transport is not None
        while self.queue and self.task is None and not self.lost:
            if self.drain is not None and not self.drain.done():
                break  # the client is not reading: resume_writing() carries on
            request = self.queue.popleft()
            result = self._call(request)
            if not isinstance(result, Response):
                self.task = self.loop.create_task(self._finish(request, result))
                break
            transport.write(result.encode(self._keep_alive(request)))
        if self.paused_reading and len(self.queue) < _MAX_QUEUED // 2 and not self.lost:
            self.paused_reading = False
            transport.resume_reading()
        if self.task is not None or self.queue or self.lost:
            return
        if self.closing:
            transport.close()
        else:
            self._continue()
            self._waiting()

    def _call(
        self, request: Request | _Canned
    ) -> Response | Awaitable[Response | ResponseStream | Upgraded]:
        if isinstance(request, _Canned):
            return request.response
        try:
            return self.server.handler(request)
        except Exception as exc:
            return self._crashed(request, exc)

    def _crashed(self, request: Request, exc: Exception) -> Response:
        return self.server.crashed(request, exc)

    def _keep_alive(self, request: Request | _Canned) -> bool:
        """Whether the connection stays open after this response; if not, nothing queued
        behind it is answered."""
        if request.keep_alive and not (self.closing and not self.queue):
            return True
        self.closing = True
        self.queue.clear()
        return False

    async def _finish(
        self, request: Request | _Canned, pending: Awaitable[Response | ResponseStream | Upgraded]
    ) -> None:
        transport = self.transport
        assert transport is not None and isinstance(request, Request)
        try:
            try:
                response = await pending
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.lost:
                    return
                response = self._crashed(request, exc)
            if self.lost:
                return
            keep_alive = self._keep_alive(request)
            if isinstance(response, Upgraded):
                self.closing = True  # the other protocol has ended: so does the connection
            elif isinstance(response, ResponseStream):
                await response.finish()
            elif self.streaming or self.upgraded is not None:
                # The handler failed after its stream began (or the connection switched
                # protocols): ending the connection is the only way left to tell the client.
                log.error("%s %s failed while streaming", request.method, request.target)
                self.closing = True
                self.queue.clear()
            else:
                transport.write(response.encode(keep_alive))
            self.streaming = False
            if self.drain is not None and not self.drain.done():
                await self.drain
        except (asyncio.CancelledError, ConnectionResetError):
            return  # the client went away, or the server is stopping
        finally:
            self.task = None
        if not self.lost:
            self.now = self.loop.time()
            self._answer()  # the requests that arrived meanwhile

    def send_now(self, data: bytes) -> None:
        if not self.lost and self.transport is not None:
            self.transport.write(data)

    async def send(self, data: bytes) -> None:
        if self.lost or self.transport is None:
            raise ConnectionResetError("the client closed the connection")
        self.transport.write(data)
        if self.drain is not None and not self.drain.done():
            await self.drain
            if self.lost:
                raise ConnectionResetError("the client closed the connection")

    def close_when_idle(self) -> None:
        """Close now if nothing is being answered, else after the answers queued so far."""
        self.closing = True
        if self.upgraded is not None and self.transport is not None:
            # A switched protocol has no idle point to wait for: the server is stopping.
            self.transport.close()
        elif self.task is None and not self.queue and self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None and not self.lost:
            self.transport.abort()


class _Canned:
    """A response decided while parsing (413, 400, 408, 429), queued behind earlier requests."""

    __slots__ = ("keep_alive", "response")

    def __init__(self, response: Response, keep_alive: bool) -> None:
        self.response = response
        self.keep_alive = keep_alive


class _BadRequest(Exception):
    """Raised by a parser callback: the request breaks a rule the parser does not check."""


class _Stop(Exception):
    """Raised by a parser callback once it has queued its answer: read no further."""
