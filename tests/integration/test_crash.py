"""Crash safety of `kubeforge dev --data-dir`: kill -9 under write load, restart, check."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from kubeforge.client import Client, Gone, load_kubeconfig
from tests.support import eventually

NS = "default"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def start_dev(port: int, kubeconfig: Path, data_dir: Path) -> asyncio.subprocess.Process:
    kubeconfig.unlink(missing_ok=True)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kubeforge.cli.main",
        "dev",
        "--port",
        str(port),
        "--kubeconfig",
        str(kubeconfig),
        "--data-dir",
        str(data_dir),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )

    async def up() -> bool:
        return kubeconfig.exists()

    await eventually(up, timeout=30)
    return proc


async def test_acknowledged_writes_survive_kill_9_and_watches_resume(tmp_path: Path) -> None:
    port = free_port()
    kubeconfig = tmp_path / "kubeconfig"
    data = tmp_path / "data"
    proc = await start_dev(port, kubeconfig, data)
    acknowledged: dict[str, str] = {}  # name -> resourceVersion the server answered
    watched: list[tuple[str, str, str]] = []  # (type, name, resourceVersion)
    last_seen = ""

    async with Client(load_kubeconfig(kubeconfig)) as api:
        start_rv = (await api.list("v1/ConfigMap", namespace=NS)).resource_version

        async def watch() -> None:
            nonlocal last_seen
            async for event in api.watch("v1/ConfigMap", namespace=NS, resource_version=start_rv):
                if event.type == "BOOKMARK":
                    continue
                watched.append(
                    (event.type, event.object["metadata"]["name"], event.resource_version)
                )
                last_seen = event.resource_version

        async def write() -> None:
            for i in range(100_000):
                name = f"load-{i:05}"
                body = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name},
                    "data": {"i": str(i)},
                }
                created: dict[str, Any] = await api.create(body, namespace=NS)
                acknowledged[name] = created["metadata"]["resourceVersion"]

        watcher = asyncio.create_task(watch())
        writer = asyncio.create_task(write())

        async def under_load() -> bool:
            return len(acknowledged) >= 300 and len(watched) >= 100

        await eventually(under_load, timeout=60)
        proc.send_signal(signal.SIGKILL)  # no chance to flush anything
        await proc.wait()
        for task in (writer, watcher):
            try:
                await asyncio.wait_for(task, 30)
            except Exception:  # the connection died under them, as expected
                pass
    assert acknowledged and watched

    proc = await start_dev(port, kubeconfig, data)
    try:
        async with Client(load_kubeconfig(kubeconfig)) as api:
            stored = {
                o["metadata"]["name"]: o for o in await api.list("v1/ConfigMap", namespace=NS)
            }
            missing = sorted(set(acknowledged) - set(stored))
            assert missing == [], f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"
            for name, rv in acknowledged.items():
                assert int(stored[name]["metadata"]["resourceVersion"]) >= int(rv)
            # Revisions continue upward after the restart.
            fresh = await api.create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after-restart"}},
                namespace=NS,
            )
            highest = max(int(rv) for rv in acknowledged.values())
            assert int(fresh["metadata"]["resourceVersion"]) > highest

            # Resume the watch from the last revision it saw: every acknowledged write it had
            # not seen yet must arrive (or the server answers 410 and a re-list covers it).
            seen = {name for _, name, _ in watched}
            expected_rest = [*sorted(set(acknowledged) - seen), "after-restart"]
            resumed: list[str] = []
            try:

                async def resume() -> None:
                    async for event in api.watch(
                        "v1/ConfigMap", namespace=NS, resource_version=last_seen, timeout_seconds=10
                    ):
                        if event.type != "BOOKMARK":
                            resumed.append(event.object["metadata"]["name"])
                            if resumed[-1] == "after-restart":
                                return

                await asyncio.wait_for(resume(), 15)
                # A write committed just before the kill but never acknowledged may show up
                # too; every acknowledged one must, in order.
                known = [n for n in resumed if n in acknowledged or n == "after-restart"]
                assert known == expected_rest
                revisions = [int(rv) for _, _, rv in watched]
                assert revisions == sorted(revisions)  # what was seen before came in order
            except Gone:
                relisted = {
                    o["metadata"]["name"] for o in await api.list("v1/ConfigMap", namespace=NS)
                }
                assert set(expected_rest) <= relisted
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 30)
    assert proc.returncode == 0
