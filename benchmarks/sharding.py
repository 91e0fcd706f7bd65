"""A sharded controller scaled out: N ConfigMaps whose reconcile waits 50 ms on I/O, reconciled
by 1, 2 and 4 replicas side by side, then a replica of the largest killed with SIGKILL.

    python benchmarks/sharding.py                    # N = 10,000; 1, 2 and 4 replicas
    python benchmarks/sharding.py --quick            # N = 1,000
    python benchmarks/sharding.py -n 5000 --replicas 1 4 --workers 10 --json out.json

The API server (`kubeforge apiserver`), each replica (benchmarks/shards/replica.py: a Manager
with one sharded controller, `--workers` reconciles at once) and this driver run in processes
of their own. For each replica count, in a namespace of its own: the replicas start and hold
their shard Leases, then the driver creates the N objects (64 at a time) and waits until
each has been reconciled. `converge` runs from the first create to the last reconcile's end
(`created in`: until the last create returned); `throughput` is N over it. `share` is the
fewest and most objects one replica reconciled; the replica that leads the sharder has the
larger peak RSS.

Failover: with the largest replica count, every object is changed once more (its
`data.round`), and once a quarter of them have been reconciled again a replica that does not
run the sharder is killed with SIGKILL. `recovered` runs from the kill to the end of the last
reconcile of the round; `concurrent` counts reconciles of one object by two replicas that
overlapped in time, from the replicas' own logs (a reconcile the kill cut short ends at the
kill); `repeated` counts objects the round reconciled in two replicas one after the other
(the killed one's objects it had done already are done again where they moved).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kubeforge import Client
from kubeforge.client import load_kubeconfig

# The process helpers of the operator benchmark (this script's folder is first on the path).
from operators import peak_rss, start_server, stop, tick_seconds

HERE = Path(__file__).resolve().parent
REPLICA = HERE / "shards" / "replica.py"
RING = "bench"
CREATE_CONCURRENCY = 64
LEASE = "coordination.k8s.io/v1/Lease"
RING_LABEL = "alpha.sharding.timebertt.dev/controllerring"


@dataclass
class Run:
    """One replica count, measured."""

    replicas: int
    objects: int
    workers: int
    converge: float = 0.0
    create: float = 0.0
    shares: list[int] = field(default_factory=list)
    peak_rss: list[int] = field(default_factory=list)
    cpu: float = 0.0
    server_cpu: float = 0.0

    @property
    def throughput(self) -> float:
        return self.objects / self.converge if self.converge else 0.0


@dataclass
class Failover:
    replicas: int
    lease_duration: float
    moved: int = 0
    recovered: float = 0.0
    concurrent: int = 0
    repeated: int = 0


# the replicas' logs -----------------------------------------------------------------------------


class Logs:
    """What the replicas' reconciles logged, read as it grows."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.offsets: dict[Path, int] = {}
        # (replica, name, round) -> [(start, end or None)]
        self.spans: dict[tuple[str, str, str], list[list[float | None]]] = {}
        self.done: dict[str, set[str]] = {}  # round -> names reconciled to the end

    def read(self) -> None:
        for path in sorted(self.directory.glob("*.log")):
            offset = self.offsets.get(path, 0)
            with open(path) as f:
                f.seek(offset)
                data = f.read()
            complete = data.rpartition("\n")[0]
            if not complete:
                continue
            self.offsets[path] = offset + len(complete) + 1
            for line in complete.split("\n"):
                what, name, step, at = line.split(" ")
                spans = self.spans.setdefault((path.stem, name, step), [])
                if what == "start":
                    spans.append([float(at), None])
                else:
                    spans[-1][1] = float(at)
                    self.done.setdefault(step, set()).add(name)

    def last_end(self, step: str) -> float:
        return max(
            (s[1] for (_, _, r), spans in self.spans.items() if r == step for s in spans if s[1]),
            default=0.0,
        )

    def shares(self, step: str) -> Counter[str]:
        return Counter(replica for (replica, _, r) in self.spans if r == step)

    def concurrent(self, step: str, killed: str, killed_at: float) -> int:
        """Reconciles of one object in two replicas that overlapped in time."""
        by_name: dict[str, list[tuple[float, float, str]]] = {}
        for (replica, name, r), spans in self.spans.items():
            if r != step:
                continue
            for start, end in spans:
                assert start is not None
                if end is None:
                    end = killed_at if replica == killed else float("inf")
                by_name.setdefault(name, []).append((start, end, replica))
        found = 0
        for intervals in by_name.values():
            intervals.sort()
            last_end, last_by = 0.0, ""
            for start, end, by in intervals:
                if start < last_end and by != last_by:
                    found += 1
                if end > last_end:
                    last_end, last_by = end, by
        return found

    def repeated(self, step: str) -> int:
        """Objects the round reconciled in more than one replica."""
        replicas: dict[str, set[str]] = {}
        for replica, name, r in self.spans:
            if r == step:
                replicas.setdefault(name, set()).add(replica)
        return sum(1 for found in replicas.values() if len(found) > 1)


# the driver -------------------------------------------------------------------------------------


class Bench:
    def __init__(self, client: Client, kubeconfig: Path, tmp: Path, args: argparse.Namespace):
        self.client = client
        self.kubeconfig = kubeconfig
        self.tmp = tmp
        self.args = args

    async def namespace(self, name: str) -> None:
        await self.client.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )

    def start_replicas(
        self, namespace: str, count: int, logs: Path
    ) -> dict[str, subprocess.Popen[bytes]]:
        processes = {}
        for i in range(count):
            name = f"replica-{i}"
            processes[name] = subprocess.Popen(
                [
                    sys.executable, str(REPLICA), str(self.kubeconfig), namespace, name,
                    str(logs / f"{name}.log"), str(self.args.workers),
                    str(self.args.lease_duration),
                ],
                stdout=subprocess.DEVNULL,
            )  # fmt: skip
        return processes

    async def leases(self, namespace: str) -> dict[str, dict[str, Any]]:
        found = await self.client.list(LEASE, namespace=namespace)
        return {lease["metadata"]["name"]: lease["spec"] for lease in found}

    async def ready(self, namespace: str, count: int) -> None:
        """Until every replica holds its shard Lease and one runs the sharder."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            shards = await self.client.list(
                LEASE, namespace=namespace, label_selector=f"{RING_LABEL}={RING}"
            )
            held = [s for s in shards if s["spec"].get("holderIdentity") == s["metadata"]["name"]]
            sharder = (await self.leases(namespace)).get(f"{RING}-sharder", {})
            if len(held) == count and sharder.get("holderIdentity"):
                return
            await asyncio.sleep(0.1)
        raise TimeoutError("the replicas did not take their shard Leases")

    async def create(self, namespace: str, names: list[str]) -> None:
        gate = asyncio.Semaphore(CREATE_CONCURRENCY)

        async def one(name: str) -> None:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace},
                "data": {"round": "1"},
            }
            async with gate:
                await self.client.create(body)

        await asyncio.gather(*(one(n) for n in names))

    async def change(self, namespace: str, names: list[str], step: str) -> None:
        gate = asyncio.Semaphore(CREATE_CONCURRENCY)

        async def one(name: str) -> None:
            async with gate:
                await self.client.patch(
                    "v1/ConfigMap", name, {"data": {"round": step}}, namespace=namespace
                )

        await asyncio.gather(*(one(n) for n in names))

    @staticmethod
    async def until(logs: Logs, step: str, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(logs.done.get(step, ())) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(logs.done.get(step, ()))} of {count} reconciled")
            await asyncio.sleep(0.05)
            logs.read()

    async def run(
        self, replicas: int, server_pid: int, failover: bool
    ) -> tuple[Run, Failover | None]:
        namespace = f"replicas-{replicas}"
        await self.namespace(namespace)
        directory = self.tmp / namespace
        directory.mkdir()
        logs = Logs(directory)
        names = [f"obj-{i}" for i in range(self.args.objects)]
        processes = self.start_replicas(namespace, replicas, directory)
        result = Run(replicas, len(names), self.args.workers)
        outcome = None
        try:
            await self.ready(namespace, replicas)
            cpu_before = sum(tick_seconds(p.pid) for p in processes.values())
            server_before = tick_seconds(server_pid)
            started = time.time()
            await self.create(namespace, names)
            result.create = time.time() - started
            await self.until(logs, "1", len(names), self.args.timeout)
            result.converge = logs.last_end("1") - started
            result.shares = sorted(logs.shares("1").values())
            result.cpu = sum(tick_seconds(p.pid) for p in processes.values()) - cpu_before
            result.server_cpu = tick_seconds(server_pid) - server_before
            result.peak_rss = [peak_rss(p.pid) for p in processes.values()]
            if failover:
                outcome = await self.failover(namespace, names, logs, processes)
        finally:
            for proc in processes.values():
                stop(proc)
        return result, outcome

    async def failover(
        self,
        namespace: str,
        names: list[str],
        logs: Logs,
        processes: dict[str, subprocess.Popen[bytes]],
    ) -> Failover:
        outcome = Failover(len(processes), self.args.lease_duration)
        sharder = (await self.leases(namespace))[f"{RING}-sharder"]["holderIdentity"]
        victim = next(name for name in processes if name != sharder)
        changing = asyncio.create_task(self.change(namespace, names, "2"))
        await self.until(logs, "2", len(names) // 4, self.args.timeout)
        os.kill(processes[victim].pid, signal.SIGKILL)
        killed_at = time.time()
        processes[victim].wait()
        await changing
        await self.until(logs, "2", len(names), self.args.timeout)
        outcome.recovered = logs.last_end("2") - killed_at
        outcome.moved = logs.shares("1")[victim]
        outcome.concurrent = logs.concurrent("2", victim, killed_at)
        outcome.repeated = logs.repeated("2")
        return outcome


async def measure(args: argparse.Namespace) -> tuple[list[Run], Failover | None]:
    with tempfile.TemporaryDirectory(prefix="kubeforge-sharding-") as tmp:
        server, kubeconfig = start_server(Path(tmp))
        try:
            async with Client(load_kubeconfig(kubeconfig)) as client:
                bench = Bench(client, kubeconfig, Path(tmp), args)
                runs, outcome = [], None
                largest = max(args.replicas)
                for count in args.replicas:
                    run, failed_over = await bench.run(count, server.pid, count == largest)
                    runs.append(run)
                    outcome = failed_over or outcome
                    print(f"  {count} replica(s): {run.converge:.1f} s", file=sys.stderr)
                return runs, outcome
        finally:
            stop(server)


def table(runs: list[Run], failover: Failover | None) -> str:
    base = runs[0].throughput if runs else 0.0
    load = ", ".join(f"{n:.1f}" for n in os.getloadavg())
    lines = [
        f"N = {runs[0].objects:,} objects, reconcile = 50 ms of I/O, "
        f"{runs[0].workers} workers per replica; {os.cpu_count()} CPUs, load average "
        f"{load} at the end",
        "",
        "| replicas | created in (s) | converge (s) | throughput (/s) | speed-up | "
        "share (min-max) | replicas' CPU (s) | server CPU (s) | peak RSS per replica (MB) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        rss = [r / 1e6 for r in run.peak_rss] or [0.0]
        lines.append(
            f"| {run.replicas} | {run.create:.1f} | {run.converge:.1f} | "
            f"{run.throughput:,.0f} | {run.throughput / base:.2f}× | "
            f"{min(run.shares):,}-{max(run.shares):,} | {run.cpu:.1f} | {run.server_cpu:.1f} | "
            f"{min(rss):.0f}-{max(rss):.0f} |"
        )
    if failover is not None:
        lines += [
            "",
            f"failover: {failover.replicas} replicas, one killed (SIGKILL) holding "
            f"{failover.moved:,} objects; lease duration {failover.lease_duration:g} s",
            "",
            "| recovered (s) | concurrent reconciles | repeated |",
            "|---|---|---|",
            f"| {failover.recovered:.1f} | {failover.concurrent} | {failover.repeated:,} |",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--objects", type=int, default=10_000, help="objects")
    parser.add_argument("--quick", action="store_true", help="N = 1,000, for a smoke run")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--workers", type=int, default=10, help="max_concurrent_reconciles of each replica"
    )
    parser.add_argument(
        "--lease-duration", type=float, default=15.0, help="the shard Leases' term (seconds)"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to converge")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.quick:
        args.objects = 1_000
    runs, failover = asyncio.run(measure(args))
    print(table(runs, failover))
    if args.json is not None:
        rows: dict[str, Any] = {"runs": [asdict(r) | {"throughput": r.throughput} for r in runs]}
        rows["failover"] = asdict(failover) if failover else None
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
