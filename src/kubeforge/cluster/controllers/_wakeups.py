"""Reconciles a controller asks for at a later time of kubeforge.clock: a CronJob's next
start, a PodDisruptionBudget's recheck when an eviction it allowed is overdue.

The timers run on the process's clock rather than the work queue's, so a test that swaps
in a clock of its own moves these deadlines with it. A timer that fires sends its request
through a `Channel` the controller watches (`builder.watches_source(wakeups.channel)`).
"""

from __future__ import annotations

import functools

from kubeforge import clock
from kubeforge.runtime.reconcile import Request
from kubeforge.runtime.source import Channel

__all__ = ["Wakeups"]


class Wakeups:
    """One pending wake-up per request; setting another replaces it."""

    def __init__(self) -> None:
        self.channel = Channel()
        self._timers: dict[Request, clock.Timer] = {}

    def after(self, request: Request, delay: float | None) -> None:
        """Reconcile `request` after `delay` seconds (None: drop its pending wake-up)."""
        timer = self._timers.pop(request, None)
        if timer is not None:
            timer.cancel()
        if delay is not None:
            self._timers[request] = clock.call_later(
                max(delay, 0.0), functools.partial(self._fire, request)
            )

    def _fire(self, request: Request) -> None:
        self._timers.pop(request, None)
        self.channel.send(request)
