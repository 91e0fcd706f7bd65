"""A pod's state as the workload controllers judge it: terminal, active, ready, available.

Pods are the plain dicts the cache hands out.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubeforge._api.machinery.access import is_deleting, status_of
from kubeforge._api.machinery.timestamps import parse_time_or_none

__all__ = [
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "is_pod_terminal",
    "ready_condition",
    "seconds_until_available",
]


def is_pod_terminal(pod: Mapping[str, Any]) -> bool:
    return status_of(pod).get("phase") in ("Succeeded", "Failed")


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """Neither finished nor being deleted (controller.IsPodActive)."""
    return not is_pod_terminal(pod) and not is_deleting(pod)


def ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in status_of(pod).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    condition = ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def seconds_until_available(
    pod: Mapping[str, Any], min_ready_seconds: int, at: datetime
) -> float | None:
    """0 when the pod is available at `at`, the seconds it still needs when it is ready but
    not yet for minReadySeconds, None when it is not ready."""
    condition = ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return None
    if min_ready_seconds <= 0:
        return 0.0
    since = parse_time_or_none(condition.get("lastTransitionTime"))
    if since is None:
        return float(min_ready_seconds)
    remaining = since.timestamp() + min_ready_seconds - at.timestamp()
    # Available only once strictly past the deadline, as upstream compares.
    return 0.0 if remaining < 0 else remaining + 0.001


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, at: datetime) -> bool:
    """Ready for at least minReadySeconds (podutil.IsPodAvailable)."""
    return seconds_until_available(pod, min_ready_seconds, at) == 0.0
