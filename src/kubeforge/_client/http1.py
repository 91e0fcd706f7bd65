"""Whole HTTP/1.1 exchanges with the API server: one request, one complete answer.

Nearly every call a controller makes is a small request and a small answer. Through aiohttp's
client each costs about 145 µs of CPU and several turns of the event loop (request and response
objects, header multidicts, a task writing the body, a payload stream); here a request is
written in one piece onto a pooled keep-alive connection and the answer parsed as it arrives by
httptools (llhttp, the parser Node.js uses), about 40 µs and one turn
(docs/decisions/0026-own-http-exchanges-in-the-client.md). Watches and log streams, and
clusters reached through a proxy, stay on aiohttp (`transport.py`).

What it does: TLS with the configuration's context and server name, keep-alive connections
reused one exchange at a time (as many as there are requests in flight, up to
MAX_CONNECTIONS: further exchanges wait for one to be free), Content-Length and
chunked answers, gzip-encoded answers (asked for, as client-go does), a limit on the size of an
answer's head, timeouts covering connect and exchange. A connection the server closed while
idle is noticed before use; a read whose reused connection closed before any answer byte is
sent again at once on a new one, as Go's net/http does.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
import zlib
from dataclasses import dataclass

import httptools

__all__ = ["Answer", "ConnectionPool", "ExchangeError", "decoded"]

MAX_HEAD_BYTES = 1024 * 1024
# Connections open at once (dialing, in use or idle); an exchange finding all of them busy
# waits for one, as Go's Transport does with MaxConnsPerHost. client-go sends every request
# of a client over one HTTP/2 connection; over HTTP/1.1 a burst of concurrent requests would
# otherwise open a connection each, every TLS connection holding buffers of a few hundred
# KiB at both ends, and closing the extra ones after the burst means new handshakes at the
# next one. All of them are kept for reuse.
MAX_CONNECTIONS = 64
_REPLAYABLE = frozenset({"GET", "HEAD", "OPTIONS"})


class ExchangeError(ConnectionError):
    """The connection failed or closed before the answer was complete."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A complete answer: status, headers as sent (names as given), decoded body."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    keep_alive: bool


class _Connection(asyncio.Protocol):
    """One connection: at most one exchange at a time, parsed as bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reused = False
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Answer] | None = None
        self._received = False
        self._headers: list[tuple[str, str]] = []
        self._head_bytes = 0
        self._body: list[bytes] = []

    # asyncio --------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        detail = f": {exc}" if exc else ""
        self._fail(ExchangeError(f"the server closed the connection{detail}"))

    def eof_received(self) -> bool:
        return False  # close our side too

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:
            # Nothing was asked: an answer to no request (a 408 on an idle connection, say)
            # leaves the connection in an unknown state.
            self.close()
            return
        self._received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            if self._head_bytes > MAX_HEAD_BYTES:
                problem = f"the answer's headers exceed {MAX_HEAD_BYTES} bytes"
            else:
                problem = f"malformed answer from the server: {exc}"
            self._fail(ExchangeError(problem))
            self.close()

    # httptools callbacks ----------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value) + 4
        if self._head_bytes > MAX_HEAD_BYTES:
            raise ExchangeError("headers too large")  # ends parsing; reported by data_received
        self._headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        answer = Answer(
            self._parser.get_status_code(),
            self._headers,
            b"".join(self._body),
            self._parser.should_keep_alive(),
        )
        self._headers, self._body, self._head_bytes = [], [], 0
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(answer)

    # exchanges ------------------------------------------------------------------------------

    def usable(self) -> bool:
        return not self.closed and self.transport is not None and not self.transport.is_closing()

    async def exchange(self, request: bytes) -> Answer:
        assert self.transport is not None and self._waiter is None
        self._received = False
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self._waiter

    @property
    def received_nothing(self) -> bool:
        return not self._received

    def _fail(self, exc: Exception) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class ConnectionPool:
    """Keep-alive connections to one server; each exchange takes one for itself."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None = None,
        max_connections: int = MAX_CONNECTIONS,
        unix_socket: str | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.unix_socket = unix_socket
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname
        self.max_connections = max_connections
        self._idle: list[_Connection] = []
        # Connections counted against the limit: dialing (None), in use or idle.
        self._open = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._closed = False

    async def exchange(self, method: str, request: bytes) -> Answer:
        """Send a complete request (head and body) and return the complete answer."""
        conn = await self._get()
        if conn.reused:
            try:
                return await self._exchange(conn, request)
            except ExchangeError:
                # The server closed the reused connection before answering anything: a read
                # is sent again on a new one; other requests may have been acted on.
                if method not in _REPLAYABLE or not conn.received_nothing:
                    raise
            conn = await self._get(fresh=True)
        return await self._exchange(conn, request)

    async def _get(self, *, fresh: bool = False) -> _Connection:
        """An idle connection (unless `fresh`), or a new one once the limit allows."""
        waited = False
        while True:
            if self._closed:
                raise ExchangeError("the connection pool is closed")
            conn = None if fresh else self._take_idle()
            if conn is not None:
                return conn
            if self._open < self.max_connections:
                self._open += 1
                try:
                    return await self._connect()
                except BaseException:
                    self._dropped()
                    raise
            if fresh and self._idle:
                # At the limit with idle connections: one of them makes room.
                self._idle.pop(0).close()
                self._dropped()
                continue
            waiter = asyncio.get_running_loop().create_future()
            # One that was woken and lost the connection to a newcomer keeps its place.
            if waited:
                self._waiters.appendleft(waiter)
            else:
                self._waiters.append(waiter)
            waited = True
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # the turn it was given goes to the next one
                raise
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)

    def _wake(self) -> None:
        """Let the first waiting exchange look again (a connection is idle, or room)."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _dropped(self) -> None:
        self._open -= 1
        self._wake()

    async def _exchange(self, conn: _Connection, request: bytes) -> Answer:
        try:
            answer = await conn.exchange(request)
        except BaseException:
            conn.close()  # cancelled or failed mid-exchange: the stream is unusable
            self._dropped()
            raise
        if answer.keep_alive and not self._closed and conn.usable():
            conn.reused = True
            self._idle.append(conn)
            self._wake()
        else:
            conn.close()
            self._dropped()
        return decoded(answer)

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            conn = self._idle.pop()
            if conn.usable():
                return conn
            conn.close()
            self._open -= 1
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        if self.unix_socket is not None:
            _, conn = await loop.create_unix_connection(_Connection, self.unix_socket)
            return conn
        _, conn = await loop.create_connection(
            _Connection,
            self.host,
            self.port,
            ssl=self.ssl_context,
            server_hostname=self.server_hostname if self.ssl_context is not None else None,
        )
        return conn

    def close(self) -> None:
        """Close the idle connections; those in use close when their exchange ends."""
        self._closed = True
        while self._idle:
            self._idle.pop().close()
            self._open -= 1
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # it finds the pool closed


def decoded(answer: Answer) -> Answer:
    """The answer with its body decoded as its Content-Encoding says (gzip)."""
    encoding = _header(answer.headers, "content-encoding")
    if encoding and encoding.lower() != "identity":
        body = _decode(encoding, answer.body)
        return Answer(answer.status, answer.headers, body, answer.keep_alive)
    return answer


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def _decode(encoding: str, body: bytes) -> bytes:
    if encoding.lower() not in ("gzip", "x-gzip"):
        raise ExchangeError(f"the answer is encoded as {encoding!r}, which was not asked for")
    try:
        return zlib.decompress(body, wbits=16 + zlib.MAX_WBITS)
    except zlib.error as exc:
        raise ExchangeError(f"the answer's gzip encoding is corrupt: {exc}") from exc
