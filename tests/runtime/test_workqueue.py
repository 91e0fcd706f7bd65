"""The controller work queue: dedup, no concurrent key, priorities, delays, aging, shutdown."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from kubeforge._runtime.ratelimiter import BucketRateLimiter
from kubeforge._runtime.workqueue import LOW_PRIORITY, ShutDown, WorkQueue

R = TypeVar("R")


@dataclass(frozen=True)
class Request:
    namespace: str
    name: str


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 500.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class RecordingMetrics:
    """Keeps every hook call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def add(self, priority: int) -> None:
        self.calls.append(("add", priority))

    def get(self, priority: int, queued_seconds: float) -> None:
        self.calls.append(("get", priority, queued_seconds))

    def done(self, work_seconds: float) -> None:
        self.calls.append(("done", work_seconds))

    def retry(self) -> None:
        self.calls.append(("retry",))

    def depth(self, priority: int, delta: int) -> None:
        self.calls.append(("depth", priority, delta))


def get_now(queue: WorkQueue[Any]) -> tuple[Any, int]:
    """Run `queue.get()` and insist that it completes without suspending."""
    return run_without_suspending(queue.get())


def run_without_suspending(coro: Coroutine[Any, Any, R]) -> R:
    try:
        coro.send(None)
    except StopIteration as finished:
        return finished.value  # type: ignore[no-any-return]
    coro.close()
    raise AssertionError("the coroutine suspended")


def drain(queue: WorkQueue[Any]) -> list[tuple[Any, int]]:
    """Take (and finish) every ready item, in the order the queue hands them out."""
    taken = []
    while True:
        coro = queue.get()
        try:
            coro.send(None)
        except StopIteration as finished:
            item, priority = finished.value
            queue.done(item)
            taken.append((item, priority))
            continue
        coro.close()
        return taken


async def settle() -> None:
    """Let every task that is ready to run take its turn (no time passes)."""
    for _ in range(5):
        await asyncio.sleep(0)


# Deduplication and the processing protocol ----------------------------------------------


async def test_duplicates_are_queued_once() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    first, second = Request("ns", "a"), Request("ns", "b")
    for _ in range(3):
        queue.add(first)
    queue.add(second)
    queue.add(Request("ns", "a"))  # equal, not identical
    assert len(queue) == 2
    assert drain(queue) == [(first, 0), (second, 0)]
    assert len(queue) == 0


async def test_get_with_a_ready_item_does_not_suspend() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert get_now(queue) == ("a", 0)


async def test_adds_while_processing_collapse_into_one_follow_up() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    get_now(queue)
    for _ in range(5):
        queue.add("a")
    assert len(queue) == 0, "a held item is not handed out again"
    assert drain(queue) == []
    queue.done("a")
    assert len(queue) == 1
    assert drain(queue) == [("a", 0)]
    assert len(queue) == 0


async def test_follow_up_keeps_the_highest_priority_of_the_adds() -> None:
    queue: WorkQueue[str] = WorkQueue(max_wait=None)
    queue.add("held")
    get_now(queue)
    queue.add("held", LOW_PRIORITY)
    queue.add("held", 3)
    queue.add("held")
    queue.add("other", 1)
    queue.done("held")
    assert drain(queue) == [("held", 3), ("other", 1)]


async def test_done_on_an_item_not_held_is_ignored() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.done("never-taken")
    queue.add("a")
    queue.done("a")  # queued but not taken: nothing changes
    assert drain(queue) == [("a", 0)]


async def test_a_key_is_never_held_by_two_workers() -> None:
    queue: WorkQueue[Request] = WorkQueue()
    keys = [Request("ns", f"k{i}") for i in range(12)]
    rng = random.Random(7)
    held: set[Request] = set()
    violations: list[Request] = []
    last_add: dict[Request, int] = {}
    last_start: dict[Request, int] = {}
    idle = asyncio.Event()
    producing = True
    clock = 0
    handled = 0

    async def worker(seed: int) -> None:
        nonlocal clock, handled
        local = random.Random(seed)
        while True:
            try:
                key, _ = await queue.get()
            except ShutDown:
                return
            if key in held:
                violations.append(key)
            held.add(key)
            clock += 1
            last_start[key] = clock
            for _ in range(local.randrange(4)):
                await asyncio.sleep(0)  # let other workers and the producer run meanwhile
            held.discard(key)
            handled += 1
            queue.done(key)
            if not producing and not held and not len(queue):
                idle.set()

    workers = [asyncio.create_task(worker(seed)) for seed in range(16)]
    for _ in range(4000):
        key = rng.choice(keys)
        clock += 1
        last_add[key] = clock
        queue.add(key, rng.choice((0, 0, 1, LOW_PRIORITY)))
        if rng.random() < 0.3:
            await asyncio.sleep(0)
    producing = False
    if not held and not len(queue):
        idle.set()
    await asyncio.wait_for(idle.wait(), timeout=10)
    assert await queue.shutdown_with_drain(timeout=10)
    await asyncio.gather(*workers)
    assert violations == []
    assert handled < 4000, "duplicates were collapsed"
    # Level-triggered: every key was processed again after the last time it was added.
    for key, added in last_add.items():
        assert last_start[key] > added, key


# Priorities ------------------------------------------------------------------------------


async def test_highest_priority_first_and_fifo_within_a_priority() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("low-1", LOW_PRIORITY)
    queue.add("high", 10)
    queue.add("b")
    queue.add("low-2", LOW_PRIORITY)
    queue.add("c")
    assert drain(queue) == [
        ("high", 10),
        ("a", 0),
        ("b", 0),
        ("c", 0),
        ("low-1", LOW_PRIORITY),
        ("low-2", LOW_PRIORITY),
    ]


async def test_raising_priority_moves_the_item_to_the_back_of_the_new_level() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x", LOW_PRIORITY)
    queue.add("a")
    queue.add("y", LOW_PRIORITY)
    queue.add("b")
    queue.add("x")  # raised from LOW_PRIORITY to 0
    queue.add("a", LOW_PRIORITY)  # lowering is ignored
    queue.add("b")  # same priority: keeps its place
    assert len(queue) == 4
    assert drain(queue) == [("a", 0), ("b", 0), ("x", 0), ("y", LOW_PRIORITY)]


async def test_an_item_raised_twice_and_requeued_low_keeps_fifo() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x", LOW_PRIORITY)
    queue.add("y", LOW_PRIORITY)
    queue.add("x", -50)
    queue.add("x", 5)
    assert get_now(queue) == ("x", 5)
    queue.done("x")
    # x now has stale places ahead of y in two levels; its new place is after y.
    queue.add("x", LOW_PRIORITY)
    queue.add("z", -50)
    assert drain(queue) == [("z", -50), ("y", LOW_PRIORITY), ("x", LOW_PRIORITY)]
    assert len(queue) == 0


async def test_many_priority_levels() -> None:
    queue: WorkQueue[int] = WorkQueue(max_wait=None)
    priorities = list(range(-20, 20))
    random.Random(3).shuffle(priorities)
    for priority in priorities:
        queue.add(priority, priority)
    assert [item for item, _ in drain(queue)] == sorted(priorities, reverse=True)
    queue.add(1, 1)
    queue.add(2, 2)
    assert drain(queue) == [(2, 2), (1, 1)]


async def test_bookkeeping_matches_a_simple_model() -> None:
    """Random adds, raises, takes and dones compared with a straightforward reference."""
    clock = ManualClock()
    queue: WorkQueue[int] = WorkQueue(clock=clock, max_wait=10.0)
    rng = random.Random(11)
    ready: dict[int, tuple[int, int, float]] = {}  # item -> priority, order, ready since
    held: set[int] = set()
    dirty: dict[int, int] = {}
    order = 0

    def model_add(item: int, priority: int) -> None:
        nonlocal order
        if item in held:
            dirty[item] = max(priority, dirty.get(item, priority))
        elif item not in ready:
            order += 1
            ready[item] = (priority, order, clock())
        elif priority > ready[item][0]:
            order += 1
            ready[item] = (priority, order, ready[item][2])

    def model_take() -> tuple[int, int]:
        heads: dict[int, tuple[int, float, int]] = {}
        for item, (priority, position, since) in ready.items():
            if priority not in heads or position < heads[priority][0]:
                heads[priority] = (position, since, item)
        top = max(heads)
        choice = top
        if top <= 0:
            best = (heads[0][1], 0) if top == 0 else None
            for priority, (_, since, _) in heads.items():
                if priority < 0 and since <= clock() - 10.0:
                    candidate = (since + 10.0, 1)
                    if best is None or candidate < best:
                        best, choice = candidate, priority
        item = heads[choice][2]
        del ready[item]
        held.add(item)
        return item, choice

    for _ in range(6000):
        action = rng.random()
        if action < 0.5:
            item, priority = rng.randrange(40), rng.choice((0, 0, 0, 2, -7, LOW_PRIORITY))
            queue.add(item, priority)
            model_add(item, priority)
        elif action < 0.85 and ready:
            assert get_now(queue) == model_take()
        elif held:
            item = rng.choice(sorted(held))
            held.discard(item)
            queue.done(item)
            if item in dirty:
                model_add(item, dirty.pop(item))
        if rng.random() < 0.2:
            clock.advance(rng.choice((0.5, 3.0)))
        assert len(queue) == len(ready)


# Delays and backoff ----------------------------------------------------------------------


async def test_add_after_becomes_ready_at_its_time() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("a", 5)
    assert len(queue) == 1, "delayed items count"
    clock.advance(4.999)
    assert drain(queue) == []
    clock.advance(0.001)
    assert drain(queue) == [("a", 0)]


async def test_add_after_keeps_the_earliest_time() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("later-first", 10)
    queue.add_after("later-first", 5)
    queue.add_after("sooner-first", 5)
    queue.add_after("sooner-first", 10)
    assert len(queue) == 2
    clock.advance(5)
    assert drain(queue) == [("later-first", 0), ("sooner-first", 0)]
    clock.advance(10)
    assert drain(queue) == [], "the superseded later times left nothing behind"


async def test_add_now_beats_a_pending_delay_and_delay_does_not_postpone_a_ready_item() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("a", 30, priority=4)
    queue.add("a")  # ready now, keeping the higher priority it was waiting with
    queue.add("b")
    queue.add_after("b", 30)
    assert len(queue) == 2
    assert drain(queue) == [("a", 4), ("b", 0)]
    clock.advance(60)
    assert drain(queue) == []


async def test_non_positive_delay_means_now() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=ManualClock())
    queue.add_after("a", 0)
    queue.add_after("b", -1)
    assert drain(queue) == [("a", 0), ("b", 0)]


async def test_delayed_items_enter_their_priority_in_ready_order() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("c", 3)
    queue.add_after("a", 1)
    queue.add_after("high", 2, priority=1)
    queue.add_after("b", 2)
    clock.advance(3)
    assert drain(queue) == [("high", 1), ("a", 0), ("b", 0), ("c", 0)]


async def test_delayed_add_while_processing_waits_after_done() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add("a")
    get_now(queue)
    queue.add_after("a", 2)
    queue.done("a")
    assert len(queue) == 1
    assert drain(queue) == []
    clock.advance(2)
    assert drain(queue) == [("a", 0)]


async def test_an_event_during_processing_overrides_a_pending_retry_delay() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add("a")
    get_now(queue)
    queue.add_rate_limited("a")
    queue.add("a")
    queue.done("a")
    assert drain(queue) == [("a", 0)]


async def test_a_waiting_worker_is_woken_by_the_timer() -> None:
    queue: WorkQueue[str] = WorkQueue()
    worker = asyncio.create_task(queue.get())
    await settle()
    queue.add_after("a", 0.002)
    assert await asyncio.wait_for(worker, timeout=5) == ("a", 0)


async def test_an_earlier_delay_rearms_the_timer() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("late", 3600)
    worker = asyncio.create_task(queue.get())
    await settle()
    queue.add_after("soon", 0.002)
    assert await asyncio.wait_for(worker, timeout=5) == ("soon", 0)
    queue.shutdown()


async def test_delayed_items_use_no_task_each() -> None:
    queue: WorkQueue[int] = WorkQueue()
    before = len(asyncio.all_tasks())
    for i in range(1000):
        queue.add_after(i, 60 + i)
    assert len(asyncio.all_tasks()) == before
    queue.shutdown()


async def test_rate_limited_adds_back_off_exponentially() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    for expected in (0.005, 0.01, 0.02, 0.04):
        queue.add_rate_limited("a")
        clock.advance(expected * 0.999)
        assert drain(queue) == []
        clock.advance(expected * 0.002)
        assert drain(queue) == [("a", 0)]
    assert queue.num_requeues("a") == 4
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    queue.add_rate_limited("a")
    clock.advance(0.005)
    assert drain(queue) == [("a", 0)]


async def test_rate_limited_backoff_reaches_the_cap() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    for _ in range(30):
        queue.rate_limiter.when("a")
    queue.add_rate_limited("a")
    clock.advance(999.9)
    assert drain(queue) == []
    clock.advance(0.1)
    assert drain(queue) == [("a", 0)]


async def test_a_custom_rate_limiter_is_used() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(
        clock=clock, rate_limiter=BucketRateLimiter(qps=1, burst=1, clock=clock)
    )
    queue.add_rate_limited("a")
    queue.add_rate_limited("b")
    assert drain(queue) == [("a", 0)]
    clock.advance(1)
    assert drain(queue) == [("b", 0)]


# Aging -----------------------------------------------------------------------------------


async def test_an_aged_low_priority_item_is_not_starved() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock, max_wait=10)
    queue.add("initial-list", LOW_PRIORITY)
    served: list[str] = []
    # Constant priority-0 traffic: one new event per second, each handled within the second.
    for second in range(15):
        queue.add(f"event-{second}")
        item, _ = get_now(queue)
        queue.done(item)
        served.append(item)
        clock.advance(1)
    assert "initial-list" in served
    # Aged at t=10, it lines up behind the event that arrived at t=10 and before later ones.
    assert served.index("initial-list") == 11


async def test_aged_item_reports_its_own_priority_and_yields_to_earlier_events() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock, max_wait=10)
    queue.add("low", LOW_PRIORITY)
    clock.advance(5)
    queue.add("early")  # arrived before the low item aged (t=10)
    clock.advance(6)
    queue.add("late")  # arrived after
    queue.add("urgent", 1)  # above priority 0, so ahead of aged items too
    assert drain(queue) == [("urgent", 1), ("early", 0), ("low", LOW_PRIORITY), ("late", 0)]


async def test_aging_orders_aged_items_by_when_they_aged() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock, max_wait=10)
    queue.add("oldest-low", LOW_PRIORITY)
    clock.advance(1)
    queue.add("mid", -5)
    clock.advance(1)
    queue.add("young-low", LOW_PRIORITY)
    clock.advance(20)
    queue.add("now")
    assert drain(queue) == [
        ("oldest-low", LOW_PRIORITY),
        ("mid", -5),
        ("young-low", LOW_PRIORITY),
        ("now", 0),
    ]


async def test_without_aging_low_priority_waits_for_an_empty_level() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock, max_wait=None)
    queue.add("low", LOW_PRIORITY)
    for second in range(30):
        queue.add(f"event-{second}")
        item, _ = get_now(queue)
        assert item == f"event-{second}"
        queue.done(item)
        clock.advance(1)
    assert drain(queue) == [("low", LOW_PRIORITY)]


# Discarding ------------------------------------------------------------------------------


async def test_discard_takes_ready_delayed_and_pending_items_out() -> None:
    clock = ManualClock()
    metrics = RecordingMetrics()
    queue: WorkQueue[str] = WorkQueue(clock=clock, metrics=metrics, max_wait=None)
    queue.add("west-held")
    assert get_now(queue) == ("west-held", 0)
    queue.add("west-held")  # a re-add while held
    queue.add("east-a")
    queue.add("west-a", LOW_PRIORITY)
    queue.add("west-b")
    queue.add("west-b", 5)  # raised: a stale copy stays behind at priority 0
    queue.add_after("west-late", 30)
    queue.add_after("east-late", 30)
    queue.add_rate_limited("west-failing")
    metrics.calls.clear()

    def west(item: str) -> bool:
        return item.startswith("west")

    assert queue.discard(west) == 4
    assert sorted(c for c in metrics.calls if c[0] == "depth") == [
        ("depth", LOW_PRIORITY, -1),
        ("depth", 5, -1),
    ]
    assert queue.num_requeues("west-failing") == 0
    queue.done("west-held")  # not queued again
    clock.advance(60)
    assert drain(queue) == [("east-a", 0), ("east-late", 0)]
    assert len(queue) == 0
    queue.add("west-b")  # a discarded item may come back
    assert drain(queue) == [("west-b", 0)]


# Waiting workers and shutdown ------------------------------------------------------------


async def test_an_add_wakes_a_waiting_worker() -> None:
    queue: WorkQueue[str] = WorkQueue()
    worker = asyncio.create_task(queue.get())
    await settle()
    assert not worker.done()
    queue.add("a", 2)
    assert await asyncio.wait_for(worker, timeout=5) == ("a", 2)


async def test_a_cancelled_worker_passes_its_wake_up_on() -> None:
    queue: WorkQueue[str] = WorkQueue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await settle()
    queue.add("a")
    first.cancel()
    assert await asyncio.wait_for(second, timeout=5) == ("a", 0)
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_shutdown_wakes_every_waiting_worker() -> None:
    queue: WorkQueue[str] = WorkQueue()
    workers = [asyncio.create_task(queue.get()) for _ in range(3)]
    await settle()
    queue.shutdown()
    assert queue.shutting_down
    results = await asyncio.wait_for(asyncio.gather(*workers, return_exceptions=True), 5)
    assert all(isinstance(result, ShutDown) for result in results)


async def test_after_shutdown_nothing_is_handed_out_or_accepted() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.shutdown()
    queue.add("b")
    queue.add_after("c", 1)
    queue.add_rate_limited("d")
    assert len(queue) == 1
    with pytest.raises(ShutDown):
        await queue.get()


async def test_shutdown_with_drain_waits_for_held_items() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("held")
    queue.add("ready")
    item, _ = await queue.get()
    drainer = asyncio.create_task(queue.shutdown_with_drain())
    await settle()
    assert not drainer.done()
    assert queue.shutting_down
    with pytest.raises(ShutDown):
        await queue.get()  # the ready item is not handed out during the drain
    queue.add("held")  # adds are ignored: no follow-up after done
    queue.done(item)
    assert await asyncio.wait_for(drainer, timeout=5) is True
    assert len(queue) == 1


async def test_shutdown_with_drain_returns_at_once_when_nothing_is_held() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert run_without_suspending(queue.shutdown_with_drain()) is True


async def test_shutdown_with_drain_gives_up_after_its_timeout() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("stuck")
    await queue.get()
    assert await queue.shutdown_with_drain(timeout=0.002) is False
    # A later drain still completes once the item is released.
    drainer = asyncio.create_task(queue.shutdown_with_drain())
    await settle()
    queue.done("stuck")
    assert await asyncio.wait_for(drainer, timeout=5) is True


async def test_shutdown_cuts_a_drain_short() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("stuck")
    await queue.get()
    drainer = asyncio.create_task(queue.shutdown_with_drain())
    await settle()
    queue.shutdown()
    assert await asyncio.wait_for(drainer, timeout=5) is False


# Metrics ---------------------------------------------------------------------------------


async def test_metrics_hooks_follow_an_item_through_the_queue() -> None:
    clock = ManualClock()
    metrics = RecordingMetrics()
    queue: WorkQueue[str] = WorkQueue("pods", metrics=metrics, clock=clock)
    queue.add("a", LOW_PRIORITY)
    queue.add("a")  # raise: depth moves between priorities, no second add
    queue.add("a")  # duplicate: no hooks
    clock.advance(2)
    item, _ = get_now(queue)
    clock.advance(3)
    queue.done(item)
    assert metrics.calls == [
        ("add", LOW_PRIORITY),
        ("depth", LOW_PRIORITY, 1),
        ("depth", LOW_PRIORITY, -1),
        ("depth", 0, 1),
        ("depth", 0, -1),
        ("get", 0, 2.0),
        ("done", 3.0),
    ]


async def test_metrics_count_retries_and_add_delayed_items_when_ready() -> None:
    clock = ManualClock()
    metrics = RecordingMetrics()
    queue: WorkQueue[str] = WorkQueue(metrics=metrics, clock=clock)
    queue.add_rate_limited("a")
    queue.add_after("a", 10)
    assert metrics.calls == [("retry",), ("retry",)], "not ready, so not in the depth yet"
    clock.advance(1)
    get_now(queue)
    # Queue time counts from when the item was due, even though it was noticed later.
    assert metrics.calls[2:5] == [("add", 0), ("depth", 0, 1), ("depth", 0, -1)]
    assert metrics.calls[5][0:2] == ("get", 0)
    assert metrics.calls[5][2] == pytest.approx(1 - 0.005)


async def test_unfinished_and_longest_running_work() -> None:
    clock = ManualClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    assert queue.unfinished_work_seconds() == 0.0
    assert queue.longest_running_processor_seconds() == 0.0
    queue.add("a")
    queue.add("b")
    get_now(queue)
    clock.advance(4)
    get_now(queue)
    clock.advance(1)
    assert queue.unfinished_work_seconds() == pytest.approx(5 + 1)
    assert queue.longest_running_processor_seconds() == pytest.approx(5)
    queue.done("a")
    assert queue.unfinished_work_seconds() == pytest.approx(1)
    assert queue.longest_running_processor_seconds() == pytest.approx(1)
