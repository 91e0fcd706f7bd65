"""In-process exchanges (`HTTPServer.in_process`): a request given as its parts reaches the
handler a connection's requests reach, is held to the same limits, and its answer comes back
with the fields and body a connection's client reads; nothing goes through a socket."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from kubeforge._apiserver.http.inprocess import InProcessExchanges
from kubeforge._apiserver.http.messages import Request, Response, ResponseStream
from tests.support.rawhttp import LIMIT, WAIT, Handler, Held, Served, echo, echo_now

HOST = {"host": "test"}

# Set while the server starts: the context its connections' handlers run in.
component: contextvars.ContextVar[str] = contextvars.ContextVar("component", default="none")


def exchanges(served: Served) -> InProcessExchanges:
    assert served.http.in_process is not None
    return served.http.in_process


@pytest.mark.parametrize("handler", [echo_now, echo], ids=["sync", "async"])
async def test_a_request_reaches_the_handler_and_its_answer_comes_back(handler: Handler) -> None:
    async with Served(handler) as served:
        status, fields, body = await exchanges(served).exchange(
            "POST", "/things?x=1", {**HOST, "content-length": "2"}, b"hi"
        )
        assert status == 200
        assert body == b"hi"
        names = [name for name, _ in fields]
        assert names == ["Content-Type", "X-Echo", "Content-Length", "Date"]
        assert dict(fields)["X-Echo"] == "POST /things?x=1"
        assert dict(fields)["Content-Length"] == "2"
        assert not served.http.connections  # no socket


async def test_the_same_limits_refuse_what_a_connection_would() -> None:
    async with Served(echo_now) as served:
        local = exchanges(served)
        too_large = b"x" * (LIMIT + 1)
        assert (await local.exchange("POST", "/", HOST, too_large))[0] == 413
        assert (await local.exchange("GET", "/", {}, b""))[0] == 400
        assert (await local.exchange("GET", "/", {"host": "a b"}, b""))[0] == 400
        big_head = {**HOST, "x-big": "y" * 70_000}
        assert (await local.exchange("GET", "/", big_head, b""))[0] == 400
        assert served.errors == [
            (413, f"Request entity too large: limit is {LIMIT}"),
            (400, "missing Host header"),
            (400, "invalid Host header"),
            (400, "request headers too large"),
        ]


async def test_a_failing_handler_is_answered_as_a_connection_answers_it() -> None:
    def fails(request: Request) -> Response:
        raise RuntimeError("broken")

    async def fails_later(request: Request) -> Response:
        raise RuntimeError("broken later")

    for handler, message in ((fails, "broken"), (fails_later, "broken later")):
        async with Served(handler) as served:
            status, _, body = await exchanges(served).exchange("GET", "/", HOST, b"")
            assert (status, body) == (500, b"error 500")
            assert served.errors == [(500, f"RuntimeError: {message}")]


async def test_a_streamed_answer_is_read_back_whole() -> None:
    async def streams(request: Request) -> ResponseStream:
        stream = request.stream(200, {"Content-Type": "text/plain", "X-Kind": "log"})
        await stream.write(b"one\n")
        await stream.write(b"two\n")
        await stream.finish()
        return stream

    async with Served(streams) as served:
        status, fields, body = await exchanges(served).exchange("GET", "/log", HOST, b"")
        assert (status, body) == (200, b"one\ntwo\n")
        assert ("X-Kind", "log") in fields
        assert ("Transfer-Encoding", "chunked") in fields


async def test_the_handler_runs_in_the_servers_context() -> None:
    seen: list[str] = []

    def handler(request: Request) -> Response:
        seen.append(component.get())
        return Response(204)

    served = Served(handler)
    token = component.set("kube-apiserver")
    try:
        await served.__aenter__()
    finally:
        component.reset(token)
    try:
        component.set("a controller")
        await exchanges(served).exchange("GET", "/", HOST, b"")
        assert seen == ["kube-apiserver"]
    finally:
        await served.__aexit__()


async def test_an_exchange_lets_the_event_loop_run_before_it_is_answered() -> None:
    ran: list[str] = []

    def handler(request: Request) -> Response:
        ran.append("handler")
        return Response(204)

    async with Served(handler) as served:
        asyncio.get_running_loop().call_soon(ran.append, "scheduled before")
        await exchanges(served).exchange("GET", "/", HOST, b"")
        assert ran == ["scheduled before", "handler"]


async def test_cancelling_an_exchange_cancels_its_handler() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def waits(request: Request) -> Response:
        started.set()
        try:
            await asyncio.sleep(WAIT * 10)  # a handler waiting on something that never comes
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return Response(204)

    async with Served(waits) as served:
        exchange = asyncio.ensure_future(exchanges(served).exchange("GET", "/", HOST, b""))
        await asyncio.wait_for(started.wait(), WAIT)
        exchange.cancel()
        await asyncio.wait_for(cancelled.wait(), WAIT)
        assert not exchanges(served).pending


async def test_a_stopped_server_refuses_and_stopping_waits_for_exchanges() -> None:
    slow = Held()
    served = Served(slow)
    await served.__aenter__()
    local = exchanges(served)
    pending = asyncio.ensure_future(local.exchange("GET", "/", HOST, b""))
    await asyncio.wait_for(slow.running.wait(), WAIT)
    stopping = asyncio.ensure_future(served.__aexit__())
    await asyncio.sleep(0)
    assert not stopping.done()
    slow.release.set()
    await asyncio.wait_for(stopping, WAIT)
    assert (await pending)[2] == b"done"
    with pytest.raises(ConnectionRefusedError):
        await local.exchange("GET", "/", HOST, b"")
