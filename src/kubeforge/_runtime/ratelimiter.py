"""Rate limiters that decide how long a failed work-queue item waits before its retry.

The work queue asks `when(item)` each time an item is re-added after a failure and calls
`forget(item)` once the item succeeds. The per-item exponential backoff is the default for
controllers (5 ms doubling up to 1000 s); the token bucket and `MaxOf` reproduce the classic
client-go controller limiter for those who want an overall retry budget as well.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Protocol, TypeVar

from kubeforge import clock as process_clock

__all__ = [
    "BucketRateLimiter",
    "Clock",
    "ItemExponentialBackoff",
    "MaxOf",
    "RateLimiter",
    "default_controller_rate_limiter",
]

Clock = Callable[[], float]
"""A source of seconds that only moves forward (default: the process's monotonic clock)."""

K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)


class RateLimiter(Protocol[K_contra]):
    """Decides the delay before an item's next retry and remembers its failures."""

    def when(self, item: K_contra) -> float:
        """Record one more failure of `item` and return the seconds to wait before retrying."""
        ...

    def forget(self, item: K_contra) -> None:
        """Drop what is known about `item`, so its next failure starts from scratch."""
        ...

    def num_requeues(self, item: K_contra) -> int:
        """How many failures of `item` have been recorded since it was last forgotten."""
        ...


class ItemExponentialBackoff:
    """Per-item backoff: `base * 2**failures` seconds, never more than `cap`."""

    __slots__ = ("_failures", "_max_exponent", "base", "cap")

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        if base <= 0 or cap < 0:
            raise ValueError("base must be positive and cap non-negative")
        self.base = base
        self.cap = cap
        self._failures: dict[Hashable, int] = {}
        # Past this exponent the delay is certainly capped; stopping there also keeps the float
        # multiplication from overflowing after thousands of failures.
        exponent = 0
        while base * (1 << exponent) < cap:
            exponent += 1
        self._max_exponent = exponent

    def when(self, item: Hashable) -> float:
        """Count a failure of `item` and return its backoff."""
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        if failures >= self._max_exponent:
            return self.cap
        return min(self.base * (1 << failures), self.cap)

    def forget(self, item: Hashable) -> None:
        """Reset the failure count of `item`."""
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        """Failures recorded for `item`."""
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket: `qps` tokens per second, holding at most `burst`.

    Every `when` reserves one token; when the bucket is empty the reservation is taken on credit
    and the delay is the time until that token will have been refilled. Items are not tracked.
    """

    __slots__ = ("_clock", "_last", "_tokens", "burst", "qps")

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 0:
            raise ValueError("qps must be positive and burst non-negative")
        self.qps = qps
        self.burst = burst
        self._clock = clock if clock is not None else process_clock.monotonic
        self._tokens = float(burst)
        self._last = self._clock()

    def when(self, item: object) -> float:
        """Reserve one token and return how long until it is available."""
        now = self._clock()
        if now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
        self._tokens -= 1.0
        return -self._tokens / self.qps if self._tokens < 0 else 0.0

    def forget(self, item: object) -> None:
        """Nothing to forget: the bucket is shared by all items."""

    def num_requeues(self, item: object) -> int:
        """Always 0: the bucket does not count per item."""
        return 0


class MaxOf:
    """Combines limiters: the delay is the longest any of them asks for."""

    __slots__ = ("limiters",)

    def __init__(self, *limiters: RateLimiter[Hashable]) -> None:
        if not limiters:
            raise ValueError("MaxOf needs at least one rate limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        """Ask every limiter (each records the failure) and return the largest delay."""
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        """Forget `item` in every limiter."""
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        """The largest failure count any limiter holds for `item`."""
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOf:
    """client-go's classic controller limiter: per-item 5 ms..1000 s backoff, overall 10 qps/100.

    The work queue's own default is the per-item backoff alone, as with a priority queue.
    """
    return MaxOf(ItemExponentialBackoff(0.005, 1000.0), BucketRateLimiter(10.0, 100, clock=clock))
