"""The API server's HTTP/1.1 layer: a small server on asyncio protocols.

It does what the API server needs and nothing else: keep-alive and pipelined requests,
Content-Length and chunked request bodies, `Expect: 100-continue`, a request size limit,
whole responses and chunked streams (watch, logs) with flow control. Parsing is a few
bytes operations per request, which is why it is several times cheaper than a general web
framework's request path (docs/decisions/0012-own-http-layer-for-the-api-server.md).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from email.utils import formatdate
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, unquote

__all__ = ["HTTPServer", "Headers", "Request", "Response", "ResponseStream"]

log = logging.getLogger("kubeforge.apiserver.http")

MAX_HEAD_BYTES = 64 * 1024
# Past this a refused body is not worth reading through: answer and close instead.
MAX_DISCARD_BYTES = 64 * 1024 * 1024
_MAX_QUEUED = 32  # pipelined requests waiting before reading pauses

_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_HEX_DIGITS = b"0123456789abcdefABCDEF"


class Headers(Mapping[str, str]):
    """Request headers, looked up case-insensitively; repeated headers are comma-joined."""

    __slots__ = ("_values",)

    def __init__(self, values: dict[str, str]) -> None:
        self._values = values  # keys are lower-case

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return self._values[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


class Request:
    """One request, its body already read."""

    __slots__ = (
        "_conn",
        "_query",
        "body",
        "headers",
        "http10",
        "keep_alive",
        "method",
        "target",
    )

    def __init__(
        self,
        method: str,
        target: str,
        headers: Headers,
        body: bytes,
        keep_alive: bool,
        conn: _Connection,
        http10: bool = False,
    ) -> None:
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive
        self.http10 = http10
        self._query: dict[str, str] | None = None
        self._conn = conn

    @property
    def path(self) -> str:
        """The percent-decoded path."""
        raw = self.target.partition("?")[0]
        return unquote(raw) if "%" in raw else raw

    @property
    def query(self) -> dict[str, str]:
        """Query parameters; the first of repeated ones wins, as in the Kubernetes server."""
        if self._query is None:
            query: dict[str, str] = {}
            text = self.target.partition("?")[2]
            if text:
                for key, value in parse_qsl(text, keep_blank_values=True):
                    query.setdefault(key, value)
            self._query = query
        return self._query

    @property
    def host(self) -> str:
        return str(self.headers.get("Host", ""))

    @property
    def peer_certificate(self) -> bytes | None:
        """The client certificate (DER) the TLS layer verified, if the client sent one."""
        transport = self._conn.transport
        tls = transport.get_extra_info("ssl_object") if transport is not None else None
        return tls.getpeercert(binary_form=True) if tls is not None else None

    def stream(self, status: int = 200, headers: Mapping[str, str] | None = None) -> ResponseStream:
        """Send the status and headers now, and return the stream that writes the body."""
        if self.http10:
            # HTTP/1.0 has no chunked encoding: the body ends when the connection does.
            self.keep_alive = False
        return ResponseStream(self._conn, status, headers or {}, chunked=not self.http10)


class Response:
    """A whole response."""

    __slots__ = ("body", "headers", "status")

    def __init__(
        self,
        status: int = 200,
        body: bytes = b"",
        content_type: str = "application/json",
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.headers = [("Content-Type", content_type), *(headers or ())]

    def encode(self, keep_alive: bool) -> bytes:
        head = [_status_line(self.status)]
        for name, value in self.headers:
            head.append(f"{name}: {value}\r\n")
        head.append(f"Content-Length: {len(self.body)}\r\nDate: {_date()}\r\n")
        if not keep_alive:
            head.append("Connection: close\r\n")
        head.append("\r\n")
        return "".join(head).encode("latin-1") + self.body


class ResponseStream:
    """A chunked response body, written piece by piece (watch events, followed logs).

    The status and headers go out when it is created, so a client sees the response start
    (a watch established) before the first chunk.
    """

    __slots__ = ("_chunked", "_conn", "_finished")

    def __init__(
        self, conn: _Connection, status: int, headers: Mapping[str, str], chunked: bool = True
    ) -> None:
        self._conn = conn
        self._chunked = chunked
        self._finished = False
        conn.streaming = True
        lines = [_status_line(status)]
        lines.extend(f"{name}: {value}\r\n" for name, value in headers.items())
        framing = "Transfer-Encoding: chunked" if chunked else "Connection: close"
        lines.append(f"Date: {_date()}\r\n{framing}\r\n\r\n")
        conn.send_now("".join(lines).encode("latin-1"))

    async def write(self, data: bytes) -> None:
        """Send one chunk; waits while the client reads slower than we write.

        Raises ConnectionResetError once the client has gone.
        """
        if data:
            await self._conn.send(b"%x\r\n%s\r\n" % (len(data), data) if self._chunked else data)

    async def finish(self) -> None:
        """End the body (the connection stays open for the next request)."""
        if not self._finished:
            self._finished = True
            if not self._chunked:
                return
            try:
                await self._conn.send(b"0\r\n\r\n")
            except ConnectionResetError:
                pass


# A handler answers at once with a Response, or returns an awaitable for the answers that
# must wait (streams); the connection runs those in a task.
Handler = Callable[[Request], "Response | Awaitable[Response | ResponseStream]"]


class HTTPServer:
    """Serves `handler` on one address, over TLS when given an SSL context."""

    def __init__(
        self,
        handler: Handler,
        *,
        max_body_bytes: int,
        error: Callable[[int, str], Response],
        shutdown_timeout: float = 5.0,
    ) -> None:
        self.handler = handler
        self.max_body_bytes = max_body_bytes
        self.error = error  # builds the answer to a request refused while parsing
        self.shutdown_timeout = shutdown_timeout
        self.connections: set[_Connection] = set()
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int, ssl_context: ssl.SSLContext | None) -> int:
        """Listen and return the port bound."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self), host, port, ssl=ssl_context, backlog=1024
        )
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening, let requests in progress finish (up to the timeout), then close.

        Connections closed gracefully finish sending what was written to them; only those
        whose requests outlast the timeout are cut off.
        """
        if self._server is None:
            return
        self._server.close()
        self._server = None
        for conn in list(self.connections):
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


class _Connection(asyncio.Protocol):
    """One client connection: parses requests as bytes arrive, answers them in order."""

    def __init__(self, server: HTTPServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.task: asyncio.Task[None] | None = None
        self.queue: deque[Request | _Canned] = deque()
        self.buffer = bytearray()
        self.head: _Head | None = None  # a request whose body is still arriving
        self.discard = 0  # bytes of a refused body still to skip
        self.closing = False
        self.lost = False
        self.paused_reading = False
        self.sent_continue = False
        self.streaming = False  # a ResponseStream has sent its head
        self.scheduled = False  # _answer() is due in the loop's next turn
        self.drain: asyncio.Future[None] | None = None

    # asyncio callbacks -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.server.connections.discard(self)
        self.queue.clear()
        if self.drain is not None and not self.drain.done():
            self.drain.set_result(None)  # writers waiting on it find the connection lost
        if self.task is not None:
            # A streaming handler (a watch) ends when its client goes.
            self.task.cancel()

    def pause_writing(self) -> None:
        if self.drain is None or self.drain.done():
            self.drain = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.drain is not None and not self.drain.done():
            self.drain.set_result(None)
        if self.queue and self.task is None and not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._answer)

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        if self.discard:
            skip = min(self.discard, len(data))
            self.discard -= skip
            data = data[skip:]
        self.buffer += data
        try:
            while self.buffer and not self.closing and self._parse_one():
                pass
        except _BadRequest as exc:
            self._fail(400, str(exc))
        except _TooLarge as exc:
            self._fail(413, str(exc))
        if self.queue and self.task is None and not self.scheduled:
            # Answering from the event loop's next turn, rather than now, lets one turn
            # parse what every connection sent before any handler runs: the same code runs
            # back to back, which under load is measurably faster than interleaving.
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._answer)
        if len(self.queue) >= _MAX_QUEUED and not self.paused_reading and not self.lost:
            self.paused_reading = True
            assert self.transport is not None
            self.transport.pause_reading()

    # parsing ------------------------------------------------------------------------------

    def _parse_one(self) -> bool:
        """Take one whole request off the buffer; False when more bytes are needed."""
        head = self.head
        if head is None:
            head = self.head = self._parse_head()
            if head is None:
                return False
        if head.chunked:
            body = self._chunked_body()
        elif head.length > self.server.max_body_bytes:
            self._refuse_body(head)
            return not self.closing
        elif len(self.buffer) >= head.length:
            body = bytes(self.buffer[: head.length])
            del self.buffer[: head.length]
        else:
            body = None
        if body is None:
            self._continue()
            return False
        self.head = None
        self.sent_continue = False
        self.queue.append(
            Request(
                head.method, head.target, head.headers, body, head.keep_alive, self, head.http10
            )
        )
        return True

    def _parse_head(self) -> _Head | None:
        buf = self.buffer
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > MAX_HEAD_BYTES:
                raise _BadRequest("request headers too large")
            return None
        if end > MAX_HEAD_BYTES:
            raise _BadRequest("request headers too large")
        lines = buf[:end].decode("latin-1").split("\r\n")
        del buf[: end + 4]
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[0].isalpha() or not parts[1]:
            raise _BadRequest("malformed request line")
        method, target, version = parts
        if version != "HTTP/1.1" and version != "HTTP/1.0":
            raise _BadRequest(f"unsupported protocol {version!r}")
        values: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise _BadRequest("malformed header line")
            key = name.lower()
            value = value.strip()
            values[key] = f"{values[key]}, {value}" if key in values else value
        connection = values.get("connection", "").lower()
        if version == "HTTP/1.1":
            keep_alive = "close" not in connection
        else:
            keep_alive = "keep-alive" in connection
        head = _Head(method, target, Headers(values), keep_alive)
        head.http10 = version == "HTTP/1.0"
        head.expect_continue = values.get("expect", "").lower() == "100-continue"
        length_text = values.get("content-length")
        if "transfer-encoding" in values:
            if length_text is not None:
                raise _BadRequest("both Content-Length and Transfer-Encoding")
            if values["transfer-encoding"].lower() != "chunked":
                raise _BadRequest("unsupported Transfer-Encoding")
            head.chunked = True
        elif length_text is not None:
            if not _is_decimal(length_text):
                raise _BadRequest("invalid Content-Length")
            head.length = int(length_text)
        return head

    def _chunked_body(self) -> bytes | None:
        """Move whole chunks from the buffer to the body; the body once the last one is in."""
        head = self.head
        assert head is not None
        buf = self.buffer
        while True:
            if head.trailers:
                # Trailers end with an empty line; they carry nothing the server uses.
                if buf[:2] == b"\r\n":
                    del buf[:2]
                    return b"".join(head.pieces)
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(buf) > MAX_HEAD_BYTES:
                        raise _BadRequest("trailers too large")
                    return None
                del buf[: end + 4]
                return b"".join(head.pieces)
            line_end = buf.find(b"\r\n")
            if line_end < 0:
                if len(buf) > MAX_HEAD_BYTES:
                    raise _BadRequest("malformed chunk size")
                return None
            size_text = bytes(buf[:line_end]).split(b";")[0].strip()
            if not size_text or len(size_text) > 15 or size_text.strip(_HEX_DIGITS):
                raise _BadRequest("malformed chunk size")
            size = int(size_text, 16)
            if size == 0:
                del buf[: line_end + 2]
                head.trailers = True
                continue
            if head.length + size > self.server.max_body_bytes:
                limit = self.server.max_body_bytes
                raise _TooLarge(f"Request entity too large: limit is {limit}")
            if len(buf) < line_end + 2 + size + 2:
                return None
            head.length += size
            start = line_end + 2
            if buf[start + size : start + size + 2] != b"\r\n":
                raise _BadRequest("malformed chunk")
            head.pieces.append(bytes(buf[start : start + size]))
            del buf[: start + size + 2]

    def _continue(self) -> None:
        """Invite the body of a request that asked to be (`Expect: 100-continue`), once the
        answers to the requests before it are out, so responses stay in order."""
        head = self.head
        if head is None or not head.expect_continue or self.sent_continue:
            return
        if self.queue or self.task is not None or self.scheduled or self.lost:
            return
        self.sent_continue = True
        assert self.transport is not None
        self.transport.write(_CONTINUE)

    def _refuse_body(self, head: _Head) -> None:
        """Answer 413 and skip the body as it arrives, or close if it is too big for that."""
        limit = self.server.max_body_bytes
        response = self.server.error(413, f"Request entity too large: limit is {limit}")
        self.head = None
        if head.length > MAX_DISCARD_BYTES or head.expect_continue:
            self._send_and_close(response)
            return
        buffered = len(self.buffer)
        if buffered >= head.length:
            del self.buffer[: head.length]
        else:
            self.buffer.clear()
            self.discard = head.length - buffered
        self.queue.append(_Canned(response, head.keep_alive))

    def _fail(self, status: int, message: str) -> None:
        self._send_and_close(self.server.error(status, message))

    def _send_and_close(self, response: Response) -> None:
        """Answer after the requests already queued, then close."""
        self.closing = True
        self.buffer.clear()
        self.queue.append(_Canned(response, False))

    # answering ----------------------------------------------------------------------------

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
                self.task = asyncio.get_running_loop().create_task(self._finish(request, result))
                break
            transport.write(result.encode(self._keep_alive(request)))
        if self.paused_reading and len(self.queue) < _MAX_QUEUED // 2 and not self.lost:
            self.paused_reading = False
            transport.resume_reading()
        if self.closing and self.task is None and not self.queue:
            transport.close()
        else:
            self._continue()

    def _call(self, request: Request | _Canned) -> Response | Awaitable[Response | ResponseStream]:
        if isinstance(request, _Canned):
            return request.response
        try:
            return self.server.handler(request)
        except Exception as exc:
            return self._crashed(request, exc)

    def _crashed(self, request: Request, exc: Exception) -> Response:
        log.error("%s %s failed", request.method, request.target, exc_info=exc)
        return self.server.error(500, f"{type(exc).__name__}: {exc}")

    def _keep_alive(self, request: Request | _Canned) -> bool:
        """Whether the connection stays open after this response; if not, nothing queued
        behind it is answered."""
        if request.keep_alive and not (self.closing and not self.queue):
            return True
        self.closing = True
        self.queue.clear()
        return False

    async def _finish(
        self, request: Request | _Canned, pending: Awaitable[Response | ResponseStream]
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
            if isinstance(response, ResponseStream):
                await response.finish()
            elif self.streaming:
                # The handler failed after its stream began: ending the connection is the
                # only way left to tell the client.
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
        if self.task is None and not self.queue and self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None and not self.lost:
            self.transport.abort()


class _Head:
    """A parsed request line and headers, waiting for the body."""

    __slots__ = (
        "chunked",
        "expect_continue",
        "headers",
        "http10",
        "keep_alive",
        "length",
        "method",
        "pieces",
        "target",
        "trailers",
    )

    def __init__(self, method: str, target: str, headers: Headers, keep_alive: bool) -> None:
        self.method = method
        self.target = target
        self.headers = headers
        self.keep_alive = keep_alive
        self.http10 = False
        self.expect_continue = False
        self.chunked = False
        self.trailers = False
        self.length = 0  # Content-Length, or the chunked body's size so far
        self.pieces: list[bytes] = []


class _Canned:
    """A response decided while parsing (413, 400), queued behind earlier requests."""

    __slots__ = ("keep_alive", "response")

    def __init__(self, response: Response, keep_alive: bool) -> None:
        self.response = response
        self.keep_alive = keep_alive


def _is_decimal(text: str) -> bool:
    """Plain ASCII digits, short enough to be a length (str.isdigit also takes "²")."""
    return 0 < len(text) <= 18 and text.isascii() and text.isdigit()


class _BadRequest(Exception):
    pass


class _TooLarge(Exception):
    pass


_STATUS_LINES: dict[int, str] = {}


def _status_line(status: int) -> str:
    line = _STATUS_LINES.get(status)
    if line is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Unknown"
        line = _STATUS_LINES[status] = f"HTTP/1.1 {status} {phrase}\r\n"
    return line


_date_cache: list[Any] = [0, ""]


def _date() -> str:
    """The Date header, formatted at most once a second."""
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[0] = now
        _date_cache[1] = formatdate(now, usegmt=True)
    return str(_date_cache[1])
