"""The process-wide clock: the real one by default, another one inside `clock.use`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from kubeforge import clock


class StoppedClock:
    """A clock that only moves when told to, for checking who reads which clock."""

    def __init__(self) -> None:
        self.at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
        self.slept: list[float] = []

    def now(self) -> datetime:
        return self.at

    def time(self) -> float:
        return self.at.timestamp()

    def monotonic(self) -> float:
        return self.at.timestamp()

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    def call_later(self, delay: float, callback: Callable[[], object]) -> clock.Timer:
        return asyncio.get_running_loop().call_soon(callback)


def test_the_real_clock_is_the_default_and_aware() -> None:
    assert isinstance(clock.get(), clock.RealClock)
    assert clock.now().tzinfo is UTC
    assert abs(clock.now().timestamp() - clock.time()) < 5


async def test_use_swaps_the_clock_for_every_reader_and_restores_it() -> None:
    stopped = StoppedClock()
    with clock.use(stopped):
        assert clock.get() is stopped
        assert clock.now() == stopped.at
        assert clock.time() == stopped.at.timestamp()
        await clock.sleep(3600)
        assert stopped.slept == [3600]
        stopped.at += timedelta(hours=1)
        assert clock.monotonic() == stopped.at.timestamp()
    assert isinstance(clock.get(), clock.RealClock)
    assert clock.now().year != 2030


async def test_real_timers_run_and_can_be_cancelled() -> None:
    fired: list[str] = []
    done = asyncio.Event()
    clock.call_later(0, lambda: (fired.append("soon"), done.set()))
    cancelled = clock.call_later(0, lambda: fired.append("cancelled"))
    cancelled.cancel()
    await asyncio.wait_for(done.wait(), timeout=5)
    await asyncio.sleep(0)
    assert fired == ["soon"]
