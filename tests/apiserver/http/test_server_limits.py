"""Timeouts and the connection cap: slow or idle clients cannot hold the server's connections.

Timeouts are a fraction of a second here. Tests wait on what the server does (a connection
answered or closed), never for a fixed time; the only timed pauses are a slow client's own
pacing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from kubeforge._apiserver.http import server as httpserver
from kubeforge._apiserver.http.messages import Request, Response, ResponseStream
from kubeforge._apiserver.http.server import ConnectionLimits, connection_cap
from kubeforge._apiserver.tls import ServingCertificates, generate_certificates
from tests.support.rawhttp import (
    HEAD_LIMIT,
    LAST_CHUNK,
    WAIT,
    Client,
    Served,
    chunk,
    echo,
    echo_now,
    echoed,
    expected,
    get,
    refused,
    stream_head,
)

TIMEOUT = 0.3
QUICK = ConnectionLimits(
    header_timeout=TIMEOUT, body_timeout=TIMEOUT, idle_timeout=TIMEOUT, max_header_bytes=HEAD_LIMIT
)


@pytest.fixture(scope="module")
def certs() -> ServingCertificates:
    return generate_certificates()


@pytest.fixture(params=["plain", "tls"])
def tls(request: pytest.FixtureRequest, certs: ServingCertificates) -> ServingCertificates | None:
    return certs if request.param == "tls" else None


async def until(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    """Wait for `condition` to hold, checking every few milliseconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "the condition did not come true in time"
        await asyncio.sleep(0.005)


async def closed_by_server(served: Served) -> Client:
    """A connection that sent nothing, once the server has closed it (its head timeout)."""
    conn = await served.connect()
    assert await conn.eof() == b""
    return conn


# the head timeout --------------------------------------------------------------------------


async def test_partial_heads_are_answered_408_and_closed(
    tls: ServingCertificates | None,
) -> None:
    async with Served(echo, certs=tls, limits=QUICK) as served:
        slow = [await served.connect() for _ in range(10)]
        for conn in slow:
            conn.send(b"GET /slowloris HTTP/1.1\r\nHost: te")
        await served.still_serving()  # while they hang on
        for conn in slow:
            assert await conn.answer() == refused(408, close=True)
            assert await conn.eof() == b""
        assert served.error_codes == [408] * 10
        await served.still_serving()


async def test_a_head_sent_byte_by_byte_gets_no_more_time() -> None:
    # Each byte arrives well within the timeout, but the head as a whole must arrive within
    # it: progress does not move the deadline.
    head = get("/trickle", "X-Padding: " + "p" * 1000)
    async with Served(echo, limits=QUICK) as served:
        conn = await served.connect()
        loop = asyncio.get_running_loop()
        started = loop.time()
        sent = 0
        while not served.errors and sent < len(head):
            conn.send(head[sent : sent + 1])
            sent += 1
            await asyncio.sleep(0.01)  # the slow client's pace
        assert sent < len(head), "the whole head was accepted at one byte every 10 ms"
        assert loop.time() - started >= TIMEOUT
        assert await conn.answer() == refused(408, close=True)
        assert await conn.eof() == b""


async def test_a_connection_that_sends_nothing_is_closed(tls: ServingCertificates | None) -> None:
    async with Served(echo, certs=tls, limits=QUICK) as served:
        await closed_by_server(served)
        assert served.errors == []  # nothing to answer: closed without a word
        await served.still_serving()


async def test_a_tls_handshake_never_started_is_closed(certs: ServingCertificates) -> None:
    # A TCP connection to the TLS port that never says hello.
    async with Served(echo, certs=certs, limits=QUICK) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        try:
            assert await asyncio.wait_for(reader.read(), WAIT) == b""
        finally:
            writer.close()
        await served.still_serving()


async def test_pipelined_head_behind_a_slow_answer_is_not_timed_out() -> None:
    # While the server works on a request, the clock of the partial request behind it is
    # stopped: the client is waiting for the server, not the other way round.
    release = asyncio.Event()

    async def handler(request: Request) -> Response:
        if request.path == "/slow":
            await release.wait()
        return echo_now(request)

    async with Served(handler, limits=QUICK) as served:
        conn = await served.connect()
        conn.send(get("/slow") + b"GET /next HTTP/1.1\r\nHo")
        await closed_by_server(served)  # one head timeout has gone by
        await closed_by_server(served)  # and another
        release.set()
        assert await conn.response() == echoed("GET /slow")
        conn.send(b"st: test\r\n\r\n")
        assert await conn.response() == echoed("GET /next")
        assert served.errors == []


# the body timeout --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "partial",
    [
        b"POST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: 10\r\n\r\nabc",
        b"POST /upload HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        b"POST /upload HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"
        + chunk(b"hello")
        + b"0\r\nX-Trailer: 1\r\n",
    ],
    ids=["content-length", "chunked", "trailers"],
)
async def test_partial_bodies_are_answered_408_and_closed(
    partial: bytes, tls: ServingCertificates | None
) -> None:
    async with Served(echo, certs=tls, limits=QUICK) as served:
        conn = await served.connect()
        conn.send(partial)
        assert await conn.answer() == refused(408, close=True)
        assert await conn.eof() == b""
        assert served.error_codes == [408]
        await served.still_serving()


async def test_the_body_timeout_starts_with_the_body() -> None:
    # A head that took most of the head timeout does not shorten the body's time.
    limits = ConnectionLimits(header_timeout=0.3, body_timeout=5.0, max_header_bytes=HEAD_LIMIT)
    async with Served(echo, limits=limits) as served:
        conn = await served.connect()
        conn.send(b"POST /late HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\n\r\n")
        await closed_by_server(served)  # a head timeout has gone by since
        conn.send(b"abc")
        assert await conn.response() == echoed("POST /late", b"abc")


# the idle timeout --------------------------------------------------------------------------


async def test_idle_keep_alive_connection_is_closed(tls: ServingCertificates | None) -> None:
    async with Served(echo, certs=tls, limits=QUICK) as served:
        conn = await served.connect()
        conn.send(get("/once"))
        assert await conn.response() == echoed("GET /once")
        assert await conn.eof() == b""
        await until(lambda: not served.http.connections)
        assert served.errors == []


async def test_each_request_restarts_the_idle_timeout() -> None:
    # A client busy for twice the idle timeout, on one connection, is never cut off.
    async with Served(echo, limits=QUICK) as served:
        conn = await served.connect()
        loop = asyncio.get_running_loop()
        started = loop.time()
        count = 0
        while loop.time() - started < 2 * TIMEOUT:
            conn.send(get(f"/r/{count}"))
            assert await conn.response() == echoed(f"GET /r/{count}")
            count += 1
        assert served.errors == []
        assert len(served.http.connections) == 1


# long answers --------------------------------------------------------------------------


async def test_streams_and_slow_answers_outlive_every_timeout(
    tls: ServingCertificates | None,
) -> None:
    # A watch or a followed log is quiet for as long as nothing happens, and a request may
    # take the server long: neither is the client being slow.
    release = asyncio.Event()

    async def handler(request: Request) -> Response | ResponseStream:
        if request.path == "/watch":
            stream = request.stream(200, {"Content-Type": "text/plain"})
            await stream.write(b"first")
            await release.wait()
            await stream.write(b"second")
            return stream
        if request.path == "/slow":
            await release.wait()
        return echo_now(request)

    async with Served(handler, certs=tls, limits=QUICK) as served:
        watch = await served.connect()
        watch.send(get("/watch"))
        assert await watch.head() == stream_head()
        assert await watch.exactly(len(chunk(b"first"))) == chunk(b"first")
        slow = await served.connect()
        slow.send(get("/slow"))
        for _ in range(3):  # three timeouts go by
            await closed_by_server(served)
        release.set()
        assert await watch.exactly(len(chunk(b"second") + LAST_CHUNK)) == (
            chunk(b"second") + LAST_CHUNK
        )
        assert await slow.response() == echoed("GET /slow")
        watch.send(get("/next"))
        assert await watch.response() == echoed("GET /next")
        assert served.errors == []


# the connection cap ------------------------------------------------------------------------

TOO_MANY = expected(429, b"error 429", [("Retry-After", "1")], close=True)


async def test_connections_over_the_cap_are_answered_429(
    tls: ServingCertificates | None,
) -> None:
    limits = ConnectionLimits(max_connections=3, max_header_bytes=HEAD_LIMIT)
    async with Served(echo, certs=tls, limits=limits) as served:
        open_ = []
        for i in range(3):
            conn = await served.connect()
            conn.send(get(f"/mine/{i}"))
            assert await conn.response() == echoed(f"GET /mine/{i}")
            open_.append(conn)
        for _ in range(2):
            extra = await served.connect()
            extra.send(get("/api/v1/namespaces"))
            assert await extra.answer() == TOO_MANY
            assert await extra.eof() == b""
        assert served.error_codes == [429, 429]
        # Probes are never turned away (kube-apiserver exempts them from throttling): one
        # over the cap is answered, and its connection closed after.
        for probe in ("/readyz", "/livez?verbose", "/healthz/ping"):
            extra = await served.connect()
            extra.send(get(probe))
            assert await extra.answer() == echoed(f"GET {probe}", close=True)
            assert await extra.eof() == b""
        # The connections already open go on being served.
        for conn in open_:
            conn.send(get("/readyz"))
            assert await conn.response() == echoed("GET /readyz")
        # Once one goes, a new client is served again.
        await open_.pop().close()
        await until(lambda: len(served.http.connections) == 2)
        await served.still_serving()
        assert len(served.http.connections) == 3


async def test_refusing_is_bounded_too() -> None:
    # Connections over the cap that send nothing cannot pile up either: past a bound, the
    # oldest waiting one is closed for each new one, so a probe always gets in; those left
    # waiting are closed at their head timeout.
    limits = ConnectionLimits(max_connections=1, header_timeout=1.0, max_header_bytes=HEAD_LIMIT)
    async with Served(echo, limits=limits) as served:
        mine = await served.connect()
        mine.send(get("/mine"))
        assert await mine.response() == echoed("GET /mine")
        waiting = [await served.connect() for _ in range(httpserver._MAX_REFUSING)]
        await until(lambda: len(served.http.refusing) == httpserver._MAX_REFUSING)
        for i in range(3):
            probe = await served.connect()
            probe.send(get("/readyz"))
            assert await probe.answer() == echoed("GET /readyz", close=True)
            assert await probe.eof() == b""
            assert await waiting[i].eof() == b""  # the oldest made room
        assert len(served.http.refusing) <= httpserver._MAX_REFUSING
        assert served.errors == []
        for conn in waiting:
            assert await conn.eof() == b""
        assert not served.http.refusing
        late = await served.connect()
        late.send(get("/api"))
        assert await late.answer() == TOO_MANY
        mine.send(get("/still"))
        assert await mine.response() == echoed("GET /still")


def test_the_soft_open_file_limit_is_raised_to_the_hard_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    limits = {"now": (256, 4096)}
    monkeypatch.setattr(httpserver.resource, "getrlimit", lambda _: limits["now"])
    monkeypatch.setattr(
        httpserver.resource, "setrlimit", lambda _, value: limits.__setitem__("now", value)
    )
    assert httpserver.raise_open_file_limit() == 4096
    assert limits["now"] == (4096, 4096)

    def refuse(_: int, value: tuple[int, int]) -> None:
        raise ValueError("not allowed")

    limits["now"] = (256, httpserver.resource.RLIM_INFINITY)
    monkeypatch.setattr(httpserver.resource, "setrlimit", refuse)
    assert httpserver.raise_open_file_limit() == 256


def test_the_cap_fits_the_open_file_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    assert connection_cap(1024, open_files=1_048_576) == 1024
    assert connection_cap(1024, open_files=1024) == 1024 - 256 - 64
    assert connection_cap(1024, open_files=100) == 1
    monkeypatch.setattr(httpserver.resource, "getrlimit", lambda _: (1000, 4096))
    assert connection_cap(5000) == 1000 - 256 - 64


async def test_a_cap_above_the_open_file_limit_is_lowered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A hard limit of 322: the server cannot raise the soft one past it.
    monkeypatch.setattr(httpserver.resource, "getrlimit", lambda _: (322, 322))
    limits = ConnectionLimits(max_connections=500, max_header_bytes=HEAD_LIMIT)
    async with Served(echo, limits=limits) as served:
        assert served.http.max_connections == 2
        first, second = await served.connect(), await served.connect()
        for conn in (first, second):
            conn.send(get("/in"))
            assert await conn.response() == echoed("GET /in")
        third = await served.connect()
        third.send(get("/in"))
        assert await third.answer() == TOO_MANY


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("header_timeout", 0),
        ("body_timeout", -1.0),
        ("idle_timeout", 0.0),
        ("max_connections", 0),
        ("max_header_bytes", 100),
    ],
)
def test_limits_must_be_positive(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        ConnectionLimits(**{field: value})


# the head size -----------------------------------------------------------------------------


async def test_a_head_over_the_limit_behind_pipelined_requests_is_refused() -> None:
    # The read that completes the requests before it is not counted toward the head that
    # follows them (where that head begins is the parser's to know); the next read is.
    async with Served(echo) as served:
        conn = await served.connect()
        conn.send(get("/first") + b"GET /big HTTP/1.1\r\nHost: test\r\nX-Big: " + b"a" * 1000)
        assert await conn.response() == echoed("GET /first")
        conn.send(b"a" * (HEAD_LIMIT + 1))
        assert await conn.answer() == refused(400, close=True)
        assert await conn.eof() == b""
        assert served.errors == [(400, "request headers too large")]


@pytest.mark.parametrize("pieces", [1, 3])
async def test_a_head_just_within_the_limit_is_served(pieces: int) -> None:
    filler = "f" * (HEAD_LIMIT - 200)
    request = get("/edge", "X-Filler: " + filler)
    assert HEAD_LIMIT - 200 < len(request) <= HEAD_LIMIT
    async with Served(echo) as served:
        conn = await served.connect()
        size = -(-len(request) // pieces)
        for start in range(0, len(request), size):
            conn.send(request[start : start + size])
            await asyncio.sleep(0)
        assert await conn.response() == echoed("GET /edge")
