"""The taint eviction controller: pods go from nodes with NoExecute taints they do not
tolerate, as kube-controller-manager's taint-eviction-controller has it
(pkg/controller/tainteviction/taint_eviction.go).

A pod bound to a node with NoExecute taints is deleted at once when one of the taints has no
matching toleration; when all have, it is deleted after the shortest `tolerationSeconds` of
the tolerations that matched, counted from when the controller first saw it tainted, and
never when none of them sets `tolerationSeconds` (pods get 300 s for `not-ready` and
`unreachable` from the API server's DefaultTolerationSeconds admission). Before deleting, the
controller adds the DisruptionTarget condition (reason DeletionByTaintManager) to the pod's
status and records a TaintManagerEviction event; a deletion it had scheduled and drops
because the taints went (or the pod now tolerates them for ever) gets one as well. The taints
are usually the node lifecycle controller's (a node not ready or unreachable), but any
NoExecute taint counts, one added with `kubectl taint` too. Finished pods are deleted as well,
as upstream does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeforge import clock
from kubeforge.api.machinery.access import name_of, namespace_of, spec_of, uid_of
from kubeforge.api.machinery.timestamps import format_time
from kubeforge.client.errors import NotFound
from kubeforge.cluster.controllers._podindex import NODE_NAME_INDEX, index_pods_by_node
from kubeforge.cluster.controllers._taints import NODE, no_execute_taints
from kubeforge.cluster.controllers.scheduler import tolerates
from kubeforge.runtime.cache import Cache
from kubeforge.runtime.events import EventRecorder
from kubeforge.runtime.handler import Queue
from kubeforge.runtime.manager import Manager
from kubeforge.runtime.predicate import Predicate
from kubeforge.runtime.reconcile import Reconciler, Request, Result

__all__ = ["NAME", "TaintEvictionController", "matching_tolerations", "setup", "toleration_time"]

log = logging.getLogger("kubeforge.tainteviction")

Obj = dict[str, Any]
NAME = "taint-eviction-controller"
POD = "v1/Pod"


def matching_tolerations(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]] | None:
    """For each taint, the first toleration that tolerates it; None when one is not
    tolerated (upstream's GetMatchingTolerations)."""
    used = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates([t], taint)), None)
        if match is None:
            return None
        used.append(match)
    return used


def toleration_time(used: Sequence[Mapping[str, Any]]) -> float | None:
    """How long the tolerations let a pod stay: the shortest `tolerationSeconds` (0 for none
    or a negative one), None for ever when none sets it (getMinTolerationTime)."""
    if not used:
        return 0.0
    shortest: float | None = None
    for toleration in used:
        seconds = toleration.get("tolerationSeconds")
        if seconds is None:
            continue
        if seconds <= 0:
            return 0.0
        shortest = seconds if shortest is None else min(shortest, seconds)
    return None if shortest is None else float(shortest)


@dataclass
class _Eviction:
    """A deletion scheduled on the clock's monotonic seconds."""

    created: float
    due: float


class _NodeTaints:
    """Node events: keep each node's NoExecute taints, and when they change send every pod
    of the node to the controller (handleNodeUpdate)."""

    def __init__(self, controller: TaintEvictionController, cache: Cache) -> None:
        self.controller = controller
        self.cache = cache

    def _changed(self, name: str, taints: list[Mapping[str, Any]], queue: Queue) -> None:
        tainted = self.controller.tainted
        if taints:
            tainted[name] = taints
        elif tainted.pop(name, None) is None:
            return  # untainted before and after
        store = self.cache.informer_for(POD).store
        for key in store.by_index(NODE_NAME_INDEX, name):
            namespace, _, pod = key.rpartition("/")
            queue.add(Request(namespace, pod))

    def create(self, obj: Mapping[str, Any], queue: Queue, initial: bool) -> None:
        self._changed(name_of(obj), no_execute_taints(obj), queue)

    def update(self, old: Mapping[str, Any], new: Mapping[str, Any], queue: Queue) -> None:
        taints = no_execute_taints(new)
        if taints != no_execute_taints(old):
            self._changed(name_of(new), taints, queue)

    def delete(self, obj: Mapping[str, Any], queue: Queue) -> None:
        self.controller.tainted.pop(name_of(obj), None)


class _PodChanges(Predicate):
    """Pod events that matter (PodUpdated): a pod added or gone, bound elsewhere or given
    other tolerations, when it is on a tainted node or has a deletion scheduled (the
    others, nearly all, cost nothing more)."""

    def __init__(self, controller: TaintEvictionController) -> None:
        self.controller = controller

    def _concerned(self, pod: Mapping[str, Any]) -> bool:
        return (
            spec_of(pod).get("nodeName") in self.controller.tainted
            or f"{namespace_of(pod)}/{name_of(pod)}" in self.controller.scheduled
        )

    def create(self, obj: Mapping[str, Any]) -> bool:
        return self._concerned(obj)

    def update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        before, after = spec_of(old), spec_of(new)
        if before.get("nodeName") == after.get("nodeName") and before.get(
            "tolerations"
        ) == after.get("tolerations"):
            return False
        return self._concerned(new)

    def delete(self, obj: Mapping[str, Any]) -> bool:
        return self._concerned(obj)

    def generic(self, obj: Mapping[str, Any]) -> bool:
        return False


class TaintEvictionController(Reconciler):
    """Deletes pods from nodes whose NoExecute taints they do not tolerate (long enough)."""

    def __init__(self, events: EventRecorder) -> None:
        self.events = events
        # Node name -> its NoExecute taints (nodes without any are absent).
        self.tainted: dict[str, list[Mapping[str, Any]]] = {}
        # "namespace/name" -> the pod's scheduled deletion.
        self.scheduled: dict[str, _Eviction] = {}

    async def reconcile(self, request: Request) -> Result | None:
        key = str(request)
        try:
            pod: Obj = await self.client.get(POD, request.name, namespace=request.namespace)
        except NotFound:
            self._cancel(request)
            return None
        taints = self.tainted.get(str(spec_of(pod).get("nodeName") or ""))
        if not taints:
            self._cancel(request)
            return None
        used = matching_tolerations(taints, spec_of(pod).get("tolerations") or ())
        now = clock.monotonic()
        if used is None:
            self.scheduled.pop(key, None)  # replaced by a deletion now
            await self._evict(pod)
            return None
        seconds = toleration_time(used)
        if seconds is None:
            self._cancel(request)
            return None
        # A deletion already scheduled keeps its time (processPodOnNode).
        eviction = self.scheduled.setdefault(key, _Eviction(now, now + seconds))
        remaining = eviction.due - now
        if remaining > 0:
            return Result(requeue_after=remaining)
        await self._evict(pod)
        self.scheduled.pop(key, None)
        return None

    def _cancel(self, request: Request) -> None:
        if self.scheduled.pop(str(request), None) is not None:
            self.events.record(
                _pod_ref(request),
                "Normal",
                "TaintManagerEviction",
                f"Cancelling deletion of Pod {request}",
            )

    async def _evict(self, pod: Obj) -> None:
        """addConditionAndDeletePod: the DisruptionTarget condition, then the deletion."""
        request = Request(namespace_of(pod), name_of(pod))
        self.events.record(
            _pod_ref(request),
            "Normal",
            "TaintManagerEviction",
            f"Marking for deletion Pod {request}",
        )
        log.info("deleting pod %s: its node's NoExecute taints", request)
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
            "lastTransitionTime": format_time(clock.now()),
        }
        present = any(
            c.get("type") == "DisruptionTarget"
            and c.get("status") == "True"
            and c.get("reason") == condition["reason"]
            for c in (pod.get("status") or {}).get("conditions") or ()
        )
        try:
            if not present:
                await self.client.patch_status(
                    POD,
                    request.name,
                    {"metadata": {"uid": uid_of(pod)}, "status": {"conditions": [condition]}},
                    namespace=request.namespace,
                    patch_type="strategic",
                )
            await self.client.delete(
                POD, request.name, namespace=request.namespace, preconditions={"uid": uid_of(pod)}
            )
        except NotFound:
            pass


def _pod_ref(request: Request) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": request.name, "namespace": request.namespace},
    }


def setup(manager: Manager) -> None:
    """Register the taint eviction controller with `manager`."""
    index_pods_by_node(manager)
    controller = TaintEvictionController(manager.event_recorder(NAME))
    (
        manager.controller()
        .named(NAME)
        .for_(POD, predicates=[_PodChanges(controller)])
        .watches(NODE, _NodeTaints(controller, manager.cache))
        .with_options(max_concurrent_reconciles=4)
        .complete(controller)
    )
