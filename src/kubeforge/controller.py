"""Controllers, as controller-runtime's `controller` and `builder` packages: the
`Builder` that `manager.controller()` returns, the `Controller` it builds (its work queue,
workers and watches) and `ControllerOptions` (workers, rate limiter, timeouts, panics;
`PANICS` are the exceptions counted as programming mistakes).
"""

from __future__ import annotations

from kubeforge._runtime.builder import Builder
from kubeforge._runtime.controller import PANICS, Controller, ControllerOptions

__all__ = [
    "PANICS",
    "Builder",
    "Controller",
    "ControllerOptions",
]
