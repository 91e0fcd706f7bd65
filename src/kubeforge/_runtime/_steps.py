"""Helpers written once for async and blocking clients.

A helper is a generator that yields the client calls (`ClientCall`) and user callbacks
(`UserCall`) it needs and receives their results (or has their exceptions thrown in).
`drive` runs it against an async client, returning a coroutine, or against a blocking one
(a `SyncClient` in a `def` reconciler's thread), returning the result itself; user callbacks
run in the caller's thread either way, and may be `async def` only with an async client.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["ClientCall", "Steps", "UserCall", "drive", "is_blocking"]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class ClientCall:
    """`client.<method>(*args, **kwargs)`."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UserCall:
    """`fn(*args)`, awaited when it returns an awaitable (async clients only)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


Steps = Generator[ClientCall | UserCall, Any, R]


def is_blocking(client: Any) -> bool:
    """Whether `client`'s calls block (a SyncClient) rather than return coroutines."""
    return not inspect.iscoroutinefunction(getattr(client, "get", None))


def drive(client: Any, steps: Steps[R]) -> R | Coroutine[Any, Any, R]:
    """Run `steps` with `client`: the result for a blocking client, else a coroutine."""
    if is_blocking(client):
        return _run_blocking(client, steps)
    return _run_async(client, steps)


async def _run_async(client: Any, steps: Steps[R]) -> R:
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as done:
            result: R = done.value
            return result
        value, error = None, None
        try:
            if isinstance(step, ClientCall):
                value = await getattr(client, step.method)(*step.args, **step.kwargs)
            else:
                value = step.fn(*step.args)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:
            error = exc


def _run_blocking(client: Any, steps: Steps[R]) -> R:
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as done:
            result: R = done.value
            return result
        value, error = None, None
        try:
            if isinstance(step, ClientCall):
                value = getattr(client, step.method)(*step.args, **step.kwargs)
            else:
                value = step.fn(*step.args)
                if inspect.isawaitable(value):
                    close = getattr(value, "close", None)
                    if callable(close):
                        close()
                    raise TypeError(
                        f"{getattr(step.fn, '__qualname__', step.fn)} is async: with a "
                        "blocking client (a def reconciler's) give a plain function"
                    )
        except Exception as exc:
            error = exc
