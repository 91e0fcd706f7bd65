"""The client's HTTP/1.1 exchanges (_client/http1.py) against a raw peer that frames its
answers by hand, so each case (keep-alive, chunked and gzip answers, connections closed while
idle or mid-request, stalls, oversized heads) happens exactly as scripted. The embedded API
server exercises the same path, over TLS, in every other integration test."""

from __future__ import annotations

import asyncio
import gzip
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from kubeforge import ClusterConfig
from kubeforge._client.http1 import MAX_CONNECTIONS
from kubeforge._client.transport import Transport
from kubeforge.testing import eventually

# request head -> raw answer (None: close at once), or a coroutine of one
Answer = Callable[[bytes], bytes | Awaitable[bytes | None] | None]


def plain(body: bytes = b'{"ok":true}', status: str = "200 OK", extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
    return head.encode() + b"Content-Length: %d\r\n\r\n" % len(body) + body


@dataclass
class Peer:
    """Answers each request with the next scripted answer; records requests and connections."""

    script: list[Answer | bytes | None] = field(default_factory=list)
    heads: list[bytes] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    connections: int = 0
    url: str = ""
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                self.heads.append(head)
                self.bodies.append(await reader.readexactly(length))
                step = self.script.pop(0) if self.script else plain()
                answer = step(head) if callable(step) else step
                if inspect.isawaitable(answer):
                    answer = await answer
                if answer is None:
                    writer.close()
                    return
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    p = Peer()
    server = await asyncio.start_server(p.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    p.url = f"http://127.0.0.1:{port}"
    yield p
    for writer in p.writers:
        writer.close()
    server.close()
    await server.wait_closed()


def transport(url: str, **options: float) -> Transport:
    return Transport(ClusterConfig(server=url), **options)  # type: ignore[arg-type]


async def test_requests_share_one_keep_alive_connection(peer: Peer) -> None:
    t = transport(peer.url)
    try:
        for _ in range(3):
            assert (await t.request("GET", "/api/v1/pods")).json() == {"ok": True}
        reply = await t.request("POST", "/api/v1/namespaces/default/pods", body=b'{"a":1}')
    finally:
        await t.close()
    assert reply.status == 200
    assert peer.connections == 1
    assert peer.bodies[-1] == b'{"a":1}'
    assert b"content-length: 7" in peer.heads[-1].lower()


async def test_concurrent_requests_each_get_a_connection(peer: Peer) -> None:
    t = transport(peer.url)
    try:
        replies = await asyncio.gather(*(t.request("GET", "/api/v1/pods") for _ in range(4)))
        await t.request("GET", "/api/v1/pods")
    finally:
        await t.close()
    assert [r.status for r in replies] == [200] * 4
    assert peer.connections == 4  # then reused: the fifth request opened none


async def test_a_burst_beyond_the_connection_limit_waits_for_free_connections(
    peer: Peer,
) -> None:
    # As Go's MaxConnsPerHost: exchanges beyond the limit wait for a connection to be free.
    burst = MAX_CONNECTIONS + 15
    release = asyncio.Event()
    arrived = 0

    async def held_until_the_limit_is_reached(head: bytes) -> bytes:
        nonlocal arrived
        arrived += 1
        if arrived == MAX_CONNECTIONS:
            release.set()
        await release.wait()
        return plain()

    peer.script = [held_until_the_limit_is_reached] * burst
    t = transport(peer.url)
    try:
        replies = await asyncio.gather(*(t.request("GET", "/api/v1/pods") for _ in range(burst)))
        await t.request("GET", "/api/v1/pods")  # reuses one of them
    finally:
        await t.close()
    assert [r.status for r in replies] == [200] * burst
    assert peer.connections == MAX_CONNECTIONS
    assert len(peer.heads) == burst + 1


async def test_a_cancelled_exchange_frees_its_place(peer: Peer) -> None:
    stalled = asyncio.Event()

    async def never(head: bytes) -> bytes | None:
        stalled.set()
        await asyncio.Event().wait()
        return None

    peer.script = [never] * MAX_CONNECTIONS
    t = transport(peer.url, max_retries=0)
    try:
        stuck = [asyncio.create_task(t.request("GET", "/stuck")) for _ in range(MAX_CONNECTIONS)]
        await stalled.wait()
        waiting = asyncio.create_task(t.request("GET", "/after"))

        async def all_dialled() -> bool:
            return peer.connections == MAX_CONNECTIONS

        await eventually(all_dialled, timeout=5)
        assert not waiting.done()
        stuck[0].cancel()
        assert (await asyncio.wait_for(waiting, 5)).status == 200
        for task in stuck[1:]:
            task.cancel()
        await asyncio.gather(*stuck, return_exceptions=True)
    finally:
        await t.close()


async def test_chunked_and_gzip_answers_are_decoded(peer: Peer) -> None:
    packed = gzip.compress(b'{"zipped":true}')
    peer.script = [
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n3\r\n12}\r\n0\r\n\r\n',
        plain(packed, extra="Content-Encoding: gzip\r\n"),
    ]
    t = transport(peer.url)
    try:
        assert (await t.request("GET", "/a")).json() == {"a": 12}
        assert (await t.request("GET", "/b")).json() == {"zipped": True}
    finally:
        await t.close()
    assert b"accept-encoding: gzip" in peer.heads[0].lower()
    assert peer.connections == 1


async def test_the_target_is_encoded_and_keeps_the_servers_path(peer: Peer) -> None:
    t = transport(peer.url + "/prefix/")
    try:
        await t.request(
            "GET",
            "/api/v1/namespaces/default/pods/p/proxy/a b/%2F/100%",
            params={"labelSelector": "app in (a,b),tier!=x", "limit": "5"},
        )
    finally:
        await t.close()
    target = peer.heads[0].split(b"\r\n")[0].split(b" ")[1]
    assert target == (
        b"/prefix/api/v1/namespaces/default/pods/p/proxy/a%20b/%2F/100%25"
        b"?labelSelector=app+in+%28a%2Cb%29%2Ctier%21%3Dx&limit=5"
    )


async def test_a_connection_the_server_closed_while_idle_is_not_used(peer: Peer) -> None:
    t = transport(peer.url)
    try:
        await t.request("GET", "/first")
        for writer in peer.writers:
            writer.close()
        pool = t._pool
        assert pool is not None

        async def noticed() -> bool:
            return not any(conn.usable() for conn in pool._idle)

        await eventually(noticed, timeout=5)
        reply = await t.request("POST", "/second", body=b"{}")
    finally:
        await t.close()
    assert reply.status == 200
    assert peer.connections == 2
    assert len(peer.heads) == 2  # the POST was sent once, on the new connection


async def test_a_read_on_a_connection_closed_before_answering_is_sent_again(peer: Peer) -> None:
    t = transport(peer.url, max_retries=0)
    try:
        await t.request("GET", "/warm")
        peer.script = [None]  # read the next request, then close without a word
        assert (await t.request("GET", "/again")).status == 200
    finally:
        await t.close()
    assert [h.split(b" ")[1] for h in peer.heads] == [b"/warm", b"/again", b"/again"]
    assert peer.connections == 2


async def test_a_write_on_a_connection_closed_before_answering_is_not_sent_again(
    peer: Peer,
) -> None:
    t = transport(peer.url, max_retries=0)
    try:
        await t.request("GET", "/warm")
        peer.script = [None]
        with pytest.raises(ConnectionError, match="POST /create"):
            await t.request("POST", "/create", body=b"{}")
    finally:
        await t.close()
    assert [h.split(b" ")[0] for h in peer.heads] == [b"GET", b"POST"]


async def test_a_stalled_answer_times_out_and_its_connection_is_dropped(peer: Peer) -> None:
    peer.script = [b""]  # read the request, answer nothing, keep the connection open
    t = transport(peer.url, timeout=0.1, max_retries=0)
    try:
        with pytest.raises(ConnectionError, match="GET /slow"):
            await t.request("GET", "/slow")
        assert (await t.request("GET", "/next")).status == 200
    finally:
        await t.close()
    assert peer.connections == 2  # the stalled connection was not reused


async def test_malformed_and_oversized_answers_fail_cleanly(peer: Peer) -> None:
    huge = "X-Filler: " + "x" * 8000 + "\r\n"
    peer.script = [b"NOT HTTP AT ALL\r\n\r\n", plain(extra=huge * 200)]
    t = transport(peer.url, max_retries=0)
    try:
        with pytest.raises(ConnectionError, match="malformed"):
            await t.request("GET", "/bad")
        with pytest.raises(ConnectionError, match="headers exceed"):
            await t.request("GET", "/huge")
        assert (await t.request("GET", "/fine")).status == 200
    finally:
        await t.close()


async def test_header_values_cannot_carry_line_breaks(peer: Peer) -> None:
    class Sneaky:
        async def token(self) -> str:
            return "abc\r\nX-Injected: yes"

        def invalidate(self) -> None:
            pass

    t = Transport(ClusterConfig(server=peer.url, credentials=Sneaky()))  # type: ignore[arg-type]
    try:
        with pytest.raises(ValueError, match="line break"):
            await t.request("GET", "/api")
    finally:
        await t.close()
    assert peer.heads == []


async def test_error_answers_keep_their_status_and_headers(peer: Peer) -> None:
    body = b'{"kind":"Status","code":429,"reason":"TooManyRequests","message":"slow down"}'
    peer.script = [plain(body, "429 Too Many Requests", "Retry-After: 0\r\n"), plain()]
    retries: list[int | str] = []
    t = Transport(
        ClusterConfig(server=peer.url), on_retry=lambda _m, _h, code, _s: retries.append(code)
    )
    try:
        assert (await t.request("POST", "/x", body=b"{}")).status == 200
    finally:
        await t.close()
    assert retries == [429]
