"""The StatefulSet controller: pods with stable names and storage, made, replaced and
updated in order.

It follows pkg/controller/statefulset (stateful_set.go, stateful_set_control.go,
stateful_pod_control.go) step for step. Each pod template is a ControllerRevision
(`_history`); `status.updateRevision` is the current template's, `status.currentRevision`
the one pods below a rolling update's partition keep. Every ordinal from
`spec.ordinals.start` up to `replicas` gets its pod (`_statefulpods`: name, hostname,
subdomain, labels), its claims created first from the volume claim templates; a pod that
finished (Succeeded or Failed) is deleted and made again under the same name. Pods beyond
the replicas are deleted from the highest ordinal down. `OrderedReady` does one step at a
time and only past pods that are Running, Ready and available (`minReadySeconds`);
`Parallel` creates and deletes without waiting. `RollingUpdate` deletes, from the highest
ordinal down to the `partition`, one pod not at the update revision at a time, once the ones
above it are available again; `OnDelete` leaves that to the user. The
MaxUnavailableStatefulSet feature gate is off in Kubernetes 1.33 (alpha), so
`rollingUpdate.maxUnavailable` does nothing, as on a default 1.33 cluster (the API server
drops the field). Claims get owner references after the retention policy. Revisions beyond
`revisionHistoryLimit` that no pod uses are deleted.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from kubeforge._api.machinery.access import (
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
)
from kubeforge._api.machinery.selectors import label_selector_matches
from kubeforge._api.machinery.timestamps import now
from kubeforge._client.errors import AlreadyExists, ApiError, NotFound
from kubeforge._client.protocols import Reader
from kubeforge._cluster.controllers._claiming import claim, controllers_of
from kubeforge._cluster.controllers._history import (
    CONTROLLER_REVISION,
    claimed_revisions,
    create_revision,
    delete_revision,
    new_revision,
    renumber,
    revision_number,
    same_data,
    sort_revisions,
    template_patch,
    with_revision,
)
from kubeforge._cluster.controllers._podindex import claimable_pods, index_pods_by_controller
from kubeforge._cluster.controllers._podstate import (
    is_pod_available,
    seconds_until_available,
)
from kubeforge._cluster.controllers._statefulpods import (
    claim_owner_references,
    claim_owners_up_to_date,
    claims_for,
    has_stale_owner_ref,
    identity_matches,
    in_ordinal_range,
    is_created,
    is_member,
    is_running_and_ready,
    is_unavailable,
    ordinal_of,
    pod_revision,
    replicas_of,
    retention_policy,
    start_ordinal,
    storage_matches,
    update_identity,
    update_storage,
    versioned_pod,
)
from kubeforge._cluster.controllers._writes import quiet_conflicts, replace
from kubeforge._cluster.controllers.replicaset import slow_start
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["StatefulSetReconciler", "setup"]

Obj = dict[str, Any]

STATEFUL_SET = "apps/v1/StatefulSet"
POD = "v1/Pod"
CLAIM = "v1/PersistentVolumeClaim"
DEFAULT_HISTORY_LIMIT = 10


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _counts(
    status: Obj,
    pods: Sequence[Mapping[str, Any]],
    min_ready: int,
    at: datetime,
) -> None:
    """The status's pod counts over `pods` (updateStatus): created, ready, available, and
    those at the current and update revisions."""
    counts = dict.fromkeys(
        ("replicas", "readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas"),
        0,
    )
    for pod in pods:
        created = is_created(pod)
        if created:
            counts["replicas"] += 1
        if is_running_and_ready(pod):
            counts["readyReplicas"] += 1
            if is_pod_available(pod, min_ready, at):
                counts["availableReplicas"] += 1
        if created and not is_deleting(pod):
            revision = pod_revision(pod)
            if revision == status["currentRevision"]:
                counts["currentReplicas"] += 1
            if revision == status["updateRevision"]:
                counts["updatedReplicas"] += 1
    status.update(counts)


def _wire_status(status: Mapping[str, Any]) -> Obj:
    """The status as the API writes it: optional counts and names left out when zero."""
    required = ("replicas", "availableReplicas", "collisionCount")
    return {k: v for k, v in status.items() if v or k in required}


class StatefulSetReconciler(Reconciler):
    """Keeps a StatefulSet's ordinals running at its revisions; reports its status."""

    def __init__(self, events: Any, *, live: Reader) -> None:
        self.events = events
        # Reads that must not trust the cache (adoption, a revision name taken) go live.
        self.live = live

    async def reconcile(self, request: Request) -> Result | None:
        return await quiet_conflicts(functools.partial(self._sync, request))

    async def _sync(self, request: Request) -> Result | None:
        try:
            sts: Obj = await self.client.get(
                STATEFUL_SET, request.name, namespace=request.namespace
            )
        except NotFound:
            return None
        selector = spec_of(sts).get("selector")
        revisions = sort_revisions(
            await claimed_revisions(self.client, self.live, sts, release=False)
        )
        pods = await claim(
            self.client,
            self.live,
            sts,
            POD,
            await claimable_pods(self.client, sts),
            lambda pod: label_selector_matches(selector, labels_of(pod)) and is_member(sts, pod),
        )
        current, update, collisions = await self._revisions(sts, revisions)
        at = now()
        status, error = await self._update(sts, current, update, collisions, pods, at)
        await self._write_status(sts, status)
        await self._truncate_history(sts, pods, revisions, current, update)
        if error is not None:
            raise error
        return self._requeue(sts, pods, at)

    def _requeue(self, sts: Mapping[str, Any], pods: Sequence[Obj], at: datetime) -> Result | None:
        """Come back when a ready pod turns available."""
        min_ready = int(spec_of(sts).get("minReadySeconds") or 0)
        if min_ready <= 0:
            return None
        waits = [w for p in pods if (w := seconds_until_available(p, min_ready, at))]
        return Result(requeue_after=min(waits)) if waits else None

    # revisions ---------------------------------------------------------------------------------

    async def _revisions(self, sts: Obj, revisions: list[Obj]) -> tuple[Obj, Obj, int]:
        """The current and update revisions (getStatefulSetRevisions): the template's
        revision is made, or an equal earlier one becomes the newest (a rollback)."""
        status = status_of(sts)
        collisions = int(status.get("collisionCount") or 0)
        number = revision_number(revisions[-1]) + 1 if revisions else 1
        update = new_revision(sts, template_patch(sts), number, collisions)
        equal = [r for r in revisions if same_data(r, update)]
        if equal and same_data(revisions[-1], equal[-1]):
            update = revisions[-1]
        elif equal:
            update = await renumber(self.client, equal[-1], number)
        else:
            update, collisions = await create_revision(
                self.client, self.live, sts, update, collisions
            )
        wanted = status.get("currentRevision")
        current = next((r for r in revisions if name_of(r) == wanted), update)
        return current, update, collisions

    async def _truncate_history(
        self,
        sts: Mapping[str, Any],
        pods: Sequence[Obj],
        revisions: Sequence[Obj],
        current: Obj,
        update: Obj,
    ) -> None:
        """Delete the oldest revisions no pod uses beyond revisionHistoryLimit."""
        live = {name_of(current), name_of(update), *(pod_revision(p) for p in pods)}
        history = [r for r in revisions if name_of(r) not in live]
        limit = spec_of(sts).get("revisionHistoryLimit")
        limit = DEFAULT_HISTORY_LIMIT if limit is None else int(limit)
        if limit < 0 or len(history) <= limit:
            return
        for revision in history[: len(history) - limit]:
            await delete_revision(self.client, revision)

    # the update --------------------------------------------------------------------------------

    async def _update(
        self,
        sts: Obj,
        current: Obj,
        update: Obj,
        collisions: int,
        pods: Sequence[Obj],
        at: datetime,
    ) -> tuple[Obj, BaseException | None]:
        """One step towards the set's pods (updateStatefulSet); the status it reaches, and
        the error that stopped it."""
        current_set = with_revision(sts, current)
        update_set = with_revision(sts, update)
        min_ready = int(spec_of(sts).get("minReadySeconds") or 0)
        status: Obj = {
            "observedGeneration": int(meta_of(sts).get("generation") or 0),
            "currentRevision": name_of(current),
            "updateRevision": name_of(update),
            "collisionCount": collisions,
        }
        start = start_ordinal(sts)
        replicas: list[Obj | None] = [None] * replicas_of(sts)
        condemned: list[Obj] = []
        for pod in pods:
            ordinal = ordinal_of(pod)
            if in_ordinal_range(pod, sts):
                replicas[ordinal - start] = pod
            elif ordinal >= 0:
                condemned.append(pod)
        members: list[Obj] = [
            pod
            if pod is not None
            else versioned_pod(
                current_set, update_set, name_of(current), name_of(update), start + i
            )
            for i, pod in enumerate(replicas)
        ]
        condemned.sort(key=ordinal_of, reverse=True)
        first_unhealthy = next(
            (p for p in [*members, *reversed(condemned)] if is_unavailable(p, min_ready, at)),
            None,
        )

        def counted() -> Obj:
            _counts(status, [*members, *condemned], min_ready, at)
            return status

        if is_deleting(sts):
            return counted(), None
        steps = _Steps(self, sts, update_set, members, condemned, first_unhealthy, at)
        try:
            if await steps.run(steps.replica, len(members)):
                return counted(), None
            if await steps.run(steps.fix_claims, len(condemned)):
                return counted(), None
            if await steps.run(steps.condemned, len(condemned)):
                return counted(), None
            counted()
            strategy = spec_of(sts).get("updateStrategy") or {}
            if strategy.get("type") == "OnDelete":
                return status, None
            await self._roll(sts, members, name_of(update), status, min_ready, at)
        except (ApiError, ClaimTerminating) as exc:
            return counted(), exc
        return status, None

    async def _roll(
        self,
        sts: Obj,
        members: Sequence[Obj],
        update_revision: str,
        status: Obj,
        min_ready: int,
        at: datetime,
    ) -> None:
        """Replace the highest pod not at the update revision, down to the partition, once
        those above it are available."""
        rolling = (spec_of(sts).get("updateStrategy") or {}).get("rollingUpdate") or {}
        partition = int(rolling.get("partition") or 0)
        for target in range(len(members) - 1, partition - 1, -1):
            pod = members[target]
            if pod_revision(pod) != update_revision and not is_deleting(pod):
                await self.delete_pod(sts, pod)
                status["currentReplicas"] -= 1
                return
            if is_unavailable(pod, min_ready, at):
                return

    async def _write_status(self, sts: Obj, status: Obj) -> None:
        """Write the status when it changed; a finished rolling update makes the update
        revision current (completeRollingUpdate)."""
        strategy = spec_of(sts).get("updateStrategy") or {}
        replicas = replicas_of(sts)
        if (
            strategy.get("type") == "RollingUpdate"
            and status["updatedReplicas"] == replicas
            and status["readyReplicas"] == replicas
            and status["replicas"] == replicas
        ):
            status["currentReplicas"] = status["updatedReplicas"]
            status["currentRevision"] = status["updateRevision"]
        wire = _wire_status(status)
        old = dict(status_of(sts))
        old.pop("conditions", None)
        if wire == old:
            return
        sts["status"] = wire
        replace(sts, await self.client.update_status(sts))

    # pods and claims (stateful_pod_control.go) ------------------------------------------------

    def _event(self, sts: Obj, verb: str, what: str, error: BaseException | None) -> None:
        name = name_of(sts)
        if error is None:
            reason = f"Successful{verb.title()}"
            self.events.record(
                sts, "Normal", reason, f"{verb} {what} in StatefulSet {name} successful"
            )
        else:
            reason = f"Failed{verb.title()}"
            message = f"{verb} {what} in StatefulSet {name} failed error: {error}"
            self.events.record(sts, "Warning", reason, message)

    async def _claim(self, namespace: str, name: str) -> Obj | None:
        try:
            found: Obj = await self.client.get(CLAIM, name, namespace=namespace)
        except NotFound:
            return None
        return found

    async def create_claims(self, sts: Obj, pod: Mapping[str, Any]) -> None:
        """Create the pod's missing claims; an error if one is being deleted."""
        first: Exception | None = None
        for claim_obj in claims_for(sts, ordinal_of(pod)).values():
            name = name_of(claim_obj)
            existing = await self._claim(namespace_of(sts), name)
            if existing is None:
                what = f"Claim {name} Pod {name_of(pod)}"
                try:
                    await self.client.create(claim_obj)
                except AlreadyExists:
                    pass
                except ApiError as exc:
                    self._event_claim(sts, what, exc)
                    first = first or exc
                else:
                    self._event_claim(sts, what, None)
            elif is_deleting(existing):
                first = first or ClaimTerminating(f"pvc {name} is being deleted")
        if first is not None:
            raise first

    def _event_claim(self, sts: Obj, what: str, error: BaseException | None) -> None:
        name = name_of(sts)
        if error is None:
            message = f"create {what} in StatefulSet {name} success"
            self.events.record(sts, "Normal", "SuccessfulCreate", message)
        else:
            message = f"create {what} in StatefulSet {name} failed error: {error}"
            self.events.record(sts, "Warning", "FailedCreate", message)

    async def create_pod(self, sts: Obj, pod: Obj) -> None:
        """Claims first, then the pod, then the claims' owners (CreateStatefulPod)."""
        what = f"Pod {name_of(pod)}"
        try:
            await self.create_claims(sts, pod)
        except (ApiError, ClaimTerminating) as exc:
            self._event(sts, "create", what, exc)
            raise
        try:
            created = await self.client.create(pod)
        except AlreadyExists:
            return  # the cache is behind: the next sync sees it
        except ApiError as exc:
            self._event(sts, "create", what, exc)
            raise
        await self.update_claim_owners(sts, created)
        self._event(sts, "create", what, None)

    async def delete_pod(self, sts: Obj, pod: Mapping[str, Any]) -> None:
        what = f"Pod {name_of(pod)}"
        try:
            await self.client.delete(POD, name_of(pod), namespace=namespace_of(pod))
        except NotFound:
            return
        except ApiError as exc:
            self._event(sts, "delete", what, exc)
            raise
        self._event(sts, "delete", what, None)

    async def claims_follow_policy(self, sts: Obj, pod: Mapping[str, Any]) -> bool:
        """Whether the pod's claims have the owners the retention policy wants."""
        for claim_obj in claims_for(sts, ordinal_of(pod)).values():
            found = await self._claim(namespace_of(sts), name_of(claim_obj))
            if found is not None and not claim_owners_up_to_date(found, sts, pod):
                return False
        return True

    async def update_claim_owners(self, sts: Obj, pod: Mapping[str, Any]) -> None:
        """Give the pod's claims the owners the retention policy wants."""
        for claim_obj in claims_for(sts, ordinal_of(pod)).values():
            found = await self._claim(namespace_of(sts), name_of(claim_obj))
            if found is None or claim_owners_up_to_date(found, sts, pod):
                continue
            found["metadata"]["ownerReferences"] = claim_owner_references(found, sts, pod)
            await self.client.update(found)

    async def claim_is_stale(self, sts: Obj, pod: Mapping[str, Any]) -> bool:
        """Whether a claim of a pod about to be made still belongs to its predecessor
        (whenScaled Delete): the garbage collector is about to delete it."""
        if retention_policy(sts)[1] == "Retain":
            return False
        for claim_obj in claims_for(sts, ordinal_of(pod)).values():
            found = await self._claim(namespace_of(sts), name_of(claim_obj))
            if found is not None and has_stale_owner_ref(found, pod, "Pod"):
                return True
        return False

    async def update_pod(self, sts: Obj, pod: Obj) -> None:
        """Bring a pod's identity, storage and claims' owners in line (UpdateStatefulPod)."""
        consistent = True
        if not identity_matches(sts, pod):
            update_identity(sts, pod)
            consistent = False
        if not storage_matches(sts, pod):
            update_storage(sts, pod)
            consistent = False
            await self.create_claims(sts, pod)
        if not await self.claims_follow_policy(sts, pod):
            await self.update_claim_owners(sts, pod)
        if consistent:
            return
        what = f"Pod {name_of(pod)}"
        try:
            await self.client.update(pod)
        except ApiError as exc:
            self._event(sts, "update", what, exc)
            raise
        self._event(sts, "update", what, None)


class ClaimTerminating(Exception):
    """A pod's claim is being deleted: the pod waits for it to go (and be made again)."""


class _Steps:
    """The per-pod steps of one sync, over the set's members and condemned pods."""

    def __init__(
        self,
        control: StatefulSetReconciler,
        sts: Obj,
        update_set: Obj,
        members: list[Obj],
        condemned: list[Obj],
        first_unhealthy: Obj | None,
        at: datetime,
    ) -> None:
        self.control = control
        self.sts = sts
        self.update_set = update_set
        self.members = members
        self.doomed = condemned
        self.first_unhealthy = first_unhealthy
        self.at = at
        self.min_ready = int(spec_of(sts).get("minReadySeconds") or 0)
        # OrderedReady waits for each step; Parallel takes them all at once.
        self.monotonic = spec_of(sts).get("podManagementPolicy") != "Parallel"

    async def run(self, step: Callable[[int], Awaitable[bool]], count: int) -> bool:
        """Run `step` over `count` pods (runForAll): in order, stopping at the first that
        says to, or all at once in slow-start batches. Whether to stop the sync."""
        if self.monotonic:
            for i in range(count):
                if await step(i):
                    return True
            return False
        indices = iter(range(count))
        _, error = await slow_start(count, lambda: step(next(indices)))
        if error is not None:
            raise error
        return False

    async def replica(self, i: int) -> bool:
        """processReplica: replace a finished pod, create a missing one, wait for one not
        yet Running, Ready and available, fix a pod's identity and claims."""
        control, sts, pod = self.control, self.sts, self.members[i]
        if _phase(pod) in ("Failed", "Succeeded"):
            if not is_deleting(pod):
                await control.delete_pod(sts, pod)
            return True
        if not is_created(pod):
            if await control.claim_is_stale(sts, pod):
                return True
            await control.create_pod(sts, pod)
            if self.monotonic:
                return True
        if _phase(pod) == "Pending":
            await control.create_claims(sts, pod)
            await control.update_claim_owners(sts, pod)
        if self.monotonic and (
            is_deleting(pod)
            or not is_running_and_ready(pod)
            or not is_pod_available(pod, self.min_ready, self.at)
        ):
            return True
        try:
            follows = await control.claims_follow_policy(self.update_set, pod)
        except ApiError:
            follows = True
        if identity_matches(sts, pod) and storage_matches(sts, pod) and follows:
            return False
        await control.update_pod(self.update_set, copy.deepcopy(pod))
        return False

    async def fix_claims(self, i: int) -> bool:
        """Condemned pods' claims get the owners the policy wants before the pods go."""
        pod = self.doomed[i]
        if not await self.control.claims_follow_policy(self.update_set, pod):
            await self.control.update_claim_owners(self.update_set, pod)
        return False

    async def condemned(self, i: int) -> bool:
        """processCondemned: delete a pod beyond the replicas; in order, only once those
        before it are healthy (the first unhealthy pod itself may go)."""
        pod = self.doomed[i]
        if is_deleting(pod):
            return self.monotonic
        healthy = is_running_and_ready(pod) and is_pod_available(pod, self.min_ready, self.at)
        if self.monotonic and pod is not self.first_unhealthy and not healthy:
            return True
        await self.control.delete_pod(self.sts, pod)
        return True


# -- wiring ------------------------------------------------------------------------------------


def setup(manager: Manager) -> None:
    """Register the StatefulSet controller with `manager`."""
    reconciler = StatefulSetReconciler(
        manager.event_recorder("statefulset-controller"), live=manager.api_reader
    )
    cache = manager.cache
    # Claims and revisions are read from the cache.
    cache.informer_for(CLAIM)
    cache.informer_for(CONTROLLER_REVISION)
    (
        manager.controller()
        .named("statefulset")
        .for_(STATEFUL_SET)
        .watches(POD, lambda pod: controllers_of(cache, pod, STATEFUL_SET))
        .with_options(max_concurrent_reconciles=5)
        .complete(reconciler)
    )
    index_pods_by_controller(manager)
