"""Gathering a large owner's pod events and status-only updates into fewer syncs
(_cluster/controllers/_batching.py); small owners are synced at once, as before."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._cluster.controllers._batching import BatchedPodEvents, SyncCost
from kubeforge._runtime.observer import Delivered, Record
from kubeforge._runtime.reconcile import Request
from kubeforge._runtime.workqueue import LOW_PRIORITY
from kubeforge._testing.env import TestEnv
from kubeforge.testing import eventually
from tests.support.builtin_objects import deployment as builtin_deployment

RS = Request("default", "web")


class RecordingQueue:
    def __init__(self) -> None:
        self.added: list[tuple[Request, int]] = []
        self.delayed: list[tuple[Request, float, int]] = []

    def add(self, item: Request, priority: int = 0) -> None:
        self.added.append((item, priority))

    def add_after(self, item: Request, delay: float, priority: int = 0) -> None:
        self.delayed.append((item, delay, priority))


def pod(rv: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": "web-1", "namespace": "default", "resourceVersion": rv}}


def rs(generation: int, rv: str) -> dict[str, Any]:
    meta = {"name": "web", "namespace": "default", "generation": generation, "resourceVersion": rv}
    return {"metadata": meta}


def test_the_delay_grows_with_the_pods_a_sync_read_and_is_bounded() -> None:
    cost = SyncCost()
    assert cost.delay(RS) == 0.0  # never synced
    cost.record(RS, SyncCost.THRESHOLD - 1)
    assert cost.delay(RS) == 0.0
    cost.record(RS, 1000)
    assert cost.delay(RS) == pytest.approx(0.1)
    cost.record(RS, 100_000)
    assert cost.delay(RS) == SyncCost.MAX_DELAY
    cost.forget(RS)
    assert cost.delay(RS) == 0.0


def test_pod_events_of_a_small_owner_queue_it_at_once() -> None:
    cost = SyncCost()
    queue = RecordingQueue()
    events = BatchedPodEvents(lambda _pod: [RS], cost)
    events.create(pod(), queue, False)
    events.create(pod(), queue, True)
    events.update(pod("1"), pod("2"), queue)
    events.update(pod("2"), pod("2"), queue)  # a resync
    events.delete(pod(), queue)
    assert queue.added == [(RS, 0), (RS, LOW_PRIORITY), (RS, 0), (RS, LOW_PRIORITY), (RS, 0)]
    assert queue.delayed == []


def test_pod_events_of_a_large_owner_wait_for_others_to_join_them() -> None:
    cost = SyncCost()
    cost.record(RS, 5000)
    queue = RecordingQueue()
    events = BatchedPodEvents(lambda _pod: [RS], cost)
    events.update(pod("1"), pod("2"), queue)
    events.delete(pod(), queue)
    assert queue.added == []
    assert queue.delayed == [(RS, pytest.approx(0.5), 0), (RS, pytest.approx(0.5), 0)]


def test_a_large_owners_status_updates_wait_but_spec_changes_do_not() -> None:
    cost = SyncCost()
    at_once, batched = cost.owner_events()
    queue = RecordingQueue()

    # Small: every update goes through for_ at once.
    assert at_once.update(rs(1, "1"), rs(1, "2"))
    batched.update(rs(1, "1"), rs(1, "2"), queue)
    assert queue.delayed == []

    cost.record(RS, 5000)
    # A status-only update (same generation) waits with the pod events ...
    assert not at_once.update(rs(1, "2"), rs(1, "3"))
    batched.update(rs(1, "2"), rs(1, "3"), queue)
    assert queue.delayed == [(RS, pytest.approx(0.5), 0)]
    # ... a spec change is synced at once; creations and deletions always are.
    assert at_once.update(rs(1, "3"), rs(2, "4"))
    batched.update(rs(1, "3"), rs(2, "4"), queue)
    assert len(queue.delayed) == 1
    assert at_once.create(rs(1, "1")) and at_once.delete(rs(1, "1"))


async def test_an_observed_cluster_syncs_a_large_replicaset_from_its_batched_events(
    testenv: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As under `kubeforge dev`, whose console observes the built-in controllers: the
    # ReplicaSet's pod events are queued after their delay through the observed queue.
    monkeypatch.setattr(SyncCost, "THRESHOLD", 3)
    assert testenv.cluster is not None and testenv.cluster.manager is not None
    manager = testenv.cluster.manager
    records: list[Record] = []
    manager.add_observer(records.append)
    try:
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment"}
        await testenv.client.create({**deployment, **builtin_deployment(replicas=8)})

        async def ready() -> bool:
            found = await testenv.client.get("apps/v1/Deployment", "web")
            return (found.get("status") or {}).get("readyReplicas") == 8

        await eventually(ready, timeout=60)
    finally:
        manager.remove_observer(records.append)
    pod_events = [
        r for r in records if isinstance(r, Delivered) and r.kind == "v1/Pod" and r.requests
    ]
    assert pod_events, "the ReplicaSet controller's pod events were observed"
