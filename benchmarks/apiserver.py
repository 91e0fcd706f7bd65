"""API server throughput: creates/s, updates/s and watch fan-out, against a trivial aiohttp
handler measured in the same run (the ceiling for Python HTTP on this machine).

    python benchmarks/apiserver.py [--seconds 5] [--connections 32] [--events 20000]

Each server runs in its own process (one core) and is loaded by `wrk` (a C client, on the
other core) over HTTPS with keep-alive. For reference it also measures the same trivial answer
served by the API server's own HTTP layer (_apiserver/http/). Watch fan-out is
measured with 10 watch streams while the server commits writes as fast as it can in-process,
so the number is the fan-out capacity rather than the HTTP write rate.

Next to each rate it prints the server process's CPU time per request (user and system, from
/proc): on a machine with other load the rates swing with the CPU the server gets, while the
CPU each request costs, and so the ratio of those, stays put.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

HERE = Path(__file__).resolve().parent
CREATE_LUA = """
local counter = 0
local thread_id = 0
setup = function(thread)
  thread:set("tid", thread_id)
  thread_id = thread_id + 1
end
request = function()
  counter = counter + 1
  local body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c-' .. tid .. '-' ..
    counter .. '","labels":{"app":"bench"}},"data":{"key":"' .. string.rep("x", 200) .. '"}}'
  return wrk.format("POST", "/api/v1/namespaces/default/configmaps", nil, body)
end
"""
UPDATE_LUA = """
local counter = 0
request = function()
  counter = counter + 1
  local name = "u-" .. (counter % 64)
  local body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"' .. name ..
    '"},"data":{"key":"' .. counter .. string.rep("y", 200) .. '"}}'
  return wrk.format("PUT", "/api/v1/namespaces/default/configmaps/" .. name, nil, body)
end
"""
TRIVIAL_LUA = """
request = function()
  local body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t"},"data":{"key":"' ..
    string.rep("x", 200) .. '"}}'
  return wrk.format("POST", "/api/v1/namespaces/default/configmaps", nil, body)
end
"""


# Server processes ------------------------------------------------------------------------


async def serve_trivial(info_path: Path) -> None:
    """A handler that does nothing but answer JSON, over the same kind of TLS."""
    from aiohttp import web

    from kubeforge._apiserver.tls import generate_certificates

    certs = generate_certificates()

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(
            status=201,
            body=b'{"kind":"Status","status":"Success"}',
            content_type="application/json",
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=certs.server_context(), backlog=1024)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    info_path.write_text(json.dumps({"url": f"https://127.0.0.1:{port}", "token": ""}))
    await asyncio.Event().wait()


async def serve_trivial_own(info_path: Path) -> None:
    """The same trivial answer through the API server's own HTTP layer, for reference."""
    from kubeforge._apiserver.http.messages import Request, Response
    from kubeforge._apiserver.http.server import HTTPServer
    from kubeforge._apiserver.tls import generate_certificates

    certs = generate_certificates()

    def handle(request: Request) -> Response:
        return Response(201, b'{"kind":"Status","status":"Success"}')

    server = HTTPServer(handle, max_body_bytes=3 << 20, error=lambda code, text: Response(code))
    port = await server.start("127.0.0.1", 0, certs.server_context())
    info_path.write_text(json.dumps({"url": f"https://127.0.0.1:{port}", "token": ""}))
    await asyncio.Event().wait()


async def serve_kubeforge(info_path: Path, events: int) -> None:
    """The embedded API server, plus an in-process write loop for the fan-out test."""
    from kubeforge._apiserver.handlers.call import Call
    from kubeforge._apiserver.handlers.writes import run_now
    from kubeforge._apiserver.request.info import RequestInfo
    from kubeforge.apiserver import APIServer, tune_gc

    server = APIServer()
    await server.start()
    tune_gc()  # as `kubeforge apiserver` does
    ca = info_path.with_suffix(".ca")
    ca.write_bytes(server.ca_pem)
    info_path.write_text(json.dumps({"url": server.url, "token": server.token, "ca": str(ca)}))
    rt = server.registry.get("", "v1", "configmaps")
    assert rt is not None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        if line.strip() == b"fanout":
            info = RequestInfo("", "v1", "default", "configmaps", None, None, "create")
            for i in range(events):
                body = {
                    "metadata": {"name": f"f-{i}"},
                    "data": {"key": "z" * 200},
                }
                run_now(server.writes.create(Call(info, rt, {}), body))
                if i % 50 == 49:
                    await asyncio.sleep(0)  # let the watch streams flush


# Load ------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Rate:
    """What wrk reached: requests per second, and the server's CPU µs per request."""

    def __init__(self, per_second: float, cpu_us: float) -> None:
        self.per_second = per_second
        self.cpu_us = cpu_us


def wrk(url: str, token: str, script: str, seconds: int, connections: int, pid: int) -> Rate:
    """Load the server at `url` (process `pid`) with wrk; non-2xx answers are failures."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
        f.write(f'\nwrk.headers["Authorization"] = "Bearer {token}"\n')
        f.write('wrk.headers["Content-Type"] = "application/json"\n')
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-s", f.name, url]
    cpu_before = cpu_seconds(pid)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    cpu = cpu_seconds(pid) - cpu_before
    os.unlink(f.name)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad and int(bad.group(1)) > 0:
        raise RuntimeError(f"{bad.group(1)} failed requests:\n{out}")
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    done = re.search(r"(\d+) requests in", out)
    assert match and done, out
    return Rate(float(match.group(1)), cpu / int(done.group(1)) * 1e6)


def start(kind: str, tmp: Path, events: int) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    info = tmp / f"{kind}.json"
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind, "--info", str(info), "--events", str(events)],
        stdin=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not info.exists() or not info.read_text():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError(f"{kind} server did not start")
        time.sleep(0.05)
    return proc, json.loads(info.read_text())


async def fanout(info: dict[str, Any], proc: subprocess.Popen[bytes], events: int) -> float:
    """Events delivered per second across 10 watchers while the server writes `events`."""
    ctx = ssl.create_default_context(cafile=info["ca"])
    headers = {"Authorization": f"Bearer {info['token']}"}
    url = info["url"] + "/api/v1/namespaces/default/configmaps"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
        rv = (await (await session.get(url, headers=headers)).json())["metadata"]["resourceVersion"]
        first: list[float] = []
        done: list[float] = []

        async def watcher() -> None:
            seen = 0
            async with session.get(
                f"{url}?watch=true&resourceVersion={rv}", headers=headers, timeout=None
            ) as r:
                async for chunk in r.content.iter_any():
                    if not first:
                        first.append(time.perf_counter())
                    seen += chunk.count(b"\n")
                    if seen >= events:
                        done.append(time.perf_counter())
                        return

        tasks = [asyncio.create_task(watcher()) for _ in range(10)]
        await asyncio.sleep(0.5)  # let every watch connect before writes start
        assert proc.stdin is not None
        start_time = time.perf_counter()
        proc.stdin.write(b"fanout\n")
        proc.stdin.flush()
        await asyncio.wait_for(asyncio.gather(*tasks), 300)
        return 10 * events / (max(done) - start_time)


async def seed(info: dict[str, Any], count: int) -> None:
    ctx = ssl.create_default_context(cafile=info["ca"])
    headers = {"Authorization": f"Bearer {info['token']}"}
    url = info["url"] + "/api/v1/namespaces/default/configmaps"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
        for i in range(count):
            body = {"metadata": {"name": f"u-{i}"}, "data": {}}
            async with session.post(url, json=body, headers=headers) as r:
                assert r.status == 201, await r.text()


def trivial_rate(kind: str, tmp: Path, args: argparse.Namespace) -> Rate:
    proc, info = start(kind, tmp, args.events)
    try:
        return wrk(info["url"], "", TRIVIAL_LUA, args.seconds, args.connections, proc.pid)
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--serve", choices=["trivial", "trivial-own", "kubeforge"])
    parser.add_argument("--info", type=Path)
    args = parser.parse_args()

    if args.serve == "trivial":
        asyncio.run(serve_trivial(args.info))
        return
    if args.serve == "trivial-own":
        asyncio.run(serve_trivial_own(args.info))
        return
    if args.serve == "kubeforge":
        asyncio.run(serve_kubeforge(args.info, args.events))
        return

    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install wrk (make bench installs it)")
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        ceiling = trivial_rate("trivial", tmp, args)
        own = trivial_rate("trivial-own", tmp, args)
        proc, info = start("kubeforge", tmp, args.events)
        url, token = info["url"], info["token"]
        try:
            creates = wrk(url, token, CREATE_LUA, args.seconds, args.connections, proc.pid)
            asyncio.run(seed(info, 64))  # the objects the update load replaces
            updates = wrk(url, token, UPDATE_LUA, args.seconds, args.connections, proc.pid)
            delivered = asyncio.run(fanout(info, proc, args.events))
        finally:
            proc.kill()
            proc.wait()

    rows = [
        ("trivial aiohttp handler (ceiling)", ceiling),
        ("trivial handler, kubeforge's HTTP layer", own),
        ("kubeforge creates (POST ConfigMap)", creates),
        ("kubeforge updates (PUT ConfigMap)", updates),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'measure':<{width}}  {'per second':>10}  {'vs ceiling':>10}  {'CPU µs':>7}  by CPU")
    for name, rate in rows:
        print(
            f"{name:<{width}}  {rate.per_second:>10,.0f}  "
            f"{rate.per_second / ceiling.per_second:>9.2f}x  {rate.cpu_us:>7.1f}  "
            f"{ceiling.cpu_us / rate.cpu_us:>5.2f}x"
        )
    print(f"{'watch events delivered, 10 watchers':<{width}}  {delivered:>10,.0f}  events/s")


if __name__ == "__main__":
    main()
