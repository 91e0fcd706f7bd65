"""The one clock every layer reads: wall time, monotonic time, sleeping and timers.

Code that needs the time asks this module (`clock.now()`, `await clock.sleep(5)`,
`clock.call_later(30, fire)`) instead of `time`, `datetime.now` or `asyncio.sleep`, so a
test cluster can swap in a clock of its own (`clock.use(...)`) and every part of the
process (the API server's timestamps, the work queue's delays, controllers' schedules,
simulated containers) follows it together. The real clock is the default.

The clock is process-wide on purpose: the API server, the built-in controllers and the
operator under test share one event loop in a test, and must agree on what time it is.
"""

from __future__ import annotations

import asyncio
import time as _time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Protocol

__all__ = [
    "Clock",
    "RealClock",
    "Timer",
    "call_later",
    "get",
    "monotonic",
    "now",
    "sleep",
    "time",
    "use",
]


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
    """The machine's clock: `time.time`, the event loop's monotonic time, `asyncio.sleep`."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def time(self) -> float:
        return _time.time()

    def monotonic(self) -> float:
        return _time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def call_later(self, delay: float, callback: Callable[[], object]) -> Timer:
        return asyncio.get_running_loop().call_later(max(delay, 0.0), callback)


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
