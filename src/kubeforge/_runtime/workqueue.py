"""The controller work queue: deduplicating, prioritised, delayed, rate-limited.

Contract (the one controllers rely on):

* An item waits in the queue at most once. Adding it again keeps the highest priority and the
  earliest ready time; raising the priority moves it to the back of the new priority's line.
* An item handed out by `get()` is *processing* until `done(item)`. Adds meanwhile only mark it
  dirty, and `done` re-queues it once, so any number of events during one reconcile collapse into
  one follow-up and a key is never held by two workers at once.
* `get()` returns the ready item of highest priority, first-in first-out within a priority.
  Delayed items become ready at their time, driven by a single timer for the whole queue.
* Aging: initial-list and resync events arrive at `LOW_PRIORITY`. Constant priority-0 traffic would
  otherwise starve them, so a negative-priority item that has been ready for `max_wait` seconds
  competes as priority 0, lining up as though it had arrived at the moment it aged. It still
  reports its own priority from `get()`, so a requeue of it stays low.

Time is the process's clock (kubeforge.clock) as it was when the queue was made, so on a virtual
clock delays and backoffs wait for the clock to be advanced; a `clock` function given instead is
read for times while the event loop's timer wakes delayed items (tests fake time that way).

Everything runs on one event loop; the queue is not thread-safe. A `get()` that finds a ready item
returns without suspending, and idle workers wait on plain futures woken by `add`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Hashable
from heapq import heapify, heappop, heappush
from itertools import count
from typing import Generic, Protocol, TypeVar

from kubeforge import clock as process_clock
from kubeforge._runtime.ratelimiter import Clock, ItemExponentialBackoff, RateLimiter

__all__ = [
    "DEFAULT_MAX_WAIT",
    "LOW_PRIORITY",
    "QueueMetrics",
    "ShutDown",
    "WorkQueue",
]

LOW_PRIORITY = -100
"""Priority of events from an informer's initial list and from resyncs."""

DEFAULT_MAX_WAIT = 10.0
"""Seconds a negative-priority item may wait before it competes as priority 0."""

T = TypeVar("T", bound=Hashable)

_IMMEDIATE = float("-inf")
# Beyond this many priority levels, empty ones are dropped instead of kept for reuse.
_KEEP_LEVELS = 8


class ShutDown(Exception):
    """Raised by `WorkQueue.get` once the queue is shutting down."""


class QueueMetrics(Protocol):
    """What a work queue reports, one instance per queue; the Prometheus adapter
    (`kubeforge._runtime.metrics.QueueMetricsAdapter`) turns it into `workqueue_*` series.

    Depth moves only through `depth`: the queue calls `add` and `depth(p, +1)` when an item
    becomes ready, and `depth(p, -1)` and `get` when a worker takes it.
    """

    def add(self, priority: int) -> None:
        """An item entered the ready queue at `priority` (`workqueue_adds_total`)."""
        ...

    def get(self, priority: int, queued_seconds: float) -> None:
        """An item at `priority` went to a worker after `queued_seconds` ready."""
        ...

    def done(self, work_seconds: float) -> None:
        """A worker finished an item it held for `work_seconds`."""
        ...

    def retry(self) -> None:
        """An item was added with a non-zero delay (`workqueue_retries_total`)."""
        ...

    def depth(self, priority: int, delta: int) -> None:
        """The number of ready items at `priority` changed by `delta` (`workqueue_depth`)."""
        ...


class WorkQueue(Generic[T]):
    """A deduplicating priority work queue for one controller; see the module documentation."""

    def __init__(
        self,
        name: str = "",
        *,
        rate_limiter: RateLimiter[T] | None = None,
        metrics: QueueMetrics | None = None,
        max_wait: float | None = DEFAULT_MAX_WAIT,
        clock: Clock | None = None,
    ) -> None:
        """Create an empty queue; `max_wait=None` turns aging off, `clock` defaults to the
        process's clock."""
        self.name = name
        self.rate_limiter: RateLimiter[T] = (
            rate_limiter if rate_limiter is not None else ItemExponentialBackoff(0.005, 1000.0)
        )
        self.max_wait = max_wait
        self._metrics = metrics
        self._clock: Clock
        self._call_later: Callable[[float, Callable[[], object]], process_clock.Timer]
        if clock is None:
            # Bound once: the real clock's monotonic is time.monotonic itself, read per item.
            source = process_clock.get()
            self._clock, self._call_later = source.monotonic, source.call_later
        else:
            self._clock, self._call_later = clock, _loop_call_later
        # Whether the timer runs on the clock the times are read from (see _on_timer).
        self._timer_on_clock = clock is None
        # Ready items with their priority and the time each became ready; one FIFO per priority.
        self._ready: dict[T, tuple[int, float]] = {}
        self._queues: dict[int, deque[T]] = {}
        self._levels: list[int] = []  # priorities with a FIFO, highest first
        self._low = 0  # ready items with a negative priority
        # A raised item leaves a stale copy in its old FIFO, skipped when reached; counted per
        # (priority, item) because a later live copy in the same FIFO always comes after it.
        self._stale: dict[tuple[int, T], int] = {}
        self._stale_total = 0
        # Delayed items: a heap of (ready_at, seq, item); the dict holds each item's live entry.
        self._heap: list[tuple[float, int, T]] = []
        self._waiting: dict[T, tuple[float, int, T]] = {}
        self._waiting_priority: dict[T, int] = {}
        self._seq = count()
        self._timer: process_clock.Timer | None = None
        self._timer_at = 0.0
        # Items held by workers (with the time they were handed out) and their pending re-adds.
        self._processing: dict[T, float] = {}
        self._dirty: dict[T, tuple[int, float]] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        self._drained: asyncio.Future[None] | None = None

    def __len__(self) -> int:
        """Items waiting in the queue, ready or delayed (not those being processed)."""
        return len(self._ready) + len(self._waiting)

    @property
    def shutting_down(self) -> bool:
        """True once `shutdown` or `shutdown_with_drain` has been called."""
        return self._shutting_down

    # Adding ---------------------------------------------------------------------------------

    def add(self, item: T, priority: int = 0) -> None:
        """Queue `item` now, or mark it for one more pass if a worker currently holds it."""
        if self._shutting_down:
            return
        # A ready item cannot be held, so the common duplicate costs one lookup.
        current = self._ready.get(item)
        if current is not None:
            if priority > current[0]:
                self._raise_priority(item, current, priority)
            return
        if item in self._processing:
            self._mark_dirty(item, priority, _IMMEDIATE)
            return
        if self._waiting and item in self._waiting:
            # The heap entry stays behind; it is recognised as stale when it surfaces.
            del self._waiting[item]
            waited = self._waiting_priority.pop(item)
            if waited > priority:
                priority = waited
        self._push_ready(item, priority, self._clock())

    def add_after(self, item: T, delay_seconds: float, priority: int = 0) -> None:
        """Queue `item` once `delay_seconds` have passed; an earlier pending time wins."""
        if delay_seconds <= 0:
            self.add(item, priority)
            return
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retry()
        ready_at = self._clock() + delay_seconds
        if item in self._processing:
            self._mark_dirty(item, priority, ready_at)
            return
        current = self._ready.get(item)
        if current is not None:
            if priority > current[0]:
                self._raise_priority(item, current, priority)
            return
        entry = self._waiting.get(item)
        if entry is not None:
            waited = self._waiting_priority[item]
            if priority > waited:
                self._waiting_priority[item] = priority
            if ready_at >= entry[0]:
                return
        else:
            self._waiting_priority[item] = priority
        self._push_waiting(item, ready_at)

    def add_rate_limited(self, item: T, priority: int = 0) -> None:
        """Queue `item` after the rate limiter's backoff for it (which counts one more failure)."""
        self.add_after(item, self.rate_limiter.when(item), priority)

    def forget(self, item: T) -> None:
        """Reset the failure count of `item`, so its next backoff starts from the base delay."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """Failures of `item` recorded by the rate limiter since it was last forgotten."""
        return self.rate_limiter.num_requeues(item)

    def discard(self, unwanted: Callable[[T], bool]) -> int:
        """Take every item `unwanted` selects out of the queue, ready or delayed, with its
        failure count; one a worker holds stays held until `done()` but is not queued again
        by adds made meanwhile. Returns how many waiting items went."""
        gone = [item for item in self._ready if unwanted(item)]
        metrics = self._metrics
        for item in gone:
            priority = self._ready.pop(item)[0]
            if priority < 0:
                self._low -= 1
            if metrics is not None:
                metrics.depth(priority, -1)
        if gone:
            dropped = set(gone)
            for level, queue in self._queues.items():
                self._queues[level] = deque(i for i in queue if i not in dropped)
            for key in [k for k in self._stale if k[1] in dropped]:
                self._stale_total -= self._stale.pop(key)
        delayed = [item for item in self._waiting if unwanted(item)]
        for item in delayed:
            del self._waiting[item]
            del self._waiting_priority[item]
        if delayed:
            self._heap = [entry for entry in self._heap if self._waiting.get(entry[2]) is entry]
            heapify(self._heap)
        for item in [item for item in self._dirty if unwanted(item)]:
            del self._dirty[item]
        for item in (*gone, *delayed):
            self.rate_limiter.forget(item)
        return len(gone) + len(delayed)

    # Taking ---------------------------------------------------------------------------------

    async def get(self) -> tuple[T, int]:
        """Wait for the next ready item and return it with its priority; raises `ShutDown`."""
        while True:
            if self._shutting_down:
                raise ShutDown
            now = self._clock()
            heap = self._heap
            if heap and heap[0][0] <= now:
                self._promote(now)
            if self._ready:
                if self._low or self._stale_total:
                    item, priority = self._take_slow(now)
                else:
                    queues = self._queues
                    for priority in self._levels:
                        queue = queues[priority]
                        if queue:
                            break
                    item = queue.popleft()
                    if not queue and len(self._levels) > _KEEP_LEVELS:
                        del queues[priority]
                        self._levels.remove(priority)
                since = self._ready.pop(item)[1]
                self._processing[item] = now
                metrics = self._metrics
                if metrics is not None:
                    metrics.depth(priority, -1)
                    metrics.get(priority, now - since)
                return item, priority
            await self._wait()

    def done(self, item: T) -> None:
        """Release `item`; if it was added while held, queue it once more (now or after a delay)."""
        started = self._processing.pop(item, None)
        if started is None:
            return
        metrics = self._metrics
        pending = self._dirty.pop(item, None) if self._dirty else None
        if metrics is not None or pending is not None:
            now = self._clock()
            if metrics is not None:
                metrics.done(now - started)
            if pending is not None and not self._shutting_down:
                priority, ready_at = pending
                if ready_at <= now:
                    self._push_ready(item, priority, now)
                else:
                    self._waiting_priority[item] = priority
                    self._push_waiting(item, ready_at)
        drained = self._drained
        if drained is not None and not self._processing and not drained.done():
            drained.set_result(None)

    # Shutting down --------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop handing out items and accepting adds; every waiting `get()` raises `ShutDown`.

        A `shutdown_with_drain` in progress stops waiting.
        """
        self._stop()
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_result(None)

    async def shutdown_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down, then wait until workers are done with the items they hold.

        Ready and delayed items are not handed out any more. Returns True when nothing is held
        any longer, False if `timeout` expired or `shutdown()` cut the wait short.
        """
        self._stop()
        if not self._processing:
            return True
        drained = self._drained
        if drained is None or drained.done():
            drained = self._drained = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(drained)
        except TimeoutError:
            pass
        return not self._processing

    def _stop(self) -> None:
        self._shutting_down = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        getters = self._getters
        while getters:
            getter = getters.popleft()
            if not getter.done():
                getter.set_result(None)

    # Introspection for metrics ----------------------------------------------------------------

    def unfinished_work_seconds(self) -> float:
        """Seconds of work in progress, summed over the items workers hold now.

        This and `longest_running_processor_seconds` may be called from a metrics-scrape thread:
        they take a snapshot in one C-level step instead of iterating the live dict.
        """
        started = list(self._processing.values())
        return len(started) * self._clock() - sum(started) if started else 0.0

    def longest_running_processor_seconds(self) -> float:
        """Seconds the longest-held item has been in a worker's hands (0 when none is held)."""
        started = list(self._processing.values())
        return self._clock() - min(started) if started else 0.0

    # Internals ------------------------------------------------------------------------------

    def _push_ready(self, item: T, priority: int, since: float) -> None:
        """Append `item` to its priority's FIFO and wake one idle worker."""
        self._ready[item] = (priority, since)
        queue = self._queues.get(priority)
        if queue is None:
            queue = self._new_level(priority)
        queue.append(item)
        if priority < 0:
            self._low += 1
        metrics = self._metrics
        if metrics is not None:
            metrics.add(priority)
            metrics.depth(priority, 1)
        if self._getters:
            self._wake_one()

    def _raise_priority(self, item: T, current: tuple[int, float], new: int) -> None:
        """Move a ready item to the back of a higher priority's FIFO."""
        old = current[0]
        self._ready[item] = (new, current[1])
        key = (old, item)
        self._stale[key] = self._stale.get(key, 0) + 1
        self._stale_total += 1
        queue = self._queues.get(new)
        if queue is None:
            queue = self._new_level(new)
        queue.append(item)
        if old < 0 <= new:
            self._low -= 1
        if self._metrics is not None:
            self._metrics.depth(old, -1)
            self._metrics.depth(new, 1)

    def _new_level(self, priority: int) -> deque[T]:
        queue: deque[T] = deque()
        self._queues[priority] = queue
        self._levels.append(priority)
        self._levels.sort(reverse=True)
        return queue

    def _mark_dirty(self, item: T, priority: int, ready_at: float) -> None:
        pending = self._dirty.get(item)
        if pending is not None:
            if pending[0] > priority:
                priority = pending[0]
            if pending[1] < ready_at:
                ready_at = pending[1]
        self._dirty[item] = (priority, ready_at)

    def _push_waiting(self, item: T, ready_at: float) -> None:
        entry = (ready_at, next(self._seq), item)
        self._waiting[item] = entry
        heappush(self._heap, entry)
        if self._timer is None or ready_at < self._timer_at:
            self._arm_timer()

    def _promote(self, now: float) -> None:
        """Move every delayed item whose time has come into the ready FIFOs."""
        heap = self._heap
        waiting = self._waiting
        while heap and heap[0][0] <= now:
            entry = heappop(heap)
            item = entry[2]
            if waiting.get(item) is entry:
                del waiting[item]
                # Timed from when it was due, so queue-time metrics and aging include any lag.
                self._push_ready(item, self._waiting_priority.pop(item), entry[0])

    def _arm_timer(self) -> None:
        """Schedule the single timer for the earliest delayed item (needs a running loop)."""
        if self._shutting_down or not self._heap:
            return
        at = self._heap[0][0]
        try:
            timer = self._call_later(max(at - self._clock(), 0.0), self._on_timer)
        except RuntimeError:
            return  # no loop yet: get() promotes due items and arms the timer when it waits
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = timer

    def _on_timer(self) -> None:
        self._timer = None
        if self._shutting_down:
            return
        now = self._clock()
        if self._timer_on_clock and now < self._timer_at:
            # The clock's own timer: its moment has come even if the clock reads a rounding
            # error short of it.
            now = self._timer_at
        self._promote(now)
        if self._heap:
            self._arm_timer()

    async def _wait(self) -> None:
        """Park the calling worker until an add, the timer or shutdown wakes it."""
        getter = asyncio.get_running_loop().create_future()
        self._getters.append(getter)
        if self._heap and self._timer is None:
            self._arm_timer()
        try:
            await getter
        except BaseException:
            # Cancelled, or the coroutine was closed: leave no dead future to absorb a wake-up.
            getter.cancel()
            try:
                self._getters.remove(getter)
            except ValueError:
                pass
            # A wake-up this worker can no longer use goes to the next idle worker.
            if self._ready and not getter.cancelled():
                self._wake_one()
            raise

    def _wake_one(self) -> None:
        getters = self._getters
        while getters:
            getter = getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def _take_slow(self, now: float) -> tuple[T, int]:
        """Pick and pop the next item when stale copies or aging may be involved."""
        queues = self._queues
        if self._stale_total:
            for level in self._levels:
                self._drop_stale_heads(level, queues[level])
        top = 0
        for top in self._levels:
            if queues[top]:
                break
        max_wait = self.max_wait
        if self._low and max_wait is not None and top <= 0:
            # Aged items compete as priority 0, ordered by the moment they aged.
            best: int | None = None
            best_time = float("inf")
            if top == 0:
                best, best_time = 0, self._ready[queues[0][0]][1]
            aged_before = now - max_wait
            ready = self._ready
            for level in self._levels:
                queue = queues[level]
                if level >= 0 or not queue:
                    continue
                started = ready[queue[0]][1]
                if started <= aged_before and started + max_wait < best_time:
                    best, best_time = level, started + max_wait
            if best is not None:
                top = best
        queue = queues[top]
        item = queue.popleft()
        if top < 0:
            self._low -= 1
        if not queue and len(self._levels) > _KEEP_LEVELS:
            del queues[top]
            self._levels.remove(top)
        return item, top

    def _drop_stale_heads(self, level: int, queue: deque[T]) -> None:
        stale = self._stale
        while queue:
            key = (level, queue[0])
            left = stale.get(key)
            if not left:
                return
            queue.popleft()
            if left == 1:
                del stale[key]
            else:
                stale[key] = left - 1
            self._stale_total -= 1


def _loop_call_later(delay: float, callback: Callable[[], object]) -> process_clock.Timer:
    return asyncio.get_running_loop().call_later(delay, callback)
