"""Gathering a busy owner's pod events into fewer syncs.

A workload controller's sync reads every pod its object owns, so with thousands of pods each
sync is costly while their events (scheduled, started, ready) arrive by the hundred a
second: syncing on each would keep the controllers' event loop busy with one object. As the
Job controller gathers pod updates for `syncJobBatchPeriod` and the endpoint controllers
for `--endpoint-updates-batch-period` (pkg/controller/job/job_controller.go,
pkg/controller/endpointslice), a pod event here queues its owner after a delay, in which
later events join it; so do the owner's own status-only updates, which its syncs write
after each batch. The delay follows the pods the owner's last sync read: none below
`SyncCost.THRESHOLD` (such objects are synced at once), then 0.1 ms a pod up to one second
(0.1 s for 1,000 pods), many times what the sync costs (it reads a summary of each pod,
`_podstate.PodSummary`), so syncing one object takes a small share of the event loop
however many pods it has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubeforge._runtime.handler import Queue
from kubeforge._runtime.predicate import Funcs, Predicate
from kubeforge._runtime.reconcile import Request
from kubeforge._runtime.workqueue import LOW_PRIORITY

__all__ = ["BatchedOwnerUpdates", "BatchedPodEvents", "SyncCost"]

Obj = Mapping[str, Any]


class SyncCost:
    """How many pods each object's last sync read, and so how long its pod events wait."""

    # Below this many pods a sync is cheap: events queue the owner at once.
    THRESHOLD = 500
    # Seconds of delay per pod read (a sync costs a few µs of CPU a pod).
    SECONDS_PER_POD = 0.0001
    MAX_DELAY = 1.0

    def __init__(self) -> None:
        self._pods: dict[Request, int] = {}

    def record(self, request: Request, pods: int) -> None:
        """`request`'s sync read `pods` pods."""
        if pods >= self.THRESHOLD:
            self._pods[request] = pods
        else:
            self._pods.pop(request, None)

    def forget(self, request: Request) -> None:
        """The object is gone."""
        self._pods.pop(request, None)

    def delay(self, request: Request) -> float:
        """How long a pod event of `request`'s object waits for others to join it."""
        pods = self._pods.get(request)
        return 0.0 if pods is None else min(self.MAX_DELAY, pods * self.SECONDS_PER_POD)

    def batches(self, old: Obj, new: Obj) -> bool:
        """Whether an update of a large owner itself waits with its pod events: one that
        leaves its generation as it was (its status, which its own syncs write after
        each batch of pod events; a spec change is synced at once)."""
        if _generation(old) != _generation(new):
            return False
        meta = new.get("metadata") or {}
        request = Request(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        return self.delay(request) > 0

    def owner_events(self) -> tuple[Predicate, BatchedOwnerUpdates]:
        """For the owner kind itself: a predicate for `for_` letting through the events
        synced at once, and a handler for `watches` queueing the batched updates."""
        return Funcs(on_update=lambda old, new: not self.batches(old, new)), (
            BatchedOwnerUpdates(self)
        )


def _generation(obj: Obj) -> Any:
    return (obj.get("metadata") or {}).get("generation")


class BatchedPodEvents:
    """An event handler queueing the owners `owners(pod)` names, each after its delay."""

    def __init__(self, owners: Callable[[Obj], Iterable[Request]], cost: SyncCost) -> None:
        self.owners = owners
        self.cost = cost

    def _add(self, pods: Iterable[Obj], queue: Queue, priority: int) -> None:
        seen: set[Request] = set()
        for pod in pods:
            for request in self.owners(pod):
                if request in seen:
                    continue
                seen.add(request)
                delay = self.cost.delay(request)
                if delay > 0:
                    queue.add_after(request, delay, priority)
                else:
                    queue.add(request, priority)

    def create(self, obj: Obj, queue: Queue, initial: bool) -> None:
        self._add((obj,), queue, LOW_PRIORITY if initial else 0)

    def update(self, old: Obj, new: Obj, queue: Queue) -> None:
        old_rv = (old.get("metadata") or {}).get("resourceVersion")
        new_rv = (new.get("metadata") or {}).get("resourceVersion")
        # An update with an unchanged resourceVersion is a resync (handler.py's priority).
        self._add((old, new), queue, LOW_PRIORITY if old_rv == new_rv else 0)

    def delete(self, obj: Obj, queue: Queue) -> None:
        self._add((obj,), queue, 0)


class BatchedOwnerUpdates:
    """Queues an owner whose update `SyncCost.batches`, after its delay; nothing else."""

    def __init__(self, cost: SyncCost) -> None:
        self.cost = cost

    def create(self, obj: Obj, queue: Queue, initial: bool) -> None:
        return None

    def update(self, old: Obj, new: Obj, queue: Queue) -> None:
        if not self.cost.batches(old, new):
            return
        meta = new.get("metadata") or {}
        request = Request(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        old_rv = (old.get("metadata") or {}).get("resourceVersion")
        priority = LOW_PRIORITY if old_rv == meta.get("resourceVersion") else 0
        queue.add_after(request, self.cost.delay(request), priority)

    def delete(self, obj: Obj, queue: Queue) -> None:
        return None
