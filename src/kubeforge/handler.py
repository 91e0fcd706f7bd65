"""Event handlers, as controller-runtime's `handler` package: what a watched change
enqueues. `EnqueueRequestForObject` the changed object itself, `EnqueueRequestForOwner` its
owner, `EnqueueRequestsFromMapFunc` whatever a function maps it to; `EventHandler` is the
protocol for a handler of your own.
"""

from __future__ import annotations

from kubeforge._runtime.handler import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    EventHandler,
    MapFunc,
)

__all__ = [
    "EnqueueRequestForObject",
    "EnqueueRequestForOwner",
    "EnqueueRequestsFromMapFunc",
    "EventHandler",
    "MapFunc",
]
