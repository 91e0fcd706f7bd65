"""Crash safety of `kubeforge dev --data-dir`: kill -9 under concurrent write load, restart,
check that nothing acknowledged is lost and that revisions and watches stay consistent."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

from kubeforge import Client
from kubeforge.client import Gone, load_kubeconfig
from kubeforge.testing import DevProcess, eventually
from tests.support import free_port

NS = "default"


WRITERS = 8


async def test_acknowledged_writes_survive_kill_9_and_watches_resume(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    # Started again on the same port and data directory after the kill.
    dev = DevProcess("--data-dir", str(tmp_path / "data"), kubeconfig=kubeconfig, port=free_port())
    created: dict[str, str] = {}  # name -> resourceVersion the server answered
    counters: dict[str, tuple[int, str]] = {}  # name -> (last acknowledged value, its RV)
    answered: list[list[int]] = [[] for _ in range(WRITERS)]  # each writer's RVs, in order
    watched: list[tuple[str, str, str]] = []  # (type, name, resourceVersion)
    last_seen = ""

    async with dev, Client(load_kubeconfig(kubeconfig)) as api:
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

        async def write(k: int) -> None:
            # Each writer creates objects and counts up its own counter: a read-modify-write
            # that carries the resourceVersion it last got back.
            name = f"counter-{k}"
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name},
                "data": {"n": "0"},
            }
            counter: dict[str, Any] = await api.create(body, namespace=NS)
            counters[name] = (0, counter["metadata"]["resourceVersion"])
            for i in range(100_000):
                load = f"load-{k}-{i:05}"
                done: dict[str, Any] = await api.create(
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": load}},
                    namespace=NS,
                )
                created[load] = done["metadata"]["resourceVersion"]
                answered[k].append(int(created[load]))
                value = int(counter["data"]["n"]) + 1
                counter = await api.update({**counter, "data": {"n": str(value)}})
                counters[name] = (value, counter["metadata"]["resourceVersion"])
                answered[k].append(int(counters[name][1]))

        watcher = asyncio.create_task(watch())
        writers = [asyncio.create_task(write(k)) for k in range(WRITERS)]

        async def under_load() -> bool:
            return len(created) >= 150 and len(watched) >= 100

        await eventually(under_load, timeout=60)
        await dev.stop(signal.SIGKILL)  # no chance to flush anything
        for task in (*writers, watcher):
            try:
                await asyncio.wait_for(task, 30)
            except Exception:  # the connection died under them, as expected
                pass
    assert created and watched
    acknowledged = {**created, **{name: rv for name, (_, rv) in counters.items()}}
    for revisions in answered:  # one writer's writes were answered in commit order
        assert revisions == sorted(revisions) and len(set(revisions)) == len(revisions)

    async with dev, Client(load_kubeconfig(kubeconfig)) as api:  # started again
        stored = {o["metadata"]["name"]: o for o in await api.list("v1/ConfigMap", namespace=NS)}
        missing = sorted(set(acknowledged) - set(stored))
        assert missing == [], f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"
        for name, rv in created.items():  # never written again
            assert stored[name]["metadata"]["resourceVersion"] == rv
        for name, (value, rv) in counters.items():
            # At least what was acknowledged; one more if the last update landed
            # but its answer did not.
            have = int(stored[name]["data"]["n"])
            have_rv = int(stored[name]["metadata"]["resourceVersion"])
            assert have in (value, value + 1), (name, have, value)
            assert (have_rv == int(rv)) if have == value else (have_rv > int(rv))
        # Revisions continue upward after the restart.
        fresh = await api.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after-restart"}},
            namespace=NS,
        )
        highest = max(int(rv) for rv in acknowledged.values())
        assert int(fresh["metadata"]["resourceVersion"]) > highest
        revisions = [int(rv) for _, _, rv in watched]
        assert revisions == sorted(revisions)  # what was seen before came in order

        # A watch resumed from before every write gets every acknowledged one, in order
        # (or the server answers 410 and a re-list covers them).
        expected = {int(rv) for rv in created.values()}
        expected |= {int(r) for rs in answered for r in rs}
        resumed: list[tuple[str, int]] = []
        for since in (last_seen, start_rv):
            resumed.clear()
            try:

                async def resume(since: str = since) -> None:
                    async for event in api.watch(
                        "v1/ConfigMap", namespace=NS, resource_version=since, timeout_seconds=10
                    ):
                        if event.type != "BOOKMARK":
                            name = event.object["metadata"]["name"]
                            resumed.append((name, int(event.resource_version)))
                            if name == "after-restart":
                                return

                await asyncio.wait_for(resume(), 15)
                seen = [rv for _, rv in resumed]
                assert seen == sorted(seen) and len(set(seen)) == len(seen)
                later = {rv for rv in expected if rv > int(since)}
                assert later <= set(seen), f"{len(later - set(seen))} events missing"
            except Gone:
                relisted = {
                    o["metadata"]["name"] for o in await api.list("v1/ConfigMap", namespace=NS)
                }
                assert set(acknowledged) | {"after-restart"} <= relisted
    assert dev.returncode == 0, dev.output
