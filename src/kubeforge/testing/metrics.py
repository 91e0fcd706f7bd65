"""Reading a manager's metrics in tests, as /metrics would show them."""

from __future__ import annotations

from kubeforge.runtime.manager import Manager

__all__ = ["metric_value"]


def metric_value(manager: Manager, name: str, **labels: str) -> float | None:
    """The value of the sample `name` whose labels include `labels` (e.g.
    `controller="at"`), or None when there is none."""
    for family in manager.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None
