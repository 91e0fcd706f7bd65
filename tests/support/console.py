"""The console over a test cluster, and a browser-like session of it (cookies kept)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from kubeforge._client.client import Client
from kubeforge._console.server import Console
from kubeforge._testing.env import TestEnv


class ConsoleSession:
    """HTTP to a console as its page makes it: logged in with the link's token."""

    def __init__(self, console: Console, session: aiohttp.ClientSession) -> None:
        self.console = console
        self.session = session

    async def login(self) -> aiohttp.ClientResponse:
        token = self.console.login_url.partition("#login=")[2]
        async with self.session.post(
            f"{self.console.url}/api/session", json={"token": token}
        ) as reply:
            await reply.read()
            return reply

    async def get(self, path: str, **params: str) -> tuple[int, Any]:
        async with self.session.get(f"{self.console.url}{path}", params=params) as reply:
            body = await reply.read()
            try:
                return reply.status, await reply.json(content_type=None)
            except ValueError:
                return reply.status, body.decode()


@asynccontextmanager
async def console_session(
    testenv: TestEnv, *, login: bool = True, **options: Any
) -> AsyncIterator[ConsoleSession]:
    """A console of `testenv`'s cluster, its built-in controllers observed, and a session
    of it (logged in unless `login=False`)."""
    assert testenv.cluster is not None and testenv.config is not None
    console = Console(Client(testenv.config), **options)
    if testenv.cluster.manager is not None:
        console.observe(testenv.cluster.manager, "kube-controller-manager")
    await console.start()
    # Cookies of an IP address are kept too: the console is http://127.0.0.1:<port>.
    jar = aiohttp.CookieJar(unsafe=True)
    try:
        async with aiohttp.ClientSession(cookie_jar=jar) as session:
            browser = ConsoleSession(console, session)
            if login:
                reply = await browser.login()
                assert reply.status == 200
            yield browser
    finally:
        await console.stop()
