"""The API server under too many or too slow clients: Status answers, probes still served."""

from __future__ import annotations

import asyncio
import base64
import resource
import ssl
from pathlib import Path

import orjson
import yaml

from kubeforge.apiserver import APIServer, ConnectionLimits
from kubeforge.testing import DevProcess, Kubectl, eventually, find_kubectl
from tests.support import connect, free_port


class Raw:
    """One TLS connection speaking HTTP/1.1 by hand."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, server: APIServer) -> Raw:
        context = ssl.create_default_context(cadata=server.ca_pem.decode())
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", server.port, ssl=context), 5
        )
        return cls(reader, writer)

    async def ask(self, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        self.writer.write(raw)
        return await self.answer()

    async def answer(self) -> tuple[int, dict[str, str], bytes]:
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), 5)
        status_line, *lines = head.decode("latin-1").split("\r\n")[:-2]
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.lower()] = value.strip()
        body = await self.reader.readexactly(int(headers["content-length"]))
        return int(status_line.split()[1]), headers, body

    async def closed(self) -> bool:
        return await asyncio.wait_for(self.reader.read(), 5) == b""

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except OSError:
            pass


READYZ = b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
VERSION = b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def test_over_the_cap_clients_get_429_and_probes_keep_answering() -> None:
    limits = ConnectionLimits(max_connections=3, header_timeout=1.0)
    async with APIServer(connections=limits) as server:
        held = [await Raw.open(server) for _ in range(3)]
        try:
            for conn in held:
                assert (await conn.ask(READYZ))[0] == 200
            extra = await Raw.open(server)
            status, headers, body = await extra.ask(VERSION)
            assert status == 429
            assert headers["retry-after"] == "1"
            assert headers["connection"] == "close"
            assert orjson.loads(body) == {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "Too many requests, please try again later.",
                "reason": "TooManyRequests",
                "details": {"retryAfterSeconds": 1},
                "code": 429,
            }
            assert await extra.closed()
            # A probe is never turned away: answered over the cap, then closed.
            probe = await Raw.open(server)
            status, headers, body = await probe.ask(READYZ)
            assert (status, headers["connection"], body) == (200, "close", b"ok")
            assert await probe.closed()
            for conn in held:
                assert (await conn.ask(READYZ))[0] == 200  # those in keep being served
            await held.pop().close()

            async def served_again() -> bool:
                conn = await Raw.open(server)
                held.append(conn)
                return (await conn.ask(READYZ))[0] == 200

            await eventually(served_again, timeout=5)
        finally:
            for conn in held:
                await conn.close()


async def test_a_slow_request_gets_a_408_status() -> None:
    limits = ConnectionLimits(header_timeout=0.3, body_timeout=0.3)
    async with APIServer(connections=limits) as server:
        conn = await Raw.open(server)
        try:
            conn.writer.write(
                b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Length: 100\r\nContent-Type: application/json\r\n\r\n{"
            )
            status, headers, body = await conn.answer()
            assert status == 408
            assert headers["connection"] == "close"
            answer = orjson.loads(body)
            assert (answer["kind"], answer["reason"], answer["code"]) == ("Status", "Timeout", 408)
            assert answer["message"] == "timed out reading the request body"
            assert await conn.closed()
        finally:
            await conn.close()


async def test_a_quiet_watch_outlives_the_timeouts() -> None:
    # A watch with nothing to say for several idle and body timeouts stays open and still
    # delivers the next event.
    limits = ConnectionLimits(header_timeout=0.2, body_timeout=0.2, idle_timeout=0.2)
    async with APIServer(connections=limits) as server, connect(server) as http:
        path = "/api/v1/namespaces/default/configmaps"
        listed = await http.get(path)
        version = listed.json()["metadata"]["resourceVersion"]
        watching = asyncio.ensure_future(
            http.watch_lines(
                f"{path}?watch=true&resourceVersion={version}", lambda seen: len(seen) >= 1
            )
        )

        async def established() -> bool:
            return len(server.watches.active) == 1

        await eventually(established, timeout=5)
        for _ in range(3):  # three timeouts go by, each seen closing an idle connection
            idle = await Raw.open(server)
            assert await idle.closed()
            await idle.close()
        assert not watching.done()
        created = await http.post(path, {"metadata": {"name": "after-quiet"}})
        assert created.status == 201
        seen = await asyncio.wait_for(watching, 5)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [
            ("ADDED", "after-quiet")
        ]


async def test_kubectl_waits_for_a_free_connection(tmp_path: Path) -> None:
    # client-go retries a 429 after its Retry-After: kubectl gets through once a
    # connection is free, instead of failing.
    limits = ConnectionLimits(max_connections=2)
    async with APIServer(connections=limits) as server:
        cache = tmp_path / "cache"
        cache.mkdir()
        # A plain kubectl binary: the one first on PATH may be a wrapper of its own that
        # asks the server for its version before starting the kubectl it picks.
        kubectl = Kubectl(
            server.write_kubeconfig(tmp_path / "kubeconfig"),
            binary=find_kubectl("1.33", exact=True),
            cache_dir=cache,
            env={"HOME": str(cache)},
        )
        held = [await Raw.open(server) for _ in range(2)]
        for conn in held:
            assert (await conn.ask(READYZ))[0] == 200
        run = asyncio.ensure_future(kubectl.run("get", "namespace", "default", "-o", "name"))
        try:
            await eventually(lambda: _refused(server), timeout=20)
            assert not run.done()
            for conn in held:
                await conn.close()
            result = await asyncio.wait_for(run, 30)
            assert result.out.strip() == "namespace/default"
        finally:
            run.cancel()


async def _refused(server: APIServer) -> bool:
    """Whether the server has turned a connection away."""
    assert server._http is not None
    return server._http.refused_connections > 0


HARD_LIMIT = 512
IDLE_CLIENTS = 450  # past the cap that fits the limit, and past the limit less the server's


def _low_open_file_limit() -> None:
    """In the child, before `kubeforge dev` starts: a low soft limit under a low hard one."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, HARD_LIMIT))


async def test_probes_answer_under_a_flood_of_idle_connections(tmp_path: Path) -> None:
    # The soft limit is raised to the hard one at start (as Go's runtime does), the cap is
    # kept below what the process can open, and a probe is answered over the cap: hundreds
    # of idle TLS connections cannot make /readyz unanswerable.
    port = free_port()
    kubeconfig = tmp_path / "kubeconfig"
    dev = await DevProcess(
        kubeconfig=kubeconfig, port=port, preexec_fn=_low_open_file_limit
    ).start()
    assert dev.process is not None
    idle: list[asyncio.StreamWriter] = []
    try:
        config = yaml.safe_load(kubeconfig.read_text())
        ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
        context = ssl.create_default_context(cadata=ca.decode())
        limits = Path(f"/proc/{dev.process.pid}/limits").read_text()
        line = next(x for x in limits.splitlines() if x.startswith("Max open files"))
        assert line.split()[3:5] == [str(HARD_LIMIT), str(HARD_LIMIT)]

        async def readyz() -> int:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port, ssl=context), 5
            )
            try:
                writer.write(READYZ)
                status_line = await asyncio.wait_for(reader.readline(), 5)
                return int(status_line.split()[1])
            finally:
                writer.close()

        assert await readyz() == 200
        for _ in range(IDLE_CLIENTS):
            _, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port, ssl=context), 5
            )
            idle.append(writer)
        for _ in range(3):
            assert await readyz() == 200
        # An ordinary request over the cap is told to come back later.
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
        writer.write(VERSION)
        assert (await asyncio.wait_for(reader.readline(), 5)).split()[1] == b"429"
        writer.close()
    finally:
        for writer in idle:
            writer.close()
        await dev.stop()
    assert "serving at most 192 connections, not 1024" in dev.output
