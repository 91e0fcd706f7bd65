"""The work queue and its rate limiters, as client-go's `workqueue`: a `WorkQueue`
keeps each item once, never hands one item to two workers, orders by priority and rate-limits
retries (`ItemExponentialBackoff`, `BucketRateLimiter`, `MaxOf`); `ShutDown` ends a worker's
`get`. Controllers make their own; a controller of your own can use one directly.
"""

from __future__ import annotations

from kubeforge._runtime.ratelimiter import (
    BucketRateLimiter,
    ItemExponentialBackoff,
    MaxOf,
    RateLimiter,
)
from kubeforge._runtime.workqueue import LOW_PRIORITY, ShutDown, WorkQueue

__all__ = [
    "LOW_PRIORITY",
    "BucketRateLimiter",
    "ItemExponentialBackoff",
    "MaxOf",
    "RateLimiter",
    "ShutDown",
    "WorkQueue",
]
