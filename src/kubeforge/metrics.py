"""The manager's Prometheus metrics, under controller-runtime's names
(`controller_runtime_reconcile_total`, `workqueue_depth`, `rest_client_requests_total`, ...):
`Metrics` is `manager.metrics`, whose `registry` takes a project's own metrics too.
"""

from __future__ import annotations

from kubeforge._runtime.metrics import Metrics

__all__ = [
    "Metrics",
]
