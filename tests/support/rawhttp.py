"""A raw-socket harness for the API server's HTTP layer: real connections, exact bytes.

Tests speak raw HTTP bytes through `asyncio.open_connection` and compare what comes back
byte for byte; the only thing normalised away is the value of the `Date` header.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import Awaitable, Callable, Iterable
from http import HTTPStatus

import pytest

from kubeforge._apiserver.http.messages import Request, Response, ResponseStream
from kubeforge._apiserver.http.server import ConnectionLimits, HTTPServer
from kubeforge._apiserver.tls import ServingCertificates

WAIT = 2.0  # upper bound on any single wait; a passing test never gets close to it
LIMIT = 64  # max_body_bytes unless a test says otherwise
HEAD_LIMIT = 64 * 1024  # max_header_bytes unless a test says otherwise
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"

# Handlers answer at once (the API server's usual path) or return an awaitable (streams).
Handler = Callable[[Request], Response | Awaitable[Response | ResponseStream]]

_DATE = re.compile(
    rb"\r\nDate: (?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d "
    rb"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT\r\n"
)


# expected bytes ---------------------------------------------------------------------------


def expected(
    status: int,
    body: bytes = b"",
    headers: Iterable[tuple[str, str]] = (),
    *,
    close: bool = False,
    content_type: str = "text/plain",
) -> bytes:
    """A whole response as the server must write it (Date value normalised)."""
    head = f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: {content_type}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers)
    head += f"Content-Length: {len(body)}\r\nDate: <date>\r\n"
    if close:
        head += "Connection: close\r\n"
    return (head + "\r\n").encode("latin-1") + body


def echoed(line: str, body: bytes = b"", *, close: bool = False) -> bytes:
    """What `echo` answers to the request line `line` ("METHOD target")."""
    return expected(200, body, [("X-Echo", line)], close=close)


def refused(status: int, *, close: bool) -> bytes:
    """The answer built by the test server's `error` callback."""
    return expected(status, f"error {status}".encode(), close=close)


def stream_head(status: int = 200, content_type: str = "text/plain") -> bytes:
    line = f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
    return (
        f"{line}Content-Type: {content_type}\r\nDate: <date>\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode("latin-1")


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


LAST_CHUNK = b"0\r\n\r\n"
CHUNKED_HEAD = b"POST /chunked HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"


# handlers ---------------------------------------------------------------------------------


def echo_now(request: Request) -> Response:
    """Answers at once with the request body and a header naming the request."""
    line = f"{request.method} {request.target}"
    return Response(200, request.body, "text/plain", [("X-Echo", line)])


async def echo(request: Request) -> Response:
    """`echo_now`, answered from a coroutine."""
    return echo_now(request)


ECHOES = pytest.mark.parametrize("echo_handler", [echo_now, echo], ids=["sync", "async"])


class Held:
    """A handler holding each request until `release` is set, then answering "done";
    `running` is set once a request has reached it."""

    def __init__(self) -> None:
        self.running = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, request: Request) -> Response:
        self.running.set()
        await self.release.wait()
        return Response(200, b"done", "text/plain")


def get(target: str, *extra: str, version: str = "HTTP/1.1") -> bytes:
    lines = [f"GET {target} {version}", "Host: test", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def post(target: str, body: bytes, *extra: str) -> bytes:
    lines = [f"POST {target} HTTP/1.1", "Host: test", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def let_server_read() -> None:
    """Two loop turns: loopback delivery is immediate, so the server reads what was just
    written before the next write (a scheduling yield, not a timed wait)."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


# client and server harness ----------------------------------------------------------------


class Client:
    """One raw connection to the server under test."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    async def trickle(self, data: bytes, size: int) -> None:
        """Send `data` in pieces of `size` bytes, letting the server read each one."""
        for start in range(0, len(data), size):
            self.writer.write(data[start : start + size])
            await self.writer.drain()
            await let_server_read()

    async def head(self) -> bytes:
        raw = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), WAIT)
        return _DATE.sub(b"\r\nDate: <date>\r\n", raw)

    async def exactly(self, size: int) -> bytes:
        return await asyncio.wait_for(self.reader.readexactly(size), WAIT)

    async def chunks(self) -> bytes:
        """A chunked body exactly as sent, framing included, up to its last chunk."""
        raw = bytearray()
        while True:
            line = await asyncio.wait_for(self.reader.readuntil(b"\r\n"), WAIT)
            raw += line
            size = int(line[:-2], 16)
            if size == 0:
                raw += await self.exactly(2)
                return bytes(raw)
            raw += await self.exactly(size + 2)

    async def response(self) -> bytes:
        """One response (or interim response), framing included."""
        head = await self.head()
        if b"\r\nTransfer-Encoding: chunked\r\n" in head:
            return head + await self.chunks()
        match = re.search(rb"\r\nContent-Length: (\d+)\r\n", head)
        return head + await self.exactly(int(match.group(1)) if match else 0)

    async def answer(self, timeout: float = WAIT) -> bytes | None:
        """The next response; b"" when the server closed first, None when nothing came."""
        try:
            return await asyncio.wait_for(self.response(), timeout)
        except asyncio.IncompleteReadError as exc:
            return _DATE.sub(b"\r\nDate: <date>\r\n", exc.partial)
        except TimeoutError:
            return None

    async def eof(self) -> bytes:
        """Everything left until the server closes (b"" when it closed right away)."""
        return await asyncio.wait_for(self.reader.read(), WAIT)

    async def close(self) -> None:
        self.writer.close()
        try:
            await asyncio.wait_for(self.writer.wait_closed(), WAIT)
        except (OSError, TimeoutError):
            pass


class Served:
    """An HTTPServer on a free loopback port, remembering the errors it was asked to build."""

    def __init__(
        self,
        handler: Handler,
        *,
        max_body_bytes: int = LIMIT,
        certs: ServingCertificates | None = None,
        shutdown_timeout: float = 5.0,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.errors: list[tuple[int, str]] = []
        self.certs = certs
        self.http = HTTPServer(
            handler,
            max_body_bytes=max_body_bytes,
            error=self._error,
            limits=limits or ConnectionLimits(max_header_bytes=HEAD_LIMIT),
            shutdown_timeout=shutdown_timeout,
        )
        self.port = 0
        self._clients: list[Client] = []

    def _error(self, status: int, message: str) -> Response:
        self.errors.append((status, message))
        return Response(status, f"error {status}".encode(), "text/plain")

    @property
    def error_codes(self) -> list[int]:
        return [status for status, _ in self.errors]

    async def __aenter__(self) -> Served:
        context = self.certs.server_context() if self.certs is not None else None
        self.port = await self.http.start("127.0.0.1", 0, context)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for client in self._clients:
            await client.close()
        await self.http.stop()

    async def connect(self, limit: int = 2**16) -> Client:
        context = None
        if self.certs is not None:
            context = ssl.create_default_context(cadata=self.certs.ca_pem.decode())
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", self.port, ssl=context, limit=limit), WAIT
        )
        client = Client(reader, writer)
        self._clients.append(client)
        return client

    async def still_serving(self) -> None:
        """A fresh connection gets an answer."""
        client = await self.connect()
        client.send(get("/healthy"))
        assert await client.response() == echoed("GET /healthy")
