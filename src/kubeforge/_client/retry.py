"""Retrying a read-modify-write that lost a race (client-go's RetryOnConflict)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from kubeforge._client.errors import Conflict
from kubeforge.clock import activity

__all__ = ["DEFAULT_BACKOFF", "DEFAULT_RETRY", "Backoff", "retry_on_conflict"]

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """How often and how long to wait between attempts (client-go's wait.Backoff)."""

    steps: int
    duration: float
    factor: float = 1.0
    jitter: float = 0.0

    def delays(self) -> list[float]:
        out, delay = [], self.duration
        for _ in range(max(self.steps - 1, 0)):
            out.append(delay * (1 + random.random() * self.jitter) if self.jitter else delay)
            delay *= self.factor
        return out


# client-go's retry.DefaultRetry and retry.DefaultBackoff.
DEFAULT_RETRY = Backoff(steps=5, duration=0.010, factor=1.0, jitter=0.1)
DEFAULT_BACKOFF = Backoff(steps=4, duration=0.010, factor=5.0, jitter=0.1)


async def retry_on_conflict(fn: Callable[[], Awaitable[T]], backoff: Backoff = DEFAULT_RETRY) -> T:
    """Run `fn` (which should re-read the object each time) until it does not hit a Conflict;
    after `backoff.steps` attempts the last Conflict is raised."""
    delays = backoff.delays()
    for delay in delays:
        try:
            return await fn()
        except Conflict:
            # A short real pause between attempts, as client-go's wait.Backoff sleeps; the
            # retry is still work in flight, which a virtual clock waits for.
            activity.requests += 1
            try:
                await asyncio.sleep(delay)
            finally:
                activity.requests -= 1
    return await fn()
