"""Replicas as separate processes, in real time, with short Leases (2 s): one killed with
SIGKILL hands nothing over, and its objects move to the others once its Lease's term is over,
within one lease duration of the kill; no object is ever in two processes' reconciles at once
(each process logs when its reconciles start and end)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from kubeforge._runtime.sharding.labels import drain_label, shard_label, sharder_lease_name
from kubeforge.testing import TestEnv, eventually
from tests.support.sharding import CM, LEASE, create_configmaps

RING = "procs"
LEASE_SECONDS = 2.0

OPERATOR = """
import asyncio
import sys

import kubeforge
from kubeforge import clock

KUBECONFIG, NAMESPACE, REPLICA, LOG = sys.argv[1:5]
log = open(LOG, "a", buffering=1)


class Marker(kubeforge.Reconciler):
    # Marks each ConfigMap with the replica that reconciles it; 50 ms of work each time,
    # every 200 ms, so reconciles are in flight when the replica is killed.
    async def reconcile(self, request):
        log.write(f"start {request.name} {clock.time()}\\n")
        cm = await self.client.get("v1/ConfigMap", request.name, namespace=request.namespace)
        if (cm.get("data") or {}).get("by") != REPLICA:
            patch = {"data": {"by": REPLICA}}
            await self.client.patch("v1/ConfigMap", request.name, patch, namespace=NAMESPACE)
        await clock.sleep(0.05)
        log.write(f"end {request.name} {clock.time()}\\n")
        return kubeforge.Result(requeue_after=0.2)


async def main():
    config = kubeforge.load_config(kubeconfig=KUBECONFIG)
    manager = kubeforge.Manager(
        config, namespace=NAMESPACE, leader_election_namespace=NAMESPACE, identity=REPLICA
    )
    manager.controller().for_("v1/ConfigMap").sharded(
        ring="procs", lease_duration=2, renew_deadline=1.5, retry_period=0.25
    ).complete(Marker())
    await manager.run()


asyncio.run(main())
"""


@contextlib.asynccontextmanager
async def replica(
    script: Path, kubeconfig: Path, namespace: str, name: str, logs: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(kubeconfig), namespace, name, str(logs / name),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()


def overlaps(logs: Path, killed: str, killed_at: float) -> list[str]:
    """Objects two replicas reconciled at once, by the replicas' own logs; a reconcile the
    kill cut short ends at the kill."""
    spans: dict[str, list[tuple[float, float, str]]] = {}
    for path in logs.iterdir():
        started: dict[str, float] = {}
        for line in path.read_text().splitlines():
            what, name, at = line.split()
            if what == "start":
                started[name] = float(at)
            else:
                spans.setdefault(name, []).append((started.pop(name), float(at), path.name))
        if path.name == killed:
            for name, at in started.items():
                spans.setdefault(name, []).append((at, killed_at, path.name))
    found = []
    for name, intervals in spans.items():
        intervals.sort()
        last_end, last_by = 0.0, ""
        for start, end, by in intervals:
            if start < last_end and by != last_by:
                found.append(f"{name}: {last_by} until {last_end}, {by} from {start}")
            if end > last_end:
                last_end, last_by = end, by
    return found


async def test_a_replica_killed_with_sigkill_loses_its_objects_within_a_lease_duration(
    tmp_path: Path,
) -> None:
    script = tmp_path / "replica.py"
    script.write_text(OPERATOR)
    logs = tmp_path / "logs"
    logs.mkdir()
    async with TestEnv(crd_paths=[], namespace="procs") as env:
        kubeconfig = env.write_kubeconfig(tmp_path / "kubeconfig")
        ns = env.namespace
        names = [f"obj-{i}" for i in range(24)]
        await create_configmaps(env.client, ns, names)

        async def marked() -> dict[str, str]:
            """name -> the replica that marked it, once each is marked by the replica its
            shard label names, and none is being drained."""
            found = {}
            for cm in await env.client.list(CM, namespace=ns):
                name, by = cm["metadata"]["name"], (cm.get("data") or {}).get("by")
                if name in names:
                    labels = cm["metadata"].get("labels") or {}
                    assert drain_label(RING) not in labels, name
                    assert by and labels.get(shard_label(RING), "").startswith(f"{RING}-{by}-"), (
                        name
                    )
                    found[name] = by
            return found

        async with contextlib.AsyncExitStack() as stack:
            processes = {
                name: await stack.enter_async_context(replica(script, kubeconfig, ns, name, logs))
                for name in ("one", "two")
            }

            async def spread() -> dict[str, str]:
                found = await marked()
                assert set(found.values()) == set(processes), found
                return found

            before = await eventually(spread, timeout=30)
            # The victim is the replica that does not run the sharder (killing that one too
            # adds the sharder's own takeover: see test_sharder.py).
            sharder = await env.client.get(LEASE, sharder_lease_name(RING), namespace=ns)
            victim = next(n for n in processes if n != sharder["spec"]["holderIdentity"])
            on_victim = {n for n, by in before.items() if by == victim}

            os.kill(processes[victim].pid, signal.SIGKILL)
            # The machine's clock, as the replicas' (real) clocks read it.
            killed_at = time.time()
            await processes[victim].wait()

            async def moved() -> dict[str, str]:
                found = await marked()
                assert victim not in found.values(), found
                return found

            after = await eventually(moved, timeout=10, interval=0.02)
            took = time.time() - killed_at
            # Not before the Lease's term (renewed at most 0.25 s before the kill), and
            # within one lease duration of the kill (plus what the moves and the
            # reconciles take on a busy machine).
            assert LEASE_SECONDS - 0.5 < took < LEASE_SECONDS + 1.0, took
            print(f"moved {len(on_victim)} objects {took:.2f} s after the kill")
            assert {n for n, by in before.items() if by != after[n]} == on_victim
        assert overlaps(logs, victim, killed_at) == []
