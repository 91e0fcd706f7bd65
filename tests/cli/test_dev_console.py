"""`kubeforge dev` serves the console and prints one line a script can find it by."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from kubeforge.testing import DevProcess, eventually
from tests.support.console import CONSOLE_LINE


async def test_dev_prints_the_console_link_and_the_link_logs_in(tmp_path: Path) -> None:
    async with DevProcess(kubeconfig=tmp_path / "kubeconfig", cwd=tmp_path) as dev:
        found = await eventually(lambda: CONSOLE_LINE.search(dev.output))
        assert len(CONSOLE_LINE.findall(dev.output)) == 1
        url, token = found.group(1), found.group(2)
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as browser:
            async with browser.post(f"{url}/api/session", json={"token": token}) as reply:
                assert reply.status == 200
            async with browser.get(f"{url}/api/overview") as reply:
                assert reply.status == 200
                overview = await reply.json()
        assert overview["managers"] == ["kube-controller-manager"]
        assert any(k["key"] == "v1/Pod" for k in overview["kinds"])


async def test_no_console_serves_none(tmp_path: Path) -> None:
    async with DevProcess("--no-console", kubeconfig=tmp_path / "kubeconfig", cwd=tmp_path) as dev:
        await eventually(lambda: "Ctrl-C stops the cluster" in dev.output)
        assert "console:" not in dev.output
