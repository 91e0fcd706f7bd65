"""The ReplicaSet controller: keep `spec.replicas` active pods matching the selector.

As upstream's: pods are created from the template (named `<replicaset>-<random>`, the
ReplicaSet as controlling owner) in slow-start batches of 1, 2, 4 ... and extra pods are
deleted in the order that costs least (unscheduled, pending, not ready, cheap to delete,
crowded on a node, recently ready, restarting, young first). Orphans matching the selector
are adopted and owned pods that stopped matching are released. The status counts active
pods (not finished, not being deleted): replicas, fullyLabeledReplicas, readyReplicas,
availableReplicas (ready for minReadySeconds), and a ReplicaFailure condition while
creating or deleting pods fails.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import orjson

from kubeforge._api.machinery.access import (
    controller_ref,
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    uid_of,
)
from kubeforge._api.machinery.selectors import label_selector_matches
from kubeforge._api.machinery.timestamps import format_time, now
from kubeforge._client.errors import ApiError, NotFound
from kubeforge._client.protocols import Reader
from kubeforge._cluster.controllers._batching import BatchedPodEvents, SyncCost
from kubeforge._cluster.controllers._children import generate_name_prefix, pod_from_template
from kubeforge._cluster.controllers._claiming import claim, controllers_of
from kubeforge._cluster.controllers._deletionorder import pods_to_delete
from kubeforge._cluster.controllers._expectations import Expectations, observe_pods
from kubeforge._cluster.controllers._podindex import (
    PodSummaries,
    index_pods_by_controller,
    pods_controlled_by,
)
from kubeforge._cluster.controllers._podstate import PodSummary, is_pod_active
from kubeforge._cluster.controllers._writes import (
    gather_errors,
    namespace_terminating,
    quiet_conflicts,
    replace,
)
from kubeforge._runtime.cache import Cache
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result
from kubeforge._runtime.store import key_of

__all__ = [
    "BURST_REPLICAS",
    "ReplicaSetReconciler",
    "calculate_status",
    "setup",
    "slow_start",
]

Obj = dict[str, Any]

REPLICA_SET = "apps/v1/ReplicaSet"
POD = "v1/Pod"
# At most this many pods are created or deleted in one sync (--replicaset burst).
BURST_REPLICAS = 500


# -- status ------------------------------------------------------------------------------------


def calculate_status(
    rs: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], error: Exception | None, at: datetime
) -> Obj:
    """The status a ReplicaSet should report for its active pods (zero counts omitted as
    the API serialises them, except replicas)."""
    return _status(rs, [PodSummary(name_of(pod), pod) for pod in pods], error, at)


def _status(
    rs: Mapping[str, Any], pods: Sequence[PodSummary], error: Exception | None, at: datetime
) -> Obj:
    spec = spec_of(rs)
    template_labels = labels_of(spec.get("template") or {})
    labels_json = orjson.dumps(template_labels)
    min_ready = int(spec.get("minReadySeconds") or 0)
    fully_labeled = ready = available = 0
    for pod in pods:
        if pod.labeled(template_labels, labels_json):
            fully_labeled += 1
        if pod.ready is not None:
            ready += 1
            if min_ready <= 0 or pod.seconds_until_available(min_ready, at) == 0.0:
                available += 1
    status: Obj = {"replicas": len(pods)}
    for field, value in (
        ("fullyLabeledReplicas", fully_labeled),
        ("readyReplicas", ready),
        ("availableReplicas", available),
        ("observedGeneration", int(meta_of(rs).get("generation") or 0)),
    ):
        if value:
            status[field] = value
    conditions = [dict(c) for c in status_of(rs).get("conditions") or ()]
    failure = next((c for c in conditions if c.get("type") == "ReplicaFailure"), None)
    if error is not None and failure is None:
        diff = len(pods) - int(spec.get("replicas", 1))
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        conditions.append(
            {
                "type": "ReplicaFailure",
                "status": "True",
                "lastTransitionTime": format_time(at),
                "reason": reason,
                "message": str(error),
            }
        )
    elif error is None and failure is not None:
        conditions.remove(failure)
    if conditions:
        status["conditions"] = conditions
    return status


# -- the reconciler ----------------------------------------------------------------------------


class ReplicaSetReconciler(Reconciler):
    """Creates and deletes pods until a ReplicaSet has its replicas; reports its status."""

    def __init__(
        self,
        expectations: Expectations,
        events: Any,
        *,
        live: Reader,
        cache: Cache,
        cost: SyncCost | None = None,
    ) -> None:
        self.expectations = expectations
        self.events = events
        self.live = live
        self.cache = cache
        self.pods = PodSummaries(cache)
        # How many pods syncs read, so a large set's pod events are gathered (_batching.py).
        self.cost = cost or SyncCost()

    async def reconcile(self, request: Request) -> Result | None:
        return await quiet_conflicts(functools.partial(self._sync, request))

    async def _sync(self, request: Request) -> Result | None:
        key = f"{request.namespace}/{request.name}"
        try:
            rs: Obj = await self.client.get(REPLICA_SET, request.name, namespace=request.namespace)
        except NotFound:
            self.expectations.forget(key)
            self.cost.forget(request)
            return None
        needs_sync = self.expectations.satisfied(key) and not is_deleting(rs)
        candidates = self.pods.claimable(rs)
        self.cost.record(request, len(candidates))
        pods = await self._claim(rs, [pod for pod in candidates if pod.active])
        error: Exception | None = None
        deleted: set[str] = set()
        if needs_sync:
            try:
                await self._manage(rs, key, pods, deleted)
            except ApiError as exc:
                error = exc
        at = now()
        # Pods deleted just now are on their way out: not counted, as the next sync would not.
        remaining = [pod for pod in pods if pod.name not in deleted] if deleted else pods
        status = _status(rs, remaining, error, at)
        if status != dict(status_of(rs)):
            rs["status"] = status
            replace(rs, await self.client.update_status(rs))
        if error is not None:
            raise error
        return self._requeue(rs, key, pods, at)

    async def _claim(self, rs: Obj, active: list[PodSummary]) -> list[PodSummary]:
        """The active pods the ReplicaSet controls, adopting matching orphans and releasing
        pods that stopped matching (`claim`). Most syncs have neither to do: then the
        summaries say which pods are its own, and no pod is decoded."""
        selector = spec_of(rs).get("selector")
        selector_json = orjson.dumps(selector)
        uid = uid_of(rs)
        mine: list[PodSummary] = []
        for pod in active:
            matches = pod.matches(selector, selector_json)
            if pod.controller_uid == uid and matches:
                mine.append(pod)
            elif pod.controller_uid is not None or matches:
                break  # one to release or to adopt
        else:
            return mine
        decoded = self._decoded(active)
        claimed = await claim(
            self.client,
            self.live,
            rs,
            POD,
            decoded,
            lambda pod: label_selector_matches(selector, labels_of(pod)),
        )
        return [PodSummary(key_of(pod), pod) for pod in claimed]

    def _decoded(self, pods: Sequence[PodSummary]) -> list[Obj]:
        """The pods the summaries are of, by key (those still cached)."""
        ordered = sorted(pods, key=lambda pod: pod.key)
        return [obj for obj in (self.pods.pod(pod) for pod in ordered) if obj is not None]

    def _requeue(
        self, rs: Mapping[str, Any], key: str, pods: Sequence[PodSummary], at: datetime
    ) -> Result | None:
        """Come back when a ready pod turns available, or when unmet expectations expire."""
        waits: list[float] = []
        min_ready = int(spec_of(rs).get("minReadySeconds") or 0)
        if min_ready > 0:
            for pod in pods:
                remaining = pod.seconds_until_available(min_ready, at)
                if remaining:
                    waits.append(remaining)
        pending = self.expectations.remaining_wait(key)
        if pending:
            waits.append(pending)
        return Result(requeue_after=min(waits)) if waits else None

    async def _manage(
        self,
        rs: Obj,
        key: str,
        pods: Sequence[PodSummary],
        deleted: set[str],
    ) -> None:
        diff = len(pods) - int(spec_of(rs).get("replicas", 1))
        if diff < 0:
            await self._create(rs, key, min(-diff, BURST_REPLICAS))
        elif diff > 0:
            count = min(diff, BURST_REPLICAS)
            decoded = self._decoded(pods)
            victims = pods_to_delete(decoded, await self._related(rs, decoded), count)
            await self._delete(rs, key, victims, deleted)

    async def _create(self, rs: Obj, key: str, count: int) -> None:
        self.expectations.expect_creations(key, count)
        template = spec_of(rs).get("template") or {}
        prefix = generate_name_prefix(name_of(rs))

        async def create_one() -> bool:
            pod = pod_from_template(template, rs, generate_name=prefix)
            try:
                created = await self.client.create(pod)
            except ApiError as exc:
                self.expectations.creation_observed(key)
                if namespace_terminating(exc):
                    return False
                self.events.record(rs, "Warning", "FailedCreate", f"Error creating: {exc}")
                raise
            self.events.record(rs, "Normal", "SuccessfulCreate", f"Created pod: {name_of(created)}")
            return True

        attempted, error = await slow_start(count, create_one)
        # Pods never attempted will not be observed either.
        for _ in range(count - attempted):
            self.expectations.creation_observed(key)
        if error is not None:
            raise error

    async def _delete(self, rs: Obj, key: str, victims: Sequence[Obj], deleted: set[str]) -> None:
        self.expectations.expect_deletions(key, [name_of(p) for p in victims])
        results = await gather_errors(
            [self.client.delete(POD, name_of(p), namespace=namespace_of(p)) for p in victims]
        )
        first: BaseException | None = None
        for pod, error in zip(victims, results, strict=True):
            if error is None or isinstance(error, NotFound):
                deleted.add(name_of(pod))
            if error is None:
                self.events.record(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {name_of(pod)}")
                continue
            self.expectations.deletion_observed(key, name_of(pod))
            if not isinstance(error, NotFound):
                self.events.record(rs, "Warning", "FailedDelete", f"Error deleting: {error}")
                first = first or error
        if first is not None:
            raise first

    async def _related(self, rs: Mapping[str, Any], pods: Sequence[Obj]) -> Sequence[Obj]:
        """Active pods of this ReplicaSet and of those sharing its controller."""
        owner = controller_ref(rs)
        if owner is None:
            return pods
        namespace = namespace_of(rs)
        related = list(pods)
        for other in self.cache.list(REPLICA_SET, namespace=namespace):
            if uid_of(other) == uid_of(rs):
                continue
            if (controller_ref(other) or {}).get("uid") == owner.get("uid"):
                siblings = await pods_controlled_by(self.client, namespace, uid_of(other))
                related += [pod for pod in siblings if is_pod_active(pod)]
        return related


async def slow_start(count: int, create: Any) -> tuple[int, BaseException | None]:
    """Run `create()` up to `count` times in batches of 1, 2, 4 ... stopping after the
    first batch with a failure, so a doomed template costs one request rather than
    hundreds. Returns how many calls were made and the first error."""
    attempted = 0
    batch = min(count, 1)
    while batch > 0:
        results = await asyncio.gather(*(create() for _ in range(batch)), return_exceptions=True)
        attempted += batch
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            return attempted, errors[0]
        batch = min(2 * batch, count - attempted)
    return attempted, None


# -- wiring ------------------------------------------------------------------------------------


def setup(manager: Manager) -> None:
    """Register the ReplicaSet controller with `manager`."""
    expectations = Expectations()
    cache = manager.cache
    cost = SyncCost()
    at_once, batched_updates = cost.owner_events()
    reconciler = ReplicaSetReconciler(
        expectations,
        manager.event_recorder("replicaset-controller"),
        live=manager.api_reader,
        cache=cache,
        cost=cost,
    )
    (
        manager.controller()
        .named("replicaset")
        .for_(REPLICA_SET, predicates=[at_once])
        .watches(REPLICA_SET, batched_updates)
        .watches(POD, BatchedPodEvents(lambda pod: controllers_of(cache, pod, REPLICA_SET), cost))
        .with_options(max_concurrent_reconciles=5)
        .complete(reconciler)
    )
    observe_pods(manager, "ReplicaSet", expectations)
    index_pods_by_controller(manager)
