"""The process-wide clock: the real one by default, another one inside `clock.use`; the
virtual clock that stands still until advanced."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

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


# -- the virtual clock -----------------------------------------------------------------------

START = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_a_virtual_clock_stands_still_where_it_starts() -> None:
    virtual = clock.VirtualClock(START)
    assert virtual.now() == START
    assert virtual.time() == START.timestamp()
    before = virtual.monotonic()
    assert virtual.now() == START and virtual.monotonic() == before
    assert virtual.next_due() is None
    # By default it starts at the machine's time, to the second.
    default = clock.VirtualClock().now()
    assert default.microsecond == 0
    assert abs((default - clock.RealClock().now()).total_seconds()) < 5
    with pytest.raises(ValueError, match="time zone"):
        clock.VirtualClock(datetime(2030, 1, 1))  # naive on purpose


async def test_advance_fires_due_timers_in_time_order_at_their_own_times() -> None:
    virtual = clock.VirtualClock(START)
    fired: list[tuple[str, float]] = []

    def record(name: str) -> None:
        fired.append((name, (virtual.now() - START).total_seconds()))
        if name == "b":
            # Set from a timer, due inside the window: it fires in this advance too.
            virtual.call_later(5, lambda: record("b+5"))

    virtual.call_later(30, lambda: record("c"))
    virtual.call_later(10, lambda: record("b"))
    virtual.call_later(10, lambda: record("b'"))  # the same moment: in the order set
    virtual.call_later(3600, lambda: record("later"))
    cancelled = virtual.call_later(20, lambda: record("cancelled"))
    cancelled.cancel()
    assert virtual.next_due() == START + timedelta(seconds=10)

    await virtual.advance(seconds=30)
    assert fired == [("b", 10.0), ("b'", 10.0), ("b+5", 15.0), ("c", 30.0)]
    assert virtual.now() == START + timedelta(seconds=30)
    assert virtual.next_due() == START + timedelta(hours=1)
    # The spellings add up: a timedelta (or seconds) and the keywords.
    await virtual.advance(timedelta(minutes=58), seconds=29, minutes=1, hours=0, days=0)
    assert fired[-1][0] == "c"
    await virtual.advance(1.0)
    assert fired[-1] == ("later", 3600.0)
    await virtual.advance(days=1, hours=1)
    assert virtual.now() == START + timedelta(days=1, hours=2)


async def test_sleeps_and_timeouts_wait_for_the_clock_to_be_advanced() -> None:
    virtual = clock.VirtualClock(START)
    with clock.use(virtual):
        woke: list[datetime] = []

        async def sleeper() -> None:
            await clock.sleep(60)
            woke.append(clock.now())

        async def waiter() -> datetime:
            with pytest.raises(TimeoutError):
                await clock.wait_for(asyncio.Event().wait(), 90)
            return clock.now()

        sleeping = asyncio.create_task(sleeper())
        waiting = asyncio.create_task(waiter())
        await asyncio.sleep(0.05)  # real time passes; the virtual clock does not
        assert woke == [] and not waiting.done()
        await virtual.advance(seconds=59)
        assert woke == []
        await virtual.advance(seconds=1)
        assert woke == [START + timedelta(seconds=60)]
        assert not waiting.done()
        await virtual.advance(seconds=30)
        assert waiting.done() and waiting.result() == START + timedelta(seconds=90)
        await sleeping
        # A block that ends in time is not cut short.
        async with clock.timeout(10):
            await clock.sleep(0)


async def test_advance_lets_what_a_timer_sets_off_settle_before_the_next_timer() -> None:
    """A timer starts an exchange over a loopback socket; the answer, once read, sets a
    timer five seconds on. Advancing runs it at 15 s, not at whatever time the clock had
    reached when the answer arrived."""
    virtual = clock.VirtualClock(START)
    seen: list[float] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            writer.write(line)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def exchange() -> None:
        writer.write(b"ping\n")
        assert await reader.readline() == b"ping\n"
        virtual.call_later(5, lambda: seen.append((virtual.now() - START).total_seconds()))

    running: list[asyncio.Future[None]] = []

    def start() -> None:
        seen.append((virtual.now() - START).total_seconds())
        running.append(asyncio.ensure_future(exchange()))

    virtual.call_later(10, start)
    virtual.call_later(40, lambda: seen.append((virtual.now() - START).total_seconds()))
    try:
        await virtual.advance(minutes=1)
    finally:
        writer.close()
        server.close()
        await server.wait_closed()
    assert seen == [10.0, 15.0, 40.0]


async def test_settle_waits_for_counted_work_in_threads_and_requests() -> None:
    virtual = clock.VirtualClock(START)
    done: list[str] = []

    def work() -> None:
        time.sleep(0.1)  # a thread's work: the event loop has nothing to do meanwhile
        done.append("thread")

    task = asyncio.ensure_future(clock.activity.to_thread(work))
    await asyncio.sleep(0)
    await virtual.settle()
    assert done == ["thread"] and task.done()

    # Something counted as in flight that never finishes: settle gives up, saying why.
    impatient = clock.VirtualClock(START, patience=0.05)
    clock.activity.requests += 1
    try:
        with pytest.raises(TimeoutError, match="1 requests in flight"):
            await impatient.settle()
    finally:
        clock.activity.requests -= 1


async def test_advancing_is_one_at_a_time_and_only_forward() -> None:
    virtual = clock.VirtualClock(START)
    with pytest.raises(ValueError, match="backwards"):
        await virtual.advance(seconds=-1)
    blocker = asyncio.Event()
    virtual.call_later(1, lambda: asyncio.ensure_future(blocker.wait()))
    first = asyncio.create_task(virtual.advance(seconds=2))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="already"):
        await virtual.advance(seconds=1)
    await first
    assert virtual.now() == START + timedelta(seconds=2)


async def test_the_real_clock_cannot_be_advanced() -> None:
    with pytest.raises(RuntimeError, match="VirtualClock"):
        await clock.RealClock().advance(hours=1)


def test_cancelled_timers_do_not_pile_up_on_a_clock_nobody_advances() -> None:
    virtual = clock.VirtualClock(START)
    kept = virtual.call_later(3600, lambda: None)
    for _ in range(1000):
        virtual.call_later(60, lambda: None).cancel()
    assert len(virtual._timers) < 200
    assert virtual.next_due() == START + timedelta(hours=1)
    kept.cancel()
    assert virtual.next_due() is None
