"""The `kubeforge` command: `apiserver` in the foreground and `demo`."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import ssl
import sys
from pathlib import Path

import aiohttp
import yaml

from kubeforge.testing import Kubectl, eventually
from tests.support import free_port

KUBEFORGE = [sys.executable, "-m", "kubeforge._cli.main"]


async def test_apiserver_command_serves_https_with_a_token(tmp_path: Path) -> None:
    port = free_port()
    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        *KUBEFORGE,
        "apiserver",
        "--port",
        str(port),
        "--kubeconfig",
        str(kubeconfig),
        "--header-timeout",
        "0.5",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:

        async def written() -> bool:
            return kubeconfig.exists()

        await eventually(written, timeout=30)
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["current-context"] == "kubeforge"
        cluster = config["clusters"][0]["cluster"]
        assert cluster["server"] == f"https://127.0.0.1:{port}"
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"

        cache = tmp_path / "cache"
        cache.mkdir()
        kubectl = Kubectl(kubeconfig, cache_dir=cache, env={"HOME": str(cache)})
        out = (await kubectl.run("get", "namespaces", "-o", "name")).out
        assert "namespace/kube-system" in out.split()

        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        ctx = ssl.create_default_context(cadata=ca)
        connector = aiohttp.TCPConnector(ssl=ctx)
        url = f"https://127.0.0.1:{port}/api/v1/namespaces"
        async with aiohttp.ClientSession(connector=connector) as session, session.get(url) as r:
            assert r.status == 401

        # --header-timeout: a client that connects and says nothing is let go (default 32 s).
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, out.decode()
    assert b"listening on https://127.0.0.1" in out


async def test_demo_runs_end_to_end() -> None:
    proc = await asyncio.create_subprocess_exec(
        *KUBEFORGE,
        "demo",
        "apiserver",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    text = out.decode()
    assert proc.returncode == 0, text
    assert "MODIFIED   hello" in text and "DELETED    hello" in text
    assert "spec.message" in text  # the invalid object was rejected with its field path
    assert "Traceback" not in text
    assert "demo finished" in text


async def test_unknown_demo_is_an_error() -> None:
    proc = await asyncio.create_subprocess_exec(
        *KUBEFORGE, "demo", "nope", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode != 0
    assert b"no demo 'nope'; choose one of: apiserver" in out
