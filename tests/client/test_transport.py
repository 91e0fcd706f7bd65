"""Transport retries and timeouts, against a small HTTP peer that misbehaves on purpose.

The embedded API server never throttles, so these answers (429, 503, a stall) come from a
dedicated aiohttp server; the client under test is unchanged and speaks real HTTP to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from kubeforge import ApiError, ClusterConfig
from kubeforge._client.transport import Transport
from kubeforge.client import TooManyRequests


@dataclass
class Peer:
    """Answers each request with the next scripted (status, headers) and records it."""

    script: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)
    stall: float = 0.0
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(request.method)
        if self.stall:
            await asyncio.sleep(self.stall)
        status, headers = self.script.pop(0) if self.script else (200, {})
        body = b'{"kind":"Status","code":%d,"reason":"x","message":"scripted"}' % status
        if status < 400:
            body = b'{"ok":true}'
        return web.Response(
            status=status, body=body, headers=headers, content_type="application/json"
        )


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    p = Peer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", p.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    p.url = f"http://127.0.0.1:{port}"
    yield p
    await runner.cleanup()


def transport(peer: Peer, **options: float) -> Transport:
    return Transport(ClusterConfig(server=peer.url), **options)  # type: ignore[arg-type]


async def test_429_is_retried_honouring_retry_after(peer: Peer) -> None:
    peer.script = [(429, {"Retry-After": "0"}), (429, {"Retry-After": "0"})]
    retries: list[int | str] = []
    t = Transport(
        ClusterConfig(server=peer.url), on_retry=lambda _m, _h, code, _s: retries.append(code)
    )
    try:
        reply = await t.request("POST", "/api/v1/namespaces/default/configmaps", body=b"{}")
    finally:
        await t.close()
    assert reply.status == 200
    assert peer.seen == ["POST", "POST", "POST"]
    assert retries == [429, 429]


async def test_5xx_is_retried_for_reads_only(peer: Peer) -> None:
    peer.script = [(503, {}), (200, {})]
    t = transport(peer)
    try:
        assert (await t.request("GET", "/api/v1/pods")).status == 200
        assert peer.seen == ["GET", "GET"]
        peer.seen.clear()
        peer.script = [(503, {}), (200, {})]
        with pytest.raises(ApiError) as failed:
            await t.request("POST", "/api/v1/namespaces/default/pods", body=b"{}")
        assert failed.value.code == 503
        assert peer.seen == ["POST"]
    finally:
        await t.close()


async def test_retries_give_up_after_the_limit(peer: Peer) -> None:
    peer.script = [(429, {"Retry-After": "0"})] * 5
    t = transport(peer, max_retries=3)
    try:
        with pytest.raises(TooManyRequests):
            await t.request("GET", "/api/v1/pods")
    finally:
        await t.close()
    assert len(peer.seen) == 4


async def test_requests_time_out(peer: Peer) -> None:
    peer.stall = 0.5
    t = transport(peer, timeout=0.05)
    try:
        with pytest.raises(ConnectionError):
            await t.request("POST", "/api/v1/namespaces/default/pods", body=b"{}")
    finally:
        await t.close()


async def test_401_refreshes_credentials_once(peer: Peer) -> None:
    class Rotating:
        def __init__(self) -> None:
            self.tokens = ["old", "new"]
            self.invalidated = 0

        async def token(self) -> str:
            return self.tokens[0]

        def invalidate(self) -> None:
            self.invalidated += 1
            self.tokens.pop(0)

    creds = Rotating()
    peer.script = [(401, {}), (200, {})]
    # Credentials are only sent over TLS in production configs; the transport itself does
    # not care, so a plain-HTTP peer can observe the refresh.
    t = Transport(ClusterConfig(server=peer.url, credentials=creds))  # type: ignore[arg-type]
    try:
        assert (await t.request("GET", "/version")).status == 200
    finally:
        await t.close()
    assert creds.invalidated == 1
    assert len(peer.seen) == 2
