"""A pod's state as the workload controllers judge it: terminal, active, ready, available.

Pods are the plain dicts the cache hands out. `PodSummary` keeps what a controller reading
every pod of its object on every sync asks of each (the ReplicaSet controller), read once
per change of the pod rather than on every sync.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubeforge._api.machinery.access import controller_ref, is_deleting, labels_of, status_of
from kubeforge._api.machinery.selectors import label_selector_matches
from kubeforge._api.machinery.timestamps import parse_time_or_none

__all__ = [
    "PodSummary",
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
    return _until_available(ready_condition(pod), min_ready_seconds, at)


def _until_available(
    condition: Mapping[str, Any] | None, min_ready_seconds: int, at: datetime
) -> float | None:
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


class PodSummary:
    """What a workload controller asks of one pod on every sync: its key and name, whether it
    is active and ready (and since when), its controller's uid and its labels."""

    __slots__ = (
        "_labeled",
        "_matched",
        "active",
        "controller_uid",
        "key",
        "labels",
        "name",
        "ready",
    )

    def __init__(self, key: str, pod: Mapping[str, Any]) -> None:
        self.key = key
        self.name = key.rpartition("/")[2]
        self.active = is_pod_active(pod)
        ref = controller_ref(pod)
        self.controller_uid: str | None = None if ref is None else str(ref.get("uid") or "")
        self.labels = labels_of(pod)
        condition = ready_condition(pod)
        # The Ready condition, kept only while it is True (for minReadySeconds).
        self.ready = (
            condition if condition is not None and condition.get("status") == "True" else None
        )
        # The last selector, and set of labels, asked about (their JSON) and the answers.
        self._matched: tuple[bytes, bool] | None = None
        self._labeled: tuple[bytes, bool] | None = None

    def matches(self, selector: Any, selector_json: bytes) -> bool:
        """Whether a label selector (`selector_json`: its JSON, which identifies it) selects
        the pod; a controller asks about the same selector sync after sync."""
        matched = self._matched
        if matched is None or matched[0] != selector_json:
            matched = self._matched = (selector_json, label_selector_matches(selector, self.labels))
        return matched[1]

    def labeled(self, labels: Mapping[str, Any], labels_json: bytes) -> bool:
        """Whether the pod has all of `labels` (`labels_json`: their JSON, which identifies
        them), as a ReplicaSet counts its fully labeled replicas."""
        labeled = self._labeled
        if labeled is None or labeled[0] != labels_json:
            has = labels.items() <= self.labels.items()
            labeled = self._labeled = (labels_json, has)
        return labeled[1]

    def seconds_until_available(self, min_ready_seconds: int, at: datetime) -> float | None:
        """As `seconds_until_available` of the pod."""
        return _until_available(self.ready, min_ready_seconds, at)
