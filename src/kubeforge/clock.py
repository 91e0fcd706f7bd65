"""The one clock every layer reads: wall time, monotonic time, sleeping and timers.

Code that needs the time asks this module (`clock.now()`, `await clock.sleep(5)`,
`clock.call_later(30, fire)`, `async with clock.timeout(10)`) instead of `time`,
`datetime.now` or `asyncio.sleep`, so a test cluster can swap in a clock of its own
(`clock.use(...)`) and every part of the process (the API server's timestamps, the work
queue's delays, controllers' schedules, simulated containers) follows it together. The real
clock is the default.

`VirtualClock` is the clock of tests that need hours to pass in no time: it stands still
until `await clock.advance(hours=1)` moves it, firing every timer that falls due on the way,
in time order, and letting the process settle after each (docs/testing.md, "Virtual time";
docs/decisions/0053-virtual-time.md).

What measures I/O (a connection's idle timeout, a request's deadline, a retry after a
failed request) or the process's own work (latency metrics) reads the machine's clock, and
says so where it does.

The clock is process-wide on purpose: the API server, the built-in controllers and the
operator under test share one event loop in a test, and must agree on what time it is.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import itertools
import logging
import time as _time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar

__all__ = [
    "Clock",
    "RealClock",
    "Timer",
    "VirtualClock",
    "call_later",
    "get",
    "monotonic",
    "now",
    "sleep",
    "time",
    "timeout",
    "use",
    "wait_for",
]

log = logging.getLogger("kubeforge.clock")

T = TypeVar("T")


class Timer(Protocol):
    """A callback scheduled by `Clock.call_later`."""

    def cancel(self) -> None:
        """Stop the callback from running, if it has not run yet."""
        ...


class Clock(Protocol):
    """A source of time. Wall and monotonic time move together; only wall time may jump
    when the clock is set (a virtual clock advanced by a test moves both)."""

    def now(self) -> datetime:
        """The current wall time, timezone-aware (UTC)."""
        ...

    def time(self) -> float:
        """The current wall time as seconds since the epoch."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary start that never go backwards."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return after `seconds` of this clock's time."""
        ...

    def call_later(self, delay: float, callback: Callable[[], object]) -> Timer:
        """Run `callback` on the running event loop after `delay` seconds of this clock."""
        ...


class RealClock:
    """The machine's clock: `time.time`, `time.monotonic`, `asyncio.sleep`, the event
    loop's timers."""

    # The functions themselves, not methods calling them: the work queue and the write path
    # read these on every item and every write.
    time = staticmethod(_time.time)
    monotonic = staticmethod(_time.monotonic)

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def call_later(self, delay: float, callback: Callable[[], object]) -> Timer:
        return asyncio.get_running_loop().call_later(max(delay, 0.0), callback)

    async def advance(
        self,
        delta: timedelta | float | None = None,
        *,
        seconds: float = 0.0,
        minutes: float = 0.0,
        hours: float = 0.0,
        days: float = 0.0,
    ) -> None:
        """Refused: the machine's time passes by itself. (`TestEnv(virtual_time=True)`
        gives a clock that can be advanced.)"""
        raise RuntimeError(
            "the real clock cannot be advanced: run on a VirtualClock "
            "(TestEnv(virtual_time=True), @pytest.mark.kubeforge_virtual_time)"
        )


class Activity:
    """Work in progress that the event loop cannot see but that will finish without the
    clock moving: requests whose answers are on their way (retries included), work handed to
    threads. kubeforge's client, controllers and webhook server count theirs here; a
    `VirtualClock` waits for the counts to drop to zero before it calls the process quiet."""

    __slots__ = ("requests", "threads")

    def __init__(self) -> None:
        self.requests = 0
        self.threads = 0

    def busy(self) -> bool:
        return bool(self.requests or self.threads)

    async def to_thread(self, function: Callable[..., T], /, *args: object) -> T:
        """`asyncio.to_thread`, counted while the thread works."""
        self.threads += 1
        try:
            return await asyncio.to_thread(function, *args)
        finally:
            self.threads -= 1

    def __repr__(self) -> str:
        return f"{self.requests} requests in flight, {self.threads} calls in threads"


activity = Activity()
"""The process's counts (kubeforge's own bookkeeping, not part of the public surface)."""


class _Scheduled:
    """One timer of a virtual clock."""

    __slots__ = ("callback", "cancelled", "clock", "context", "due")

    def __init__(self, clock: VirtualClock, due: int, callback: Callable[[], object]) -> None:
        self.clock: VirtualClock | None = clock  # None once out of the clock's heap
        self.due = due
        self.callback = callback
        # As the event loop's timers do: the callback runs in the context it was set in.
        self.context = contextvars.copy_context()
        self.cancelled = False

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            if self.clock is not None:
                self.clock._dropped()


def _fire(timer: _Scheduled) -> None:
    # Checked again when the loop gets to it: a timer cancelled in between stays silent.
    if not timer.cancelled:
        timer.cancelled = True
        timer.callback()


_NS = 1_000_000_000
_ROUNDING = 1000  # nanoseconds
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Turns of the event loop in a row with nothing to run before the process counts as quiet:
# bytes one callback writes to a loopback socket are read in the next turn.
_QUIET_TURNS = 2
# Without access to the loop's queue of ready callbacks (another loop implementation), this
# many turns in a row with nothing counted as in progress.
_BLIND_QUIET_TURNS = 50


class VirtualClock:
    """A clock that stands still until `advance()` moves it.

    It starts at `start` (default: now, to the second) and reads the same until a test
    advances it. Timers and sleeps wait for virtual time: a reconcile that asks to be
    requeued after an hour runs when the clock has been advanced by an hour, at once, and
    never before — also not when nobody advances the clock, which is the point. `advance`
    runs what falls due in time order and lets everything it causes (requests, watch events,
    reconciles, timers set within the window) settle before the next.

    `patience` bounds how long `settle()` waits, in real seconds, for work it cannot see
    (requests in flight, threads) while the event loop has nothing to run, and for the
    process to go quiet at all; past it `settle()` raises TimeoutError.
    """

    def __init__(self, start: datetime | None = None, *, patience: float = 30.0) -> None:
        if start is None:
            start = datetime.now(UTC).replace(microsecond=0)
        elif start.tzinfo is None:
            raise ValueError("a VirtualClock's start needs a time zone, e.g. datetime.now(UTC)")
        moment = start - _EPOCH
        # Whole nanoseconds: advancing by a sum of steps lands exactly where one step would.
        self._now = (moment.days * 86_400 + moment.seconds) * _NS + moment.microseconds * 1000
        self._monotonic_offset = _time.monotonic_ns() - self._now
        self._timers: list[tuple[int, int, _Scheduled]] = []
        self._cancelled = 0  # cancelled timers still in the heap
        self._sequence = itertools.count()
        self._advancing = False
        self.patience = patience

    # Reading the time -------------------------------------------------------------------

    def now(self) -> datetime:
        return _EPOCH + timedelta(microseconds=self._now // 1000)

    def time(self) -> float:
        return self._now / _NS

    def monotonic(self) -> float:
        return (self._now + self._monotonic_offset) / _NS

    # Waiting ----------------------------------------------------------------------------

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        woken = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not woken.done():
                woken.set_result(None)

        timer = self.call_later(seconds, wake)
        try:
            await woken
        finally:
            timer.cancel()

    def call_later(self, delay: float, callback: Callable[[], object]) -> Timer:
        if delay <= 0:
            return asyncio.get_running_loop().call_soon(callback)
        timer = _Scheduled(self, self._now + max(round(delay * _NS), 1), callback)
        heapq.heappush(self._timers, (timer.due, next(self._sequence), timer))
        return timer

    def next_due(self) -> datetime | None:
        """When the earliest pending timer fires (None when nothing waits for the clock)."""
        timer = self._peek()
        return None if timer is None else _EPOCH + timedelta(microseconds=timer.due // 1000)

    def _peek(self) -> _Scheduled | None:
        timers = self._timers
        while timers and timers[0][2].cancelled:
            heapq.heappop(timers)[2].clock = None
            self._cancelled -= 1
        return timers[0][2] if timers else None

    def _dropped(self) -> None:
        """A timer in the heap was cancelled: rebuild the heap once they are most of it
        (a clock nobody advances would otherwise keep every timeout ever cancelled)."""
        self._cancelled += 1
        if self._cancelled > 64 and 2 * self._cancelled > len(self._timers):
            for entry in self._timers:
                if entry[2].cancelled:
                    entry[2].clock = None
            self._timers = [entry for entry in self._timers if not entry[2].cancelled]
            heapq.heapify(self._timers)
            self._cancelled = 0

    # Moving the clock -------------------------------------------------------------------

    async def advance(
        self,
        delta: timedelta | float | None = None,
        *,
        seconds: float = 0.0,
        minutes: float = 0.0,
        hours: float = 0.0,
        days: float = 0.0,
    ) -> None:
        """Move the clock forward by `delta` (a timedelta or seconds) plus the keywords,
        running every timer that falls due on the way in time order (those set within the
        window too), each once the process has settled after the one before; returns when
        the process is quiet at the new time. Nothing sleeps for real."""
        step = timedelta(seconds=seconds, minutes=minutes, hours=hours, days=days)
        if isinstance(delta, timedelta):
            step += delta
        elif delta is not None:
            step += timedelta(seconds=delta)
        if step < timedelta(0):
            raise ValueError("a clock cannot be moved backwards")
        if self._advancing:
            raise RuntimeError("the clock is being advanced already")
        self._advancing = True
        try:
            target = self._now + (step // timedelta(microseconds=1)) * 1000
            loop = asyncio.get_running_loop()
            await self.settle()
            # A timer a few nanoseconds past the end belongs to the window: a deadline read
            # back as a float may miss its moment by a rounding error, and whoever set it
            # then asks again for the nanoseconds it thinks are left.
            while (timer := self._peek()) is not None and timer.due <= target + _ROUNDING:
                heapq.heappop(self._timers)
                timer.clock = None
                self._now = max(self._now, timer.due)
                loop.call_soon(_fire, timer, context=timer.context)
                await self.settle()
            self._now = max(self._now, target)
        finally:
            self._advancing = False

    async def settle(self) -> None:
        """Return once the process is quiet: nothing ready to run on the event loop for two
        turns in a row (so what one callback wrote to a loopback socket has been read), and
        no request in flight or call in a thread that kubeforge counts (`activity`). What
        waits for this clock stays waiting. The clock does not move."""
        loop = asyncio.get_running_loop()
        # CPython's event loops keep the callbacks to run in their next turn in `_ready`;
        # another implementation is watched through the counts alone, for more turns.
        ready = getattr(loop, "_ready", None)
        needed = _QUIET_TURNS if ready is not None else _BLIND_QUIET_TURNS
        quiet = 0  # idle turns in a row with nothing counted in progress
        stalled = 0  # idle turns in a row while something counted is in progress
        # Real time throughout: this waits for work, not for time.
        started = idle_since = _time.monotonic()
        while quiet < needed:
            await asyncio.sleep(0)
            if ready:
                quiet = stalled = 0
                idle_since = _time.monotonic()
                if idle_since - started > self.patience:
                    raise TimeoutError(f"the process did not settle within {self.patience:g} s")
            elif activity.busy():
                quiet = 0
                stalled += 1
                if stalled > needed:
                    # What is in progress is beyond this loop (another process, a thread, a
                    # socket's far end): let the loop wait for it in its selector.
                    if _time.monotonic() - idle_since > self.patience:
                        raise TimeoutError(
                            f"the process did not settle: {activity} for {self.patience:g} s "
                            "while nothing ran (is a request waiting for this clock?)"
                        )
                    await asyncio.sleep(0.001)
            else:
                quiet += 1
                stalled = 0

    def __repr__(self) -> str:
        pending = len(self._timers) - self._cancelled
        return f"<VirtualClock at {self.now().isoformat()}, {pending} timers pending>"


_current: Clock = RealClock()


def get() -> Clock:
    """The clock the process runs on now."""
    return _current


@contextmanager
def use(clock: Clock) -> Iterator[Clock]:
    """Run the process on `clock` inside the block, then on the clock before it."""
    global _current
    before, _current = _current, clock
    try:
        yield clock
    finally:
        _current = before


def now() -> datetime:
    """The current wall time (UTC) of the process's clock."""
    return _current.now()


def time() -> float:
    """The current wall time of the process's clock, as seconds since the epoch."""
    return _current.time()


def monotonic() -> float:
    """The process's clock's monotonic seconds."""
    return _current.monotonic()


async def sleep(seconds: float) -> None:
    """Sleep `seconds` of the process's clock."""
    await _current.sleep(seconds)


def call_later(delay: float, callback: Callable[[], object]) -> Timer:
    """Run `callback` after `delay` seconds of the process's clock."""
    return _current.call_later(delay, callback)


@asynccontextmanager
async def timeout(seconds: float | None) -> AsyncIterator[None]:
    """`asyncio.timeout` on the process's clock: the block is cancelled, and TimeoutError
    raised, once `seconds` of the clock have passed (None: no limit)."""
    current = _current
    if seconds is None or isinstance(current, RealClock):
        async with asyncio.timeout(seconds):
            yield
        return
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(None) as limit:
        # Expiring the asyncio timeout now, when this clock says so, keeps its handling of
        # cancellation (only this block's, not an outer one's) as it is.
        timer = current.call_later(seconds, lambda: limit.reschedule(loop.time()))
        try:
            yield
        finally:
            timer.cancel()


async def wait_for(awaitable: Awaitable[T], seconds: float | None) -> T:
    """`asyncio.wait_for` on the process's clock: `awaitable`'s result, or TimeoutError
    (the awaitable cancelled) once `seconds` of the clock have passed."""
    async with timeout(seconds):
        return await awaitable
