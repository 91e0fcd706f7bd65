"""Controllers, as controller-runtime's `controller` and `builder` packages: the
`Builder` that `manager.controller()` returns, the `Controller` it builds (its work queue,
workers and watches) and `ControllerOptions` (workers, rate limiter, timeouts, panics;
`PANICS` are the exceptions counted as programming mistakes). What the controllers do is
told to `Manager.add_observer(fn)` as `Record`s: `Delivered` events, `ReconcileStarted`
(with its `Trigger`s) and `ReconcileFinished`, and each `Read` and `Write`.
"""

from __future__ import annotations

from kubeforge._runtime.builder import Builder
from kubeforge._runtime.controller import PANICS, Controller, ControllerOptions
from kubeforge._runtime.observer import (
    Delivered,
    Observer,
    Read,
    ReconcileFinished,
    ReconcileStarted,
    Record,
    Trigger,
    Write,
)

__all__ = [
    "PANICS",
    "Builder",
    "Controller",
    "ControllerOptions",
    "Delivered",
    "Observer",
    "Read",
    "ReconcileFinished",
    "ReconcileStarted",
    "Record",
    "Trigger",
    "Write",
]
