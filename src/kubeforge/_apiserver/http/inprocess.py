"""Whole exchanges of clients in the server's own process, answered without a connection.

A development cluster's controllers and simulated nodes run in its API server's process
(decision 63). Their requests are handed to the same handler as a connection's requests
(authentication from the same headers, authorization, routing, admission, storage), with the
same limits on their size, answered from the event loop's next turn as a connection's are,
and in the context the server's connections run in. What is left out is what only a byte
stream needs: HTTP framing at both ends, the socket, the timeouts of reading a request, and
the connection cap (there is no connection to count). A handler that streams its answer
(a log) writes to a buffer, read back as a connection's client would read it.
"""

from __future__ import annotations

import asyncio
import contextvars
import ssl
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

import httptools

from kubeforge._apiserver.http.messages import Headers, Request, Response, ResponseStream, Upgraded

__all__ = ["InProcessExchanges", "Server", "UnframedAnswer"]

# What an exchange answers: the status, the header fields, the body.
UnframedAnswer = tuple[int, list[tuple[str, str]], bytes]


class Server(Protocol):
    """What exchanges need of the HTTP server whose handler answers them (`HTTPServer`)."""

    handler: Callable[[Request], Response | Awaitable[Response | ResponseStream | Upgraded]]

    @property
    def serving(self) -> bool:
        """Whether it serves now."""

    def refusal(self, target: str, headers: Mapping[str, str], body_size: int) -> Response | None:
        """The answer a connection gives such a request before any handler sees it."""

    def crashed(self, request: Request, exc: Exception) -> Response:
        """The answer to a request whose handler failed."""


class InProcessExchanges:
    """Answers whole exchanges given as their parts (method, target, header fields with
    lower-case names, body) through `server`'s handler."""

    def __init__(self, server: Server) -> None:
        self.server = server
        # The context the server's connections run their handlers in (that of its start).
        self.context = contextvars.copy_context()
        # Handlers that had to wait (admission webhooks, a streamed answer), until they end.
        self.pending: set[asyncio.Task[Response | ResponseStream | Upgraded]] = set()

    async def exchange(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> UnframedAnswer:
        """The answer to one request. Cancelling the exchange cancels its handler, as a
        client closing its connection does."""
        server = self.server
        # As a connection answers what it read from the event loop's next turn: a client
        # sending requests back to back still lets everything else run between them.
        await asyncio.sleep(0)
        if not server.serving:
            raise ConnectionRefusedError("the API server is not serving")
        refused = server.refusal(target, headers, len(body))
        if refused is not None:
            return _unframed(refused)
        conn = _Buffer(asyncio.get_running_loop())
        request = Request(method, target, Headers(dict(headers)), body, True, conn)
        context = self.context.copy()
        try:
            answer = context.run(server.handler, request)
        except Exception as exc:
            answer = server.crashed(request, exc)
        if isinstance(answer, Response):
            return _unframed(answer)
        task = asyncio.get_running_loop().create_task(_wait(answer), context=context)
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)
        try:
            result = await task
        except asyncio.CancelledError:
            conn.lost = True
            raise
        except Exception as exc:
            result = server.crashed(request, exc)
        if isinstance(result, Response):
            return _unframed(result)
        if isinstance(result, ResponseStream):
            await result.finish()
            return _read_back(bytes(conn.output))
        # Only a request that asked to switch protocols may be answered so; none can here.
        return _unframed(server.crashed(request, RuntimeError("an exchange cannot upgrade")))


async def _wait(
    answer: Awaitable[Response | ResponseStream | Upgraded],
) -> Response | ResponseStream | Upgraded:
    return await answer


def _unframed(response: Response) -> UnframedAnswer:
    fields, body = response.unframed()
    return response.status, fields, body


class _Buffer:
    """The `Connection` an in-process request comes on: what is written to it is kept."""

    __slots__ = (
        "closing",
        "early",
        "loop",
        "lost",
        "output",
        "streaming",
        "tls",
        "transport",
        "upgrade_pending",
        "upgrade_request",
        "upgraded",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.tls: ssl.SSLObject | None = None
        self.lost = False
        self.closing = False
        self.streaming = False
        self.upgrade_pending = False
        self.upgrade_request: Request | None = None
        self.early = bytearray()
        self.upgraded: Upgraded | None = None
        self.output = bytearray()

    def send_now(self, data: bytes) -> None:
        if not self.lost:
            self.output += data

    async def send(self, data: bytes) -> None:
        if self.lost:
            raise ConnectionResetError("the client has gone")
        self.output += data

    def pause_input(self) -> None:
        return None

    def resume_input(self) -> None:
        return None

    def abort(self) -> None:
        self.lost = True


class _ReadBack:
    """httptools callbacks collecting a response's fields and body."""

    def __init__(self) -> None:
        self.fields: list[tuple[str, str]] = []
        self.body: list[bytes] = []

    def on_header(self, name: bytes, value: bytes) -> None:
        self.fields.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_body(self, body: bytes) -> None:
        self.body.append(body)


def _read_back(data: bytes) -> UnframedAnswer:
    """A streamed answer, as its client reads it off the wire (the chunks joined)."""
    collected = _ReadBack()
    parser = httptools.HttpResponseParser(collected)
    parser.feed_data(data)
    return parser.get_status_code(), collected.fields, b"".join(collected.body)
