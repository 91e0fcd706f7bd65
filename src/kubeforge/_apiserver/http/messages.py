"""The HTTP messages a handler sees: the request it is given, and what it answers with — a
whole `Response`, a `ResponseStream` written piece by piece (watch, logs), or the connection
itself after `101 Switching Protocols` (`Upgraded`: exec, attach, port-forward).

A message writes to its client through the connection it came on, which it knows only as
the `Connection` declared here; the server's connection (`server.py`) is one.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import Iterator, Mapping
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote

__all__ = [
    "Connection",
    "Headers",
    "Request",
    "Response",
    "ResponseStream",
    "Upgraded",
]

# An upgraded connection's input waiting to be read: past this, reading from the client
# pauses until the protocol has caught up.
_MAX_UPGRADED_BUFFER = 1 << 20


class Connection(Protocol):
    """What a message needs of the client connection it came on."""

    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport | None
    tls: ssl.SSLObject | None  # None without TLS
    lost: bool  # the client has gone
    closing: bool  # no request after this one's answer is read
    streaming: bool  # a ResponseStream has sent its head
    # An upgrade request was read: which one, what the client sent after it (`early`), and
    # the connection as a byte stream once the handler has switched protocols.
    upgrade_pending: bool
    upgrade_request: Request | None
    early: bytearray
    upgraded: Upgraded | None

    def send_now(self, data: bytes) -> None:
        """Write without waiting for the client to read."""

    async def send(self, data: bytes) -> None:
        """Write, waiting while the client reads slower; ConnectionResetError once it has gone."""

    def pause_input(self) -> None:
        """Stop reading from the client."""

    def resume_input(self) -> None:
        """Read from the client again."""

    def abort(self) -> None:
        """Close at once, dropping what was not sent yet."""


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
        conn: Connection,
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
        tls = self._conn.tls
        return tls.getpeercert(binary_form=True) if tls is not None else None

    def stream(self, status: int = 200, headers: Mapping[str, str] | None = None) -> ResponseStream:
        """Send the status and headers now, and return the stream that writes the body."""
        if self.http10:
            # HTTP/1.0 has no chunked encoding: the body ends when the connection does.
            self.keep_alive = False
        return ResponseStream(self._conn, status, headers or {}, chunked=not self.http10)

    @property
    def is_upgrade(self) -> bool:
        """Whether the request asks to switch protocols (`Connection: Upgrade`)."""
        return self._conn.upgrade_pending and self is self._conn.upgrade_request

    def upgrade(self, headers: Mapping[str, str]) -> Upgraded:
        """Answer `101 Switching Protocols` with `headers`, and return the connection as a
        byte stream in both directions. Only a request that asked to upgrade may be."""
        conn = self._conn
        if not self.is_upgrade or conn.upgraded is not None:
            raise RuntimeError("this request cannot switch protocols")
        lines = [_status_line(101)]
        lines.extend(f"{name}: {value}\r\n" for name, value in headers.items())
        lines.append("\r\n")
        conn.send_now("".join(lines).encode("utf-8", "replace"))
        upgraded = Upgraded(conn)
        conn.upgraded = upgraded
        early, conn.early = bytes(conn.early), bytearray()
        if early:
            upgraded.feed(early)
        if conn.lost:
            upgraded.feed_eof()
        return upgraded


_NO_BODY = frozenset({204, 304})


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
        if self.status in _NO_BODY:
            # RFC 9110 6.4.1 and 8.6: 204 and 304 answers end with their headers, and carry
            # no Content-Length (a 304's would describe the cached body, not this answer).
            head.append(f"Date: {_date()}\r\n")
            body = b""
        else:
            head.append(f"Content-Length: {len(self.body)}\r\nDate: {_date()}\r\n")
            body = self.body
        if not keep_alive:
            head.append("Connection: close\r\n")
        head.append("\r\n")
        # Header values are written as UTF-8, as Go's server writes them.
        return "".join(head).encode("utf-8", "replace") + body

    def unframed(self) -> tuple[list[tuple[str, str]], bytes]:
        """The header fields and body `encode` sends, for a client in this process that
        takes them as they are (no connection: nothing about one)."""
        if self.status in _NO_BODY:
            return [*self.headers, ("Date", _date())], b""
        fields = [*self.headers, ("Content-Length", str(len(self.body))), ("Date", _date())]
        return fields, self.body


class ResponseStream:
    """A chunked response body, written piece by piece (watch events, followed logs).

    The status and headers go out when it is created, so a client sees the response start
    (a watch established) before the first chunk.
    """

    __slots__ = ("_chunked", "_conn", "_finished")

    def __init__(
        self, conn: Connection, status: int, headers: Mapping[str, str], chunked: bool = True
    ) -> None:
        self._conn = conn
        self._chunked = chunked
        self._finished = False
        conn.streaming = True
        lines = [_status_line(status)]
        lines.extend(f"{name}: {value}\r\n" for name, value in headers.items())
        framing = "Transfer-Encoding: chunked" if chunked else "Connection: close"
        lines.append(f"Date: {_date()}\r\n{framing}\r\n\r\n")
        conn.send_now("".join(lines).encode("utf-8", "replace"))

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


class Upgraded:
    """A connection after `101 Switching Protocols`: bytes in both directions, for the
    protocol it was switched to. The HTTP layer's timeouts no longer apply; the protocol
    keeps its own. Reading from the client pauses while what it sent waits unread."""

    __slots__ = ("_buffered", "_chunks", "_conn", "_eof", "_waiter")

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._eof = False
        self._waiter: asyncio.Future[None] | None = None

    def feed(self, data: bytes) -> None:
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered > _MAX_UPGRADED_BUFFER:
            self._conn.pause_input()
        self._wake()

    def feed_eof(self) -> None:
        self._eof = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def read(self) -> bytes:
        """The next bytes the client sent; b"" once it has closed the connection."""
        while not self._chunks:
            if self._eof:
                return b""
            self._waiter = self._conn.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        data = self._chunks.popleft()
        self._buffered -= len(data)
        if self._buffered <= _MAX_UPGRADED_BUFFER // 2:
            self._conn.resume_input()
        return data

    async def write(self, data: bytes) -> None:
        """Send bytes; waits while the client reads slower than we write.

        Raises ConnectionResetError once the client has gone.
        """
        if data:
            await self._conn.send(data)

    @property
    def closed(self) -> bool:
        return self._conn.lost

    def close(self) -> None:
        """Close the connection once what was written has been sent."""
        self._conn.closing = True
        transport = self._conn.transport
        if transport is not None and not self._conn.lost:
            transport.close()

    def abort(self) -> None:
        """Close the connection at once, dropping what was not sent yet."""
        self._conn.closing = True
        self._conn.abort()


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
    """The Date header, formatted at most once a second. The machine's time, as Go's
    net/http writes it: it belongs to the HTTP exchange, not to the cluster's objects."""
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[0] = now
        _date_cache[1] = formatdate(now, usegmt=True)
    return str(_date_cache[1])
