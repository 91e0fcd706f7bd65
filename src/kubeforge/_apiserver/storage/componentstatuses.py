"""ComponentStatus objects: the health of the control plane's parts, worked out on each read.

As pkg/registry/core/componentstatus/rest.go does it, nothing is stored: a get or list asks
each known component for its health and answers one ComponentStatus per component, with a
single `Healthy` condition. The server knows its own store (`etcd-0`, which is what kube
calls the storage it reports); whatever runs beside it (a development cluster's scheduler and
controller manager) adds its own check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.storage.listing import Selection

__all__ = ["ComponentStatuses", "Health"]

# (healthy, message, error) of one component.
Health = tuple[bool, str, str]


class ComponentStatuses:
    """The components whose health `componentstatuses` reports, by name."""

    def __init__(self) -> None:
        self._checks: dict[str, Callable[[], Health]] = {"etcd-0": lambda: (True, "ok", "")}

    def register(self, name: str, check: Callable[[], Health]) -> None:
        """Report `name`'s health from now on, as `check` gives it at each read."""
        self._checks[name] = check

    def _object(self, name: str) -> dict[str, Any]:
        healthy, message, error = self._checks[name]()
        condition: dict[str, Any] = {"type": "Healthy", "status": "True" if healthy else "False"}
        if message:
            condition["message"] = message
        if error:
            condition["error"] = error
        return {
            "kind": "ComponentStatus",
            "apiVersion": "v1",
            "metadata": {"name": name, "creationTimestamp": None},
            "conditions": [condition],
        }

    def get(self, name: str) -> dict[str, Any]:
        if name not in self._checks:
            raise StatusError.not_found("", "componentstatuses", name)
        return self._object(name)

    def list(self, selection: Selection) -> list[dict[str, Any]]:
        matches = selection.predicate()
        objects = [self._object(name) for name in sorted(self._checks)]
        return objects if matches is None else [o for o in objects if matches(o)]
