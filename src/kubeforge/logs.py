"""Logging with the running reconcile's context, as controller-runtime's `log`
package: `reconcile_logger(name)` (a reconciler's `self.log`) adds the controller, object and
reconcile id to each record; `current_reconcile()` is that context; `configure_logging()`
sets up text or JSON output as `kubeforge run` does.
"""

from __future__ import annotations

from kubeforge._runtime.logs import (
    ReconcileContext,
    ReconcileLogger,
    configure_logging,
    current_reconcile,
    reconcile_logger,
)

__all__ = [
    "ReconcileContext",
    "ReconcileLogger",
    "configure_logging",
    "current_reconcile",
    "reconcile_logger",
]
