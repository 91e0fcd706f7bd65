"""Waiting on conditions in tests, instead of sleeping for a guessed time."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

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
    one is reported if time runs out."""
    deadline = time.monotonic() + timeout
    last: AssertionError | None = None
    while True:
        try:
            value = check()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
        except AssertionError as exc:
            last = exc
        if time.monotonic() >= deadline:
            what = message or getattr(check, "__name__", "condition")
            detail = f": {last}" if last is not None else ""
            raise AssertionError(f"{what} not met within {timeout} s{detail}") from last
        await asyncio.sleep(interval)
