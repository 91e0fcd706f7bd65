"""Work-queue throughput and wake-up latency, with asyncio.Queue measured in the same run.

    python benchmarks/workqueue.py [--items 200000] [--rounds 3]

Throughput counts one item added, taken and marked done as one operation, on one event loop.
Keys are frozen dataclasses like the controller's requests, so hashing costs what it will cost
in a controller. asyncio.Queue does no deduplication and no priorities; it is the floor for any
asyncio queue on this interpreter. Each row reports the best of `--rounds` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kubeforge._runtime.workqueue import LOW_PRIORITY, WorkQueue

BATCH = 1000


@dataclass(frozen=True)
class Request:
    namespace: str
    name: str


class NullMetrics:
    """Accepts every hook and does nothing: the cost of the calls themselves."""

    def add(self, priority: int) -> None:
        pass

    def get(self, priority: int, queued_seconds: float) -> None:
        pass

    def done(self, work_seconds: float) -> None:
        pass

    def retry(self) -> None:
        pass

    def depth(self, priority: int, delta: int) -> None:
        pass


def requests(count: int) -> list[Request]:
    return [Request("default", f"object-{i}") for i in range(count)]


async def take_all(queue: WorkQueue[Request]) -> int:
    """Get and finish every ready item; returns how many there were."""
    taken = 0
    for _ in range(len(queue)):
        item, _ = await queue.get()
        queue.done(item)
        taken += 1
    return taken


async def distinct_keys(keys: list[Request], metrics: bool = False) -> tuple[int, int]:
    queue: WorkQueue[Request] = WorkQueue("bench", metrics=NullMetrics() if metrics else None)
    taken = 0
    for start in range(0, len(keys), BATCH):
        for key in keys[start : start + BATCH]:
            queue.add(key)
        taken += await take_all(queue)
    return len(keys), taken


async def duplicate_heavy(keys: list[Request]) -> tuple[int, int]:
    """Each batch adds 100 keys ten times over; a tenth of the taken keys get events while held."""
    queue: WorkQueue[Request] = WorkQueue("bench")
    distinct = BATCH // 10
    adds = taken = 0
    for start in range(0, len(keys), distinct):
        batch = keys[start : start + distinct]
        for _ in range(10):
            for key in batch:
                queue.add(key)
        adds += 10 * len(batch)
        while len(queue):
            item, _ = await queue.get()
            if taken % 10 == 0:
                queue.add(item)
                queue.add(item)
                adds += 2
            queue.done(item)
            taken += 1
    return adds, taken


async def mixed_priorities(keys: list[Request]) -> tuple[int, int]:
    """Priorities 10, 0 and LOW_PRIORITY; a tenth of the low items are raised to 0 by an event."""
    queue: WorkQueue[Request] = WorkQueue("bench")
    cycle = (0, 0, LOW_PRIORITY, LOW_PRIORITY, 0, 10, LOW_PRIORITY, 0)
    adds = taken = 0
    for start in range(0, len(keys), BATCH):
        batch = keys[start : start + BATCH]
        for i, key in enumerate(batch):
            queue.add(key, cycle[i % len(cycle)])
        for key in batch[2::40]:
            queue.add(key)
        adds += len(batch) + len(batch[2::40])
        taken += await take_all(queue)
    return adds, taken


async def concurrent_workers(keys: list[Request], workers: int = 8) -> tuple[int, int]:
    """A producer adds batches of 100 while `workers` tasks take items, yielding once per item."""
    queue: WorkQueue[Request] = WorkQueue("bench")
    hungry = asyncio.Event()
    finished = asyncio.Event()
    taken = 0

    async def worker() -> None:
        nonlocal taken
        while True:
            item, _ = await queue.get()
            await asyncio.sleep(0)  # a reconcile that does some I/O
            queue.done(item)
            taken += 1
            if len(queue) < 20:
                hungry.set()
            if taken == len(keys):
                finished.set()

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    for start in range(0, len(keys), 100):
        for key in keys[start : start + 100]:
            queue.add(key)
        hungry.clear()
        await hungry.wait()
    await finished.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return len(keys), taken


async def asyncio_queue_peer(keys: list[Request]) -> tuple[int, int]:
    queue: asyncio.Queue[Request] = asyncio.Queue()
    taken = 0
    for start in range(0, len(keys), BATCH):
        for key in keys[start : start + BATCH]:
            queue.put_nowait(key)
        for _ in range(queue.qsize()):
            await queue.get()
            queue.task_done()
            taken += 1
    return len(keys), taken


async def best_of(
    rounds: int, run: Callable[[], Awaitable[tuple[int, int]]]
) -> tuple[int, int, float]:
    best = float("inf")
    adds = taken = 0
    for _ in range(rounds):
        started = time.perf_counter()
        adds, taken = await run()
        best = min(best, time.perf_counter() - started)
    return adds, taken, best


async def wake_latency(samples: int, use_peer: bool) -> list[float]:
    """Microseconds from `add` to the moment a parked worker has the item in hand."""
    queue: WorkQueue[Request] = WorkQueue("bench")
    peer: asyncio.Queue[Request] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    keys = requests(samples)
    latencies: list[float] = []
    added_at = 0.0
    back: asyncio.Future[None] = loop.create_future()

    async def worker() -> None:
        nonlocal back
        while True:
            if use_peer:
                item = await peer.get()
            else:
                item, _ = await queue.get()
            latencies.append((time.perf_counter() - added_at) * 1e6)
            if not use_peer:
                queue.done(item)
            back.set_result(None)

    task = asyncio.create_task(worker())
    await asyncio.sleep(0)  # the worker parks in get()
    for key in keys:
        back = loop.create_future()
        added_at = time.perf_counter()
        if use_peer:
            peer.put_nowait(key)
        else:
            queue.add(key)
        await back  # by now the worker has parked again
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return latencies[samples // 10 :]  # drop the warm-up


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=20_000)
    args = parser.parse_args()
    keys = requests(args.items)

    scenarios: list[tuple[str, Callable[[], Awaitable[tuple[int, int]]]]] = [
        ("(a) distinct keys", lambda: distinct_keys(keys)),
        ("(a) distinct keys, metrics hooks", lambda: distinct_keys(keys, metrics=True)),
        ("(b) duplicate-heavy adds (10x)", lambda: duplicate_heavy(keys)),
        ("(c) mixed priorities + raises", lambda: mixed_priorities(keys)),
        ("(d) 8 workers, each item yields", lambda: concurrent_workers(keys)),
        ("peer: asyncio.Queue, distinct keys", lambda: asyncio_queue_peer(keys)),
    ]
    print(f"Python {sys.version.split()[0]}, {args.items:,} keys, best of {args.rounds}\n")
    header = f"{'scenario':<36} {'adds':>9} {'items':>9} {'adds/s':>11} {'items/s':>11}"
    print(header)
    print("-" * len(header))
    for label, run in scenarios:
        adds, taken, seconds = await best_of(args.rounds, run)
        print(
            f"{label:<36} {adds:>9,} {taken:>9,} {adds / seconds:>11,.0f} {taken / seconds:>11,.0f}"
        )
    print("\nitems/s = items added, taken and marked done per second (one each).\n")

    header = f"{'add -> get, parked worker':<36} {'p50 µs':>9} {'p99 µs':>9} {'mean µs':>9}"
    print(header)
    print("-" * len(header))
    for label, use_peer in (("WorkQueue", False), ("peer: asyncio.Queue", True)):
        latencies = await wake_latency(args.samples, use_peer)
        print(
            f"{label:<36} {percentile(latencies, 0.5):>9.1f} {percentile(latencies, 0.99):>9.1f}"
            f" {statistics.fmean(latencies):>9.1f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
