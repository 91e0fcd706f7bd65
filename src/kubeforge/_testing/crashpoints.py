"""Crash points: a manager killed right after one of its writes, as `kill -9` of the
operator's pod would stop it, to test what it leaves half done and whether a new manager
finishes it.

    with pytest.raises(ManagerCrashed):
        async with testenv.run_manager(setup, crash_after_writes=1):
            await eventually(never_true)        # interrupted by the crash
    async with testenv.run_manager(setup):      # the restarted pod
        await eventually(converged)

`crash_after_writes=N` kills the manager after the Nth successful write its controllers make
through their client (create, update, patch, apply, delete, and their status and other
subresource forms; dry runs are not writes); a function of the write (an `InterceptedCall`)
chooses the write instead. The write has happened, its caller never hears of it: from then
on no request leaves the manager (its watches drop, its leader lease is not released), and
the `run_manager` block is interrupted with `ManagerCrashed`. Writes other workers had in
flight at that moment may have landed, as they may when a process dies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kubeforge._testing.interceptors import InterceptedCall, Interceptors

__all__ = ["CrashAfter", "CrashPoint", "ManagerCrashed"]

CrashAfter = int | Callable[[InterceptedCall], bool]
"""Where a manager crashes: after its Nth write, or after the first write a function
chooses."""


class ManagerCrashed(Exception):
    """The manager of a `run_manager` block was killed at its crash point: right after
    `write` (its `writes`-th write) succeeded."""

    def __init__(self, write: InterceptedCall, writes: int) -> None:
        where = "/".join(part for part in (write.namespace, write.name) if part)
        kind = write.kind.rpartition("/")[2]
        super().__init__(f"the manager crashed after write {writes}: {write.verb} {kind} {where}")
        self.write = write
        self.writes = writes


class CrashPoint:
    """Counts the writes made through the client it intercepts (`interceptors`) while
    `armed`, and at the chosen one calls `on_crash(crash)`, once."""

    def __init__(self, after: CrashAfter) -> None:
        if isinstance(after, int) and after < 1:
            raise ValueError(f"crash_after_writes counts writes from 1, not {after}")
        self.after = after
        self.writes: list[InterceptedCall] = []
        self.crashed: ManagerCrashed | None = None
        self.armed = True
        self.on_crash: Callable[[ManagerCrashed], None] | None = None
        self.interceptors = Interceptors(default=self._count)

    def _chosen(self, call: InterceptedCall) -> bool:
        if isinstance(self.after, int):
            return len(self.writes) == self.after
        return self.after(call)

    async def _count(self, client: Any, call: InterceptedCall) -> Any:
        result = await call.proceed()
        if not call.write or not self.armed or self.crashed is not None:
            return result
        self.writes.append(call)
        if not self._chosen(call):
            return result
        self.crashed = ManagerCrashed(call, len(self.writes))
        if self.on_crash is not None:
            self.on_crash(self.crashed)
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # A reconcile the kill cancelled: it ends here, as the process did.
            raise asyncio.CancelledError
        raise self.crashed
