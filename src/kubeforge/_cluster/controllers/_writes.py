"""What the workload controllers do with their writes' outcomes: take a written object in
place, retry a lost optimistic-concurrency race, drop creates in a terminating namespace, and
collect the errors of writes made concurrently."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubeforge._client.errors import ApiError, Conflict
from kubeforge._runtime.reconcile import Result

__all__ = ["gather_errors", "namespace_terminating", "quiet_conflicts", "replace"]

Obj = dict[str, Any]


def replace(target: Obj, new: Mapping[str, Any]) -> None:
    """Make `target` the object `new` in place, so every list holding it sees the change
    (nothing to do when `new` is `target`: the client's writes already work in place)."""
    if new is target:
        return
    target.clear()
    target.update(new)


async def quiet_conflicts(
    work: Callable[[], Any],
) -> Result | None:
    """Run a reconcile body; a write that lost an optimistic-concurrency race (the cache was
    behind) is retried with backoff rather than reported as a failure."""
    try:
        result: Result | None = await work()
    except Conflict:
        return Result(requeue=True)
    return result


def namespace_terminating(exc: BaseException) -> bool:
    """Whether a create failed because its namespace is being deleted: every later create
    there fails too, so controllers drop the error (HasStatusCause NamespaceTerminating)."""
    if not isinstance(exc, ApiError):
        return False
    causes = exc.details.get("causes") or ()
    return any(isinstance(c, Mapping) and c.get("type") == "NamespaceTerminating" for c in causes)


async def gather_errors(calls: Sequence[Any]) -> list[BaseException | None]:
    """Await `calls` concurrently; each entry is None or the exception it raised."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    return [r if isinstance(r, BaseException) else None for r in results]
