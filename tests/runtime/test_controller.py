"""Controller semantics over a real informer: results, backoff, concurrency, timeouts, metrics."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeforge import Client
from kubeforge._runtime.cache import Cache
from kubeforge._runtime.cached_client import CachedClient, SyncClient
from kubeforge._runtime.controller import Controller, ControllerOptions
from kubeforge._runtime.handler import EnqueueRequestForObject
from kubeforge._runtime.reconcile import Reconciler, Request, Result, SyncReconciler, TerminalError
from kubeforge.testing import eventually

CM = "v1/ConfigMap"


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


class Scripted(Reconciler):
    """Runs `behaviour(request, attempt)` and records when each attempt started."""

    def __init__(self, behaviour: Callable[[Request, int], Any]) -> None:
        self.behaviour = behaviour
        self.attempts: dict[str, list[float]] = {}

    async def reconcile(self, request: Request) -> Result | None:
        times = self.attempts.setdefault(request.name, [])
        times.append(time.monotonic())
        outcome = self.behaviour(request, len(times))
        if asyncio.iscoroutine(outcome):
            outcome = await outcome
        return outcome  # type: ignore[no-any-return]


@pytest.fixture
async def cache(api: Client) -> AsyncIterator[Cache]:
    c = Cache(api)
    yield c
    await c.stop()


async def run(cache: Cache, reconciler: Reconciler | SyncReconciler, **options: Any) -> Controller:
    controller = Controller("test", reconciler, options=ControllerOptions(**options))
    controller.watch(cache.informer_for(CM), EnqueueRequestForObject())
    await cache.start()
    await controller.start()
    return controller


async def test_success_forgets_and_requeue_after_comes_back(api: Client, cache: Cache) -> None:
    def behaviour(req: Request, attempt: int) -> Result:
        return Result(requeue_after=0.05) if attempt < 3 else Result()

    rec = Scripted(behaviour)
    controller = await run(cache, rec)
    try:
        await api.create(cm("a"))

        async def three() -> bool:
            return len(rec.attempts.get("a", [])) >= 3

        await eventually(three)
        gaps = [b - a for a, b in zip(rec.attempts["a"], rec.attempts["a"][1:], strict=False)]
        assert all(g >= 0.045 for g in gaps)
        assert controller.queue.num_requeues(Request("default", "a")) == 0
        text = controller.metrics.render()[0].decode()
        assert (
            'controller_runtime_reconcile_total{controller="test",result="requeue_after"} 2' in text
        )
        assert 'controller_runtime_reconcile_total{controller="test",result="success"} 1' in text
    finally:
        await controller.stop()


async def test_errors_back_off_exponentially_and_success_resets(
    api: Client, cache: Cache, caplog: pytest.LogCaptureFixture
) -> None:
    def behaviour(req: Request, attempt: int) -> Result:
        if attempt <= 5:
            raise RuntimeError(f"attempt {attempt} fails")
        return Result()

    rec = Scripted(behaviour)
    controller = await run(cache, rec)
    try:
        with caplog.at_level(logging.ERROR, logger="kubeforge.controller"):
            await api.create(cm("flaky"))

            async def recovered() -> bool:
                return len(rec.attempts.get("flaky", [])) >= 6

            await eventually(recovered)
        times = rec.attempts["flaky"]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        # 5 ms, 10 ms, 20 ms, 40 ms, 80 ms: each wait at least its backoff.
        for gap, expected in zip(gaps, [0.005, 0.010, 0.020, 0.040, 0.080], strict=False):
            assert gap >= expected * 0.9, (gaps, expected)
        assert gaps[-1] > gaps[0]
        request = Request("default", "flaky")

        async def forgotten() -> bool:
            return controller.queue.num_requeues(request) == 0

        await eventually(forgotten)
        failures = [r for r in caplog.records if "flaky" in r.getMessage()]
        assert len(failures) == 5 and "attempt 1 fails" in failures[0].getMessage()
        text = controller.metrics.render()[0].decode()
        assert 'controller_runtime_reconcile_errors_total{controller="test"} 5' in text
        assert 'workqueue_retries_total{controller="test",name="test"} 5' in text
    finally:
        await controller.stop()


async def test_terminal_errors_are_not_retried(api: Client, cache: Cache) -> None:
    def behaviour(req: Request, attempt: int) -> Result:
        if req.name == "doomed":
            raise TerminalError("cannot ever work")
        return Result()

    rec = Scripted(behaviour)
    controller = await run(cache, rec)
    try:
        await api.create(cm("doomed"))
        await api.create(cm("fine"))

        async def both_seen() -> bool:
            return "doomed" in rec.attempts and "fine" in rec.attempts

        await eventually(both_seen)

        async def idle() -> bool:
            return len(controller.queue) == 0 and not controller.queue.unfinished_work_seconds()

        await eventually(idle)
        assert len(rec.attempts["doomed"]) == 1
        text = controller.metrics.render()[0].decode()
        assert 'controller_runtime_terminal_reconcile_errors_total{controller="test"} 1' in text
    finally:
        await controller.stop()


async def test_one_key_is_never_reconciled_twice_at_once(api: Client, cache: Cache) -> None:
    running: set[str] = set()
    overlaps: list[str] = []
    max_parallel = 0

    async def behaviour(req: Request, attempt: int) -> Result:
        nonlocal max_parallel
        if req.name in running:
            overlaps.append(req.name)
        running.add(req.name)
        max_parallel = max(max_parallel, len(running))
        await asyncio.sleep(0.002)  # hold the key while events keep arriving
        running.discard(req.name)
        return Result()

    rec = Scripted(behaviour)
    controller = await run(cache, rec, max_concurrent_reconciles=8)
    try:
        names = [f"k{i}" for i in range(6)]
        for name in names:
            await api.create(cm(name, n="0"))
        for round_ in range(1, 25):
            await asyncio.gather(
                *(api.patch(CM, name, {"data": {"n": str(round_)}}) for name in names)
            )

        async def settled() -> bool:
            return (
                len(controller.queue) == 0 and not running and all(n in rec.attempts for n in names)
            )

        await eventually(settled, timeout=20)
        assert overlaps == []
        assert max_parallel > 1  # different keys did run concurrently
    finally:
        await controller.stop()


async def test_an_async_reconciler_gets_four_workers_unless_its_options_say(
    api: Client, cache: Cache
) -> None:
    # Six objects whose reconciles all wait for one release: exactly four start at once.
    release = asyncio.Event()
    running: set[str] = set()
    most = 0

    async def behaviour(req: Request, attempt: int) -> Result:
        nonlocal most
        running.add(req.name)
        most = max(most, len(running))
        await release.wait()
        running.discard(req.name)
        return Result()

    rec = Scripted(behaviour)
    controller = await run(cache, rec)
    try:
        assert controller.workers == 4
        for i in range(6):
            await api.create(cm(f"w{i}"))
        # The other two wait for a worker, however long they wait.
        await eventually(lambda: len(running) == 4 and len(controller.queue) == 2)
        assert len(running) == 4
        release.set()
        await eventually(lambda: len(rec.attempts) == 6 and not running)
        assert most == 4
        text = controller.metrics.render()[0].decode()
        assert 'controller_runtime_max_concurrent_reconciles{controller="test"} 4' in text
    finally:
        release.set()
        await controller.stop()


class SyncNoop(SyncReconciler):
    def reconcile(self, request: Request) -> Result | None:
        return None


@pytest.mark.parametrize(
    ("reconciler", "options", "workers"),
    [
        (SyncNoop(), {}, 1),  # a plain def runs on threads: controller-runtime's one
        (SyncNoop(), {"max_concurrent_reconciles": 3}, 3),
        (Scripted(lambda req, n: None), {"max_concurrent_reconciles": 0}, 4),  # zero: default
        (Scripted(lambda req, n: None), {"max_concurrent_reconciles": 1}, 1),
    ],
    ids=["sync", "sync-asked", "async-zero", "async-one"],
)
def test_the_worker_count_follows_the_reconciler_and_the_options(
    reconciler: Reconciler | SyncReconciler, options: dict[str, Any], workers: int
) -> None:
    controller = Controller("test", reconciler, options=ControllerOptions(**options))
    assert controller.workers == workers


def test_a_negative_worker_count_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        Controller("test", SyncNoop(), options=ControllerOptions(max_concurrent_reconciles=-1))


async def test_reconcile_timeout_is_an_error(api: Client, cache: Cache) -> None:
    async def behaviour(req: Request, attempt: int) -> Result:
        if attempt == 1:
            await asyncio.sleep(5)
        return Result()

    rec = Scripted(behaviour)
    controller = await run(cache, rec, reconcile_timeout=0.05)
    try:
        await api.create(cm("slow"))

        async def retried() -> bool:
            return len(rec.attempts.get("slow", [])) >= 2

        await eventually(retried)
        text = controller.metrics.render()[0].decode()
        assert 'controller_runtime_reconcile_timeouts_total{controller="test"} 1' in text
    finally:
        await controller.stop()


async def test_a_plain_def_reconciler_runs_in_a_thread_with_a_sync_client(
    api: Client, cache: Cache
) -> None:
    class Copier(SyncReconciler):
        def reconcile(self, request: Request) -> Result:
            source = self.client.get(CM, request.name, namespace=request.namespace)
            if not request.name.endswith("-copy"):
                copy = cm(request.name + "-copy", **source.get("data", {}))
                copy["metadata"]["namespace"] = request.namespace
                try:
                    self.client.create(copy)
                except Exception:
                    pass
            return Result()

    reconciler = Copier()
    sync = SyncClient(CachedClient(api, cache), asyncio.get_running_loop())
    reconciler.client = sync
    controller = await run(cache, reconciler)
    try:
        await api.create(cm("orig", k="v"))

        async def copied() -> bool:
            objs = await api.list(CM)
            return "orig-copy" in [o["metadata"]["name"] for o in objs]

        await eventually(copied)
        assert (await api.get(CM, "orig-copy"))["data"] == {"k": "v"}
    finally:
        await controller.stop()


async def test_shutdown_waits_for_in_flight_reconciles(api: Client, cache: Cache) -> None:
    release = asyncio.Event()
    finished: list[str] = []

    async def behaviour(req: Request, attempt: int) -> Result:
        await release.wait()
        finished.append(req.name)
        return Result()

    rec = Scripted(behaviour)
    controller = await run(cache, rec)
    await api.create(cm("busy"))

    async def started() -> bool:
        return "busy" in rec.attempts

    await eventually(started)
    stopping = asyncio.create_task(controller.stop(timeout=10))
    await asyncio.sleep(0)
    assert not stopping.done()
    release.set()
    await stopping
    assert finished == ["busy"]
