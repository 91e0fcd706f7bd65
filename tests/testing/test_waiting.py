"""eventually on a virtual clock: the checks wait for the process to settle, not for the
polling interval, and what waits for the virtual clock still waits for it."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest

from kubeforge import clock
from kubeforge.testing import eventually

START = datetime(2030, 1, 2, tzinfo=UTC)


async def test_on_a_virtual_clock_a_check_follows_what_the_process_does_at_once() -> None:
    """A chain of a hundred hand-offs finishes between two checks; the polling interval
    (an hour) is never slept."""
    virtual = clock.VirtualClock(START)
    handed: list[int] = []
    tasks: list[asyncio.Task[None]] = []

    async def hand_on(left: int) -> None:
        await asyncio.sleep(0)
        handed.append(left)
        if left:
            tasks.append(asyncio.create_task(hand_on(left - 1)))

    with clock.use(virtual):
        tasks.append(asyncio.create_task(hand_on(100)))
        started = time.monotonic()
        assert await eventually(lambda: len(handed) == 101, interval=3600, timeout=5)
        assert time.monotonic() - started < 2
        assert virtual.now() == START  # settling does not move the clock


async def test_what_waits_for_the_virtual_clock_keeps_waiting() -> None:
    virtual = clock.VirtualClock(START)
    woke: list[datetime] = []

    async def later() -> None:
        await clock.sleep(1)
        woke.append(clock.now())

    with clock.use(virtual):
        task = asyncio.create_task(later())
        # The timeout is the machine's time: it runs out although the clock stands still.
        with pytest.raises(AssertionError, match=r"not met within 0\.2 s"):
            await eventually(lambda: woke, timeout=0.2, interval=0.01)
        await virtual.advance(seconds=1)
        assert await eventually(lambda: woke) == [datetime(2030, 1, 2, 0, 0, 1, tzinfo=UTC)]
        await task
