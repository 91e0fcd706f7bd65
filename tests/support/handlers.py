"""Event handlers for tests: ones that use the queue as a controller-runtime handler may."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeforge._runtime.reconcile import Request


class QueueAfter:
    """For every event, queues `target(obj)` a moment later (the queue's add_after)."""

    def __init__(self, target: Callable[[Any], Request], delay: float = 0.05) -> None:
        self.target = target
        self.delay = delay

    def create(self, obj: Any, queue: Any, initial: bool) -> None:
        queue.add_after(self.target(obj), self.delay)

    def update(self, old: Any, new: Any, queue: Any) -> None:
        queue.add_after(self.target(new), self.delay)

    def delete(self, obj: Any, queue: Any) -> None:
        queue.add_after(self.target(obj), self.delay)
