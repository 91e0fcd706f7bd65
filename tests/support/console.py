"""The console over a test cluster, and a browser-like session of it (cookies kept)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from kubeforge._client.client import Client
from kubeforge._console.server import Console
from kubeforge._testing.env import TestEnv
from kubeforge.testing import DevProcess, Kubectl, eventually
from tests.support import KUBEFORGE, kubectl_for, kubeforge


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


CONSOLE_LINE = re.compile(r"^console: (http://127\.0\.0\.1:\d+)/#login=(\S+)$", re.MULTILINE)


class Background:
    """`kubeforge ARGS` running in the background, what it prints collected as it comes."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.args = args
        self.cwd = cwd
        self.output = bytearray()
        self.process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace")

    async def __aenter__(self) -> Background:
        self.process = await asyncio.create_subprocess_exec(
            *KUBEFORGE,
            *self.args,
            cwd=self.cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "NO_COLOR": "1"},
        )
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        while chunk := await self.process.stdout.read(65536):
            self.output += chunk

    async def console(self) -> tuple[str, str]:
        """The console's address and login token, once the command printed them."""

        def printed() -> re.Match[str] | None:
            assert self.process is not None
            assert self.process.returncode is None, self.text
            return CONSOLE_LINE.search(self.text)

        found = await eventually(printed, timeout=60)
        return found.group(1), found.group(2)

    async def __aexit__(self, *exc: object) -> None:
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), 30)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        if self._reader is not None:
            await self._reader


async def logged_in(url: str, token: str) -> aiohttp.ClientSession:
    """A session of the console at `url`, logged in with `token` (close it after use)."""
    session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    async with session.post(f"{url}/api/session", json={"token": token}) as reply:
        assert reply.status == 200, await reply.text()
    return session


@asynccontextmanager
async def run_against_dev(
    project: Path, tmp_path: Path
) -> AsyncIterator[tuple[Background, Kubectl]]:
    """`kubeforge dev` (no console of its own), the project's CRDs installed, and `kubeforge
    run` of the project against it, each a process of its own; kubectl pointed at the
    cluster."""
    kubeconfig = tmp_path / "kubeconfig"
    async with DevProcess("--no-console", kubeconfig=kubeconfig, cwd=tmp_path):
        installed = await kubeforge(
            "install", "--dir", str(project), "--kubeconfig", str(kubeconfig)
        )
        assert installed.code == 0, installed.out + installed.err
        args = ["run", "--dir", str(project), "--kubeconfig", str(kubeconfig)]
        args += ["--health-probe-bind-address", "0", "--webhook-port", "0"]
        async with Background(*args, cwd=tmp_path) as run:
            yield run, kubectl_for(kubeconfig, tmp_path / "kubectl")
