"""Which pods a controller deletes first when it scales down (controller.ActivePodsWithRanks):
unscheduled before scheduled, pending before running, not ready before ready, a lower
deletion cost first, then pods on crowded nodes, the most recently ready, the most restarted
and the youngest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubeforge._api.machinery.access import annotations_of, meta_of, spec_of, status_of, uid_of
from kubeforge._api.machinery.timestamps import parse_time_or_none
from kubeforge._cluster.controllers._podstate import is_pod_ready, ready_condition

__all__ = ["DELETION_COST", "pods_to_delete"]

Obj = dict[str, Any]

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


def _max_restarts(pod: Mapping[str, Any]) -> int:
    statuses = status_of(pod).get("containerStatuses") or ()
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


def _deletion_cost(pod: Mapping[str, Any]) -> int:
    try:
        return int(annotations_of(pod).get(DELETION_COST, "0"))
    except ValueError:
        return 0


def _newest_first(value: datetime | None) -> tuple[int, float]:
    # Unknown times first, then the most recent.
    return (0, 0.0) if value is None else (1, -value.timestamp())


def _deletion_key(pod: Mapping[str, Any], rank: int) -> tuple[Any, ...]:
    """Sort key: pods that are cheapest to lose come first (ActivePodsWithRanks)."""
    ready = is_pod_ready(pod)
    ready_since = None
    if ready:
        condition = ready_condition(pod) or {}
        ready_since = parse_time_or_none(condition.get("lastTransitionTime"))
    return (
        1 if spec_of(pod).get("nodeName") else 0,
        _PHASE_ORDER.get(str(status_of(pod).get("phase")), 0),
        1 if ready else 0,
        _deletion_cost(pod),
        -rank,
        _newest_first(ready_since) if ready else (0, 0.0),
        -_max_restarts(pod),
        _newest_first(parse_time_or_none(meta_of(pod).get("creationTimestamp"))),
        uid_of(pod),
    )


def pods_to_delete(
    pods: Sequence[Obj], related: Sequence[Mapping[str, Any]], count: int
) -> list[Obj]:
    """The `count` pods to delete first; `related` pods (of sibling ReplicaSets too) rank
    pods by how crowded their node is."""
    if count >= len(pods):
        return list(pods)
    on_node: dict[str, int] = {}
    for pod in related:
        node = str(spec_of(pod).get("nodeName") or "")
        on_node[node] = on_node.get(node, 0) + 1
    keyed = [
        (_deletion_key(pod, on_node.get(str(spec_of(pod).get("nodeName") or ""), 0)), i)
        for i, pod in enumerate(pods)
    ]
    keyed.sort()
    return [pods[i] for _, i in keyed[:count]]
