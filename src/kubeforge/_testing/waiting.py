"""Waiting on conditions in tests, instead of sleeping for a guessed time."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

from kubeforge import clock

__all__ = ["eventually"]

T = TypeVar("T")


@overload
async def eventually(
    check: Callable[[], Awaitable[T]],
    *,
    timeout: float = ...,
    interval: float = ...,
    message: str | None = ...,
) -> T: ...


@overload
async def eventually(
    check: Callable[[], T],
    *,
    timeout: float = ...,
    interval: float = ...,
    message: str | None = ...,
) -> T: ...


async def eventually(
    check: Callable[[], Any],
    *,
    timeout: float = 10.0,
    interval: float = 0.05,
    message: str | None = None,
) -> Any:
    """Call `check` until it returns something truthy and return that; AssertionError after
    `timeout` seconds. An AssertionError raised by `check` counts as "not yet", and the last
    one is reported if time runs out.

    `timeout` and `interval` are the machine's seconds, on any clock: they budget the test's
    own waiting. On a virtual clock a failed check is followed by waiting for the process to
    settle (`VirtualClock.settle`), so what the cluster and the controllers do in response to
    the test happens before the next check, without sleeping; what waits for the virtual
    clock keeps waiting until the test advances it."""
    # The machine's time throughout: see above.
    deadline = time.monotonic() + timeout
    last: AssertionError | None = None
    settled = False
    while True:
        try:
            value = check()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
        except AssertionError as exc:
            last = exc
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            what = message or getattr(check, "__name__", "condition")
            detail = f": {last}" if last is not None else ""
            raise AssertionError(f"{what} not met within {timeout} s{detail}") from last
        current = clock.get()
        if not settled and isinstance(current, clock.VirtualClock):
            # Checked again as soon as everything the test set off has happened.
            settled = True
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await current.settle()
            continue
        settled = False
        await asyncio.sleep(interval)
