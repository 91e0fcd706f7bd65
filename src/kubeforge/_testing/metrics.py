"""Reading a manager's or an embedded API server's metrics in tests, as /metrics shows them."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.samples import Sample

from kubeforge._apiserver.server import APIServer
from kubeforge._runtime.manager import Manager

__all__ = ["metric_sum", "metric_value"]


def metric_value(source: Manager | APIServer, name: str, **labels: str) -> float | None:
    """The value of the sample `name` whose labels include `labels` (e.g.
    `controller="at"`), or None when there is none."""
    for sample in _matching(source, name, labels):
        return float(sample.value)
    return None


def metric_sum(source: Manager | APIServer, name: str, **labels: str) -> float:
    """The sum of every sample `name` whose labels include `labels`: for instance the requests
    a test made, `metric_sum(server, "apiserver_request_total", verb="POST")`."""
    return sum(float(sample.value) for sample in _matching(source, name, labels))


def _matching(source: Manager | APIServer, name: str, labels: dict[str, str]) -> Iterator[Sample]:
    for family in source.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                yield sample
