"""The rules of the node controllers read alone: zone states, the eviction rate, the NoSchedule
taints conditions call for, which tolerations match and for how long, taint swaps, and the
health a Node's annotation asks of its simulated kubelet."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kubeforge import clock
from kubeforge._cluster.controllers._taints import _swapped
from kubeforge._cluster.controllers.nodelifecycle import (
    NodeLifecycleController,
    _Limiter,
    zone_state,
)
from kubeforge._cluster.controllers.tainteviction import matching_tolerations, toleration_time
from kubeforge._cluster.nodehealth import HEALTH_ANNOTATION, health_of, is_simulated
from kubeforge._cluster.options import ClusterOptions
from tests.test_clock import StoppedClock

UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (["True", "True"], (0, "Normal")),
        (["True", "Unknown"], (1, "Normal")),
        (["False"], (1, "FullDisruption")),
        (["Unknown", None], (2, "FullDisruption")),
        (["True", "False", "False", "Unknown"], (3, "PartialDisruption")),
        (["True", "True", "False", "False", "Unknown"], (3, "PartialDisruption")),
        (["True", "True", "True", "False", "False", "Unknown"], (3, "Normal")),
        (["True", "False", "False"], (2, "Normal")),
    ],
)
def test_zone_states(statuses: list[str | None], expected: tuple[int, str]) -> None:
    assert zone_state(statuses) == expected


def test_the_eviction_rate_lets_one_node_through_every_ten_seconds() -> None:
    manual = StoppedClock()
    with clock.use(manual):
        limiter = _Limiter(0.1)
        assert limiter.try_accept()
        assert not limiter.try_accept()
        assert limiter.wait() == pytest.approx(10.0)
        manual.at += timedelta(seconds=4)
        assert not limiter.try_accept()
        assert limiter.wait() == pytest.approx(6.0)
        manual.at += timedelta(seconds=6)
        assert limiter.try_accept()
        limiter.swap(0)
        assert not limiter.try_accept()
        assert limiter.wait() is None
        limiter.swap(0.1)  # a new bucket, full
        assert limiter.try_accept()


def test_no_schedule_taints_follow_conditions_and_cordon() -> None:
    node = {
        "spec": {
            "unschedulable": True,
            "taints": [
                {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"},
                {"key": "dedicated", "effect": "NoSchedule"},
                UNREACHABLE,
            ],
        },
        "status": {
            "conditions": [
                {"type": "Ready", "status": "Unknown"},
                {"type": "MemoryPressure", "status": "Unknown"},
                {"type": "DiskPressure", "status": "True"},
            ]
        },
    }
    add, remove = NodeLifecycleController._no_schedule_changes(node)
    assert sorted(t["key"] for t in add) == [
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/unschedulable",
    ]
    assert all(t["effect"] == "NoSchedule" for t in add)
    # Only the controller's own NoSchedule taints go; the user's and NoExecute ones stay.
    assert sorted(t["key"] for t in remove) == [
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/not-ready",
    ]


def test_matching_tolerations_and_their_time() -> None:
    tainted = [UNREACHABLE, {"key": "dedicated", "value": "db", "effect": "NoExecute"}]
    everything = {"operator": "Exists"}
    assert matching_tolerations(tainted, [everything]) == [everything, everything]
    short = {**UNREACHABLE, "operator": "Exists", "tolerationSeconds": 30}
    db = {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoExecute"}
    used = matching_tolerations(tainted, [short, db])
    assert used == [short, db]
    assert toleration_time(used) == 30
    assert toleration_time([db]) is None  # for ever
    other = {**db, "value": "web"}
    assert matching_tolerations(tainted, [short, other]) is None
    assert matching_tolerations(tainted, []) is None
    no_schedule_only = {**db, "effect": "NoSchedule"}
    assert matching_tolerations(tainted[1:], [no_schedule_only]) is None
    assert toleration_time([{**short, "tolerationSeconds": -5}, db]) == 0
    assert toleration_time([]) == 0


def test_taint_swaps_keep_the_time_of_a_taint_already_there() -> None:
    kept = {**NOT_READY, "timeAdded": "2020-01-01T00:00:00Z"}
    manual = StoppedClock()
    with clock.use(manual):
        assert _swapped([kept], [NOT_READY], []) is None
        swapped = _swapped(
            [kept, {"key": "user", "effect": "NoSchedule"}], [UNREACHABLE], [NOT_READY]
        )
    assert swapped == [
        {"key": "user", "effect": "NoSchedule"},
        {**UNREACHABLE, "timeAdded": "2030-01-02T03:04:05Z"},
    ]


def test_the_health_annotation() -> None:
    node = {"metadata": {"annotations": {HEALTH_ANNOTATION: "unreachable"}}}
    assert health_of(node) == "unreachable"
    assert health_of({"metadata": {}}) == "ready"
    assert health_of({"metadata": {"annotations": {HEALTH_ANNOTATION: "sleepy"}}}) == "ready"
    assert is_simulated({"spec": {"providerID": "kubeforge://kubeforge-node"}})
    assert not is_simulated({"spec": {"providerID": "aws:///eu-west-1a/i-0123"}})


def test_the_grace_period_must_be_positive() -> None:
    with pytest.raises(ValueError, match="node_monitor_grace_period"):
        ClusterOptions(node_monitor_grace_period=0)
