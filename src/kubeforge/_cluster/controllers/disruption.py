"""The disruption controller: keep each PodDisruptionBudget's status (pkg/controller/
disruption/disruption.go, Kubernetes 1.33), which the API server's eviction subresource
decides by.

For the pods a budget selects: `currentHealthy` counts the ready ones that are not being
deleted nor being evicted; `desiredHealthy` is `minAvailable` (a count, or a percentage of
the expected pods) or the expected pods less `maxUnavailable`; `expectedPods` is the number
of selected pods for an integer `minAvailable`, else the sum of the scales of their
controllers (a Deployment, ReplicaSet, StatefulSet or ReplicationController, or any kind with
a scale subresource); `disruptionsAllowed` is currentHealthy less desiredHealthy (never
below 0, and 0 while no pod is expected). `disruptedPods` keeps the pods an eviction was
granted for until they are seen deleting, or for two minutes. The DisruptionAllowed
condition says whether an eviction would be granted; when the status cannot be computed
(a pod's controller is not found, say) it is False with reason SyncFailed and no eviction
is granted.

Alongside, a pod whose DisruptionTarget condition an eviction set but which was not deleted
gets that condition reset to False after two minutes.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kubeforge import clock
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
from kubeforge._api.machinery.timestamps import format_time, parse_time_or_none
from kubeforge._client.client import Client
from kubeforge._client.discovery import NoKindMatch
from kubeforge._client.errors import ApiError, Conflict, NotFound
from kubeforge._cluster.controllers._facts import Facts
from kubeforge._cluster.controllers._podstate import is_pod_ready, is_pod_terminal
from kubeforge._cluster.controllers._wakeups import Wakeups
from kubeforge._cluster.controllers._writes import quiet_conflicts
from kubeforge._cluster.controllers.deployment import scaled_value
from kubeforge._runtime.conditions import find_status_condition, set_status_condition
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.predicate import Funcs
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = [
    "DELETION_TIMEOUT",
    "DisruptionReconciler",
    "StalePodDisruptionReconciler",
    "expected_pods",
    "setup",
]

Obj = dict[str, Any]

PDB = "policy/v1/PodDisruptionBudget"
POD = "v1/Pod"
# The controllers whose pods a budget counts by their scale, read from the cache.
REPLICATION_CONTROLLER = "v1/ReplicationController"
REPLICA_SET = "apps/v1/ReplicaSet"
DEPLOYMENT = "apps/v1/Deployment"
STATEFUL_SET = "apps/v1/StatefulSet"

# How long a granted eviction keeps its pod out of currentHealthy before the pod must be
# seen deleting (DeletionTimeout), and how long a DisruptionTarget condition may stand on
# a pod that is not deleted (stalePodDisruptionTimeout).
DELETION_TIMEOUT = timedelta(minutes=2)
STALE_POD_DISRUPTION_TIMEOUT = timedelta(minutes=2)

DISRUPTION_ALLOWED = "DisruptionAllowed"
DISRUPTION_TARGET = "DisruptionTarget"
TERMINATION_BY_KUBELET = "TerminationByKubelet"


class SyncFailed(Exception):
    """The budget's status cannot be computed (its message goes into the condition)."""


# -- the pods of a budget and their controllers' scale ---------------------------------------


def _selected(pdb: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """policy/v1: a null selector selects nothing, an empty one every pod."""
    return namespace_of(pod) == namespace_of(pdb) and label_selector_matches(
        spec_of(pdb).get("selector"), labels_of(pod)
    )


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _is(ref: Mapping[str, Any], kind: str, groups: tuple[str, ...]) -> bool:
    return ref.get("kind") == kind and _group_of(str(ref.get("apiVersion") or "")) in groups


class _Scales:
    """The scale of the controllers of a budget's pods (the finders of disruption.go:
    ReplicationController, Deployment through its ReplicaSet, ReplicaSet, StatefulSet, then
    any kind's scale subresource)."""

    def __init__(self, reconciler: DisruptionReconciler, namespace: str) -> None:
        self.client = reconciler.client
        self.live = reconciler.live
        self.namespace = namespace

    async def _cached(self, kind: str, ref: Mapping[str, Any]) -> Obj | None:
        try:
            found: Obj = await self.client.get(kind, str(ref.get("name")), namespace=self.namespace)
        except NotFound:
            return None
        return found if uid_of(found) == ref.get("uid") else None

    async def find(self, ref: Mapping[str, Any]) -> tuple[str, int] | None:
        """(the controller's uid, its replicas) for a pod's controller reference."""
        if _is(ref, "ReplicationController", ("",)):
            rc = await self._cached(REPLICATION_CONTROLLER, ref)
            if rc is not None:
                return uid_of(rc), int(spec_of(rc).get("replicas", 1))
        if _is(ref, "ReplicaSet", ("apps", "extensions")):
            rs = await self._cached(REPLICA_SET, ref)
            if rs is not None:
                owner = controller_ref(rs)
                if owner is not None and _is(owner, "Deployment", ("apps", "extensions")):
                    deployment = await self._cached(DEPLOYMENT, owner)
                    if deployment is not None:
                        return uid_of(deployment), int(spec_of(deployment).get("replicas", 1))
                elif owner is None or owner.get("kind") != "Deployment":
                    return uid_of(rs), int(spec_of(rs).get("replicas", 1))
        if _is(ref, "StatefulSet", ("apps",)):
            sts = await self._cached(STATEFUL_SET, ref)
            if sts is not None:
                return uid_of(sts), int(spec_of(sts).get("replicas", 1))
        return await self._scale_subresource(ref)

    async def _scale_subresource(self, ref: Mapping[str, Any]) -> tuple[str, int] | None:
        kind = f"{ref.get('apiVersion')}/{ref.get('kind')}"
        api = self.live
        try:
            resource = await api.resource(kind)
        except NoKindMatch as exc:
            raise SyncFailed(str(exc)) from None
        if "scale" not in resource.subresources:
            qualified = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
            raise SyncFailed(f"{qualified} does not implement the scale subresource")
        try:
            scale = await api.get_scale(kind, str(ref.get("name")), namespace=self.namespace)
        except NotFound:
            return None
        if uid_of(scale) != ref.get("uid"):
            return None
        return uid_of(scale), int(spec_of(scale).get("replicas") or 0)


async def expected_pods(
    reconciler: DisruptionReconciler, pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
) -> tuple[int, int, list[str]]:
    """(expectedPods, desiredHealthy, pods without a controller) for a budget
    (getExpectedPodCount); SyncFailed when a pod's controller cannot be found."""
    spec = spec_of(pdb)
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    if max_unavailable is not None:
        expected, unmanaged = await _expected_scale(reconciler, pdb, pods)
        desired = max(expected - _scaled(max_unavailable, expected), 0)
        return expected, desired, unmanaged
    if isinstance(min_available, int):
        return len(pods), min_available, []
    if isinstance(min_available, str):
        expected, unmanaged = await _expected_scale(reconciler, pdb, pods)
        return expected, _scaled(min_available, expected), unmanaged
    return 0, 0, []


def _scaled(value: int | str, total: int) -> int:
    try:
        return scaled_value(value, total, True)
    except ValueError as exc:
        raise SyncFailed(str(exc)) from None


async def _expected_scale(
    reconciler: DisruptionReconciler, pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
) -> tuple[int, list[str]]:
    """The sum of the scales of the pods' controllers, each counted once (getExpectedScale),
    and the pods that have none."""
    scales = _Scales(reconciler, namespace_of(pdb))
    by_controller: dict[str, int] = {}
    unmanaged: list[str] = []
    for pod in pods:
        ref = controller_ref(pod)
        if ref is None:
            unmanaged.append(name_of(pod))
            continue
        if ref.get("uid") in by_controller:
            continue
        found = await scales.find(ref)
        if found is None:
            raise SyncFailed(f'found no controllers for pod "{name_of(pod)}"')
        by_controller[found[0]] = found[1]
    return sum(by_controller.values()), unmanaged


# -- healthy pods and evictions in flight ----------------------------------------------------


def _disrupted_pods(
    pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], at: datetime, events: Any
) -> tuple[dict[str, str], datetime | None]:
    """The evictions still expected to delete their pod, and when the first of them is
    overdue (buildDisruptedPodMap); a pod whose eviction is overdue gets an event."""
    recorded = status_of(pdb).get("disruptedPods") or {}
    kept: dict[str, str] = {}
    recheck: datetime | None = None
    if not recorded:
        return kept, recheck
    for pod in pods:
        if is_deleting(pod) or name_of(pod) not in recorded:
            continue
        granted = parse_time_or_none(recorded[name_of(pod)])
        if granted is None:
            continue
        overdue = granted + DELETION_TIMEOUT
        if overdue < at:
            events.record(
                pod,
                "Warning",
                "NotDeleted",
                f"Pod was expected by PDB {namespace_of(pdb)}/{name_of(pdb)} to be deleted but "
                "it wasn't",
            )
        else:
            kept[name_of(pod)] = recorded[name_of(pod)]
            recheck = overdue if recheck is None else min(recheck, overdue)
    return kept, recheck


def _current_healthy(
    pods: Sequence[Mapping[str, Any]], disrupted: Mapping[str, str], at: datetime
) -> int:
    """Ready pods not being deleted and not about to be (countHealthyPods)."""
    healthy = 0
    for pod in pods:
        if is_deleting(pod):
            continue
        granted = parse_time_or_none(disrupted.get(name_of(pod)))
        if granted is not None and granted + DELETION_TIMEOUT > at:
            continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


def _allowed_condition(status: Obj) -> None:
    """DisruptionAllowed from disruptionsAllowed (UpdateDisruptionAllowedCondition)."""
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    conditions: list[Any] = status.setdefault("conditions", [])
    set_status_condition(
        conditions,
        {
            "type": DISRUPTION_ALLOWED,
            "status": "True" if allowed else "False",
            "reason": "SufficientPods" if allowed else "InsufficientPods",
            "message": "",
            "observedGeneration": int(status.get("observedGeneration") or 0),
        },
    )


def _conditions_up_to_date(pdb: Mapping[str, Any]) -> bool:
    """ConditionsAreUpToDate: the condition agrees with disruptionsAllowed and generation."""
    status = status_of(pdb)
    condition = find_status_condition(list(status.get("conditions") or ()), DISRUPTION_ALLOWED)
    if condition is None:
        return False
    if int(status.get("observedGeneration") or 0) != int(meta_of(pdb).get("generation") or 0):
        return False
    if int(status.get("disruptionsAllowed") or 0) > 0:
        wanted = ("True", "SufficientPods")
    else:
        wanted = ("False", "InsufficientPods")
    return (condition.get("status"), condition.get("reason")) == wanted


def _selector_text(selector: Any) -> str:
    """A LabelSelector as Go's %v prints it in events."""
    selector = selector if isinstance(selector, Mapping) else {}
    labels = selector.get("matchLabels") or {}
    label_text = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    expressions = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key')},Operator:{e.get('operator')},"
        f"Values:[{' '.join(e.get('values') or ())}],}},"
        for e in selector.get("matchExpressions") or ()
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{label_text}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )


# -- the budgets -----------------------------------------------------------------------------


class DisruptionReconciler(Reconciler):
    """Computes and writes each PodDisruptionBudget's status (DisruptionController.sync)."""

    def __init__(self, events: Any, wakeups: Wakeups, *, live: Client) -> None:
        self.events = events
        self.wakeups = wakeups
        # Scale subresources of arbitrary kinds are read live, through discovery.
        self.live = live

    async def reconcile(self, request: Request) -> Result | None:
        return await quiet_conflicts(functools.partial(self._sync, request))

    async def _sync(self, request: Request) -> Result | None:
        try:
            pdb: Obj = await self.client.get(PDB, request.name, namespace=request.namespace)
        except NotFound:
            self.wakeups.after(request, None)
            return None
        try:
            await self._try_sync(request, pdb)
        except Conflict:
            raise
        except (SyncFailed, ApiError) as exc:
            # Fail safe: no eviction is granted while the status cannot be trusted.
            await self._fail_safe(pdb, exc)
        return None

    async def _try_sync(self, request: Request, pdb: Obj) -> None:
        pods: list[Obj] = [
            pod
            for pod in await self.client.list(POD, namespace=namespace_of(pdb))
            if label_selector_matches(spec_of(pdb).get("selector"), labels_of(pod))
        ]
        if not pods:
            self.events.record(pdb, "Normal", "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = await expected_pods(self, pdb, pods)
        except SyncFailed as exc:
            self.events.record(
                pdb,
                "Warning",
                "CalculateExpectedPodCountFailed",
                f"Failed to calculate the number of expected pods: {exc}",
            )
            raise
        if unmanaged:
            self.events.record(
                pdb,
                "Warning",
                "UnmanagedPods",
                "Pods selected by this PodDisruptionBudget (selector: "
                f"{_selector_text(spec_of(pdb).get('selector'))}) were found to be unmanaged. "
                "As a result, the status of the PDB cannot be calculated correctly, which may "
                'result in undefined behavior. To account for these pods please set ".spec.'
                'minAvailable" field of the PDB to an integer value.',
            )
        at = clock.now()
        disrupted, recheck = _disrupted_pods(pdb, pods, at, self.events)
        healthy = _current_healthy(pods, disrupted, at)
        await self._write_status(pdb, healthy, desired, expected, disrupted)
        if recheck is not None:
            self.wakeups.after(request, (recheck - at).total_seconds())

    async def _write_status(
        self, pdb: Obj, healthy: int, desired: int, expected: int, disrupted: dict[str, str]
    ) -> None:
        """updatePdbStatus: write the counts unless nothing changed."""
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            # A budget that selects no pod yet must not allow evictions of the first ones.
            allowed = 0
        generation = int(meta_of(pdb).get("generation") or 0)
        old = status_of(pdb)
        if (
            int(old.get("currentHealthy") or 0) == healthy
            and int(old.get("desiredHealthy") or 0) == desired
            and int(old.get("expectedPods") or 0) == expected
            and int(old.get("disruptionsAllowed") or 0) == allowed
            and dict(old.get("disruptedPods") or {}) == disrupted
            and int(old.get("observedGeneration") or 0) == generation
            and _conditions_up_to_date(pdb)
        ):
            return
        status: Obj = {
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        if generation:
            status["observedGeneration"] = generation
        status["conditions"] = copy.deepcopy(list(old.get("conditions") or ()))
        _allowed_condition(status)
        updated = copy.deepcopy(pdb)
        updated["status"] = status
        await self.client.update_status(updated)

    async def _fail_safe(self, pdb: Obj, error: Exception) -> None:
        """Allow no disruption, saying why (failSafe)."""
        updated = copy.deepcopy(pdb)
        status = updated.setdefault("status", {})
        status["disruptionsAllowed"] = 0
        conditions: list[Any] = status.setdefault("conditions", [])
        set_status_condition(
            conditions,
            {
                "type": DISRUPTION_ALLOWED,
                "status": "False",
                "reason": "SyncFailed",
                "message": str(error),
                "observedGeneration": int(status.get("observedGeneration") or 0),
            },
        )
        await self.client.update_status(updated)


# -- stale DisruptionTarget conditions -------------------------------------------------------


def _stale_disruption_wait(pod: Mapping[str, Any], at: datetime) -> float | None:
    """Seconds until a DisruptionTarget condition an eviction set on a pod that was not
    deleted counts as stale (0: now), or None when there is none to reset
    (nonTerminatingPodHasStaleDisruptionCondition)."""
    if is_deleting(pod) or is_pod_terminal(pod):
        return None
    for condition in status_of(pod).get("conditions") or ():
        if condition.get("type") != DISRUPTION_TARGET:
            continue
        if condition.get("status") != "True" or condition.get("reason") == TERMINATION_BY_KUBELET:
            return None
        since = parse_time_or_none(condition.get("lastTransitionTime")) or at
        return max((since + STALE_POD_DISRUPTION_TIMEOUT - at).total_seconds(), 0.0)
    return None


class StalePodDisruptionReconciler(Reconciler):
    """Resets a pod's DisruptionTarget condition to False when its eviction did not delete
    it within two minutes (syncStalePodDisruption)."""

    def __init__(self, wakeups: Wakeups) -> None:
        self.wakeups = wakeups

    async def reconcile(self, request: Request) -> Result | None:
        return await quiet_conflicts(functools.partial(self._sync, request))

    async def _sync(self, request: Request) -> Result | None:
        try:
            pod: Obj = await self.client.get(POD, request.name, namespace=request.namespace)
        except NotFound:
            self.wakeups.after(request, None)
            return None
        at = clock.now()
        wait = _stale_disruption_wait(pod, at)
        if wait is None:
            return None
        if wait > 0:
            self.wakeups.after(request, wait)
            return None
        updated = copy.deepcopy(pod)
        for condition in updated["status"]["conditions"]:
            if condition.get("type") == DISRUPTION_TARGET:
                condition["status"] = "False"
                condition["lastTransitionTime"] = format_time(at)
        await self.client.update_status(updated)
        return None


# -- wiring ------------------------------------------------------------------------------------


def _budgets_of(
    budgets_by_namespace: Facts[dict[str, Any]], events: Any, pod: Mapping[str, Any]
) -> list[Request]:
    """The budgets selecting a pod (a pod should have one; more get a warning)."""
    budgets = [
        pdb for pdb in budgets_by_namespace.in_namespace(namespace_of(pod)) if _selected(pdb, pod)
    ]
    if len(budgets) > 1:
        events.record(
            pod,
            "Warning",
            "MultiplePodDisruptionBudgets",
            f'Pod "{namespace_of(pod)}"/"{name_of(pod)}" matches multiple '
            f'PodDisruptionBudgets.  Chose "{name_of(budgets[0])}" arbitrarily.',
        )
    return [Request(namespace_of(pdb), name_of(pdb)) for pdb in budgets]


def _may_have_stale_condition(pod: Mapping[str, Any]) -> bool:
    return _stale_disruption_wait(pod, clock.now()) is not None


def setup(manager: Manager) -> None:
    """Register the disruption controller with `manager`."""
    events = manager.event_recorder("controllermanager")
    cache = manager.cache
    for kind in (REPLICATION_CONTROLLER, REPLICA_SET, DEPLOYMENT, STATEFUL_SET):
        cache.informer_for(kind)
    wakeups = Wakeups()
    (
        manager.controller()
        .named("disruption")
        .for_(PDB)
        .watches(POD, functools.partial(_budgets_of, Facts(cache, PDB, lambda pdb: pdb), events))
        .watches_source(wakeups.channel)
        .complete(DisruptionReconciler(events, wakeups, live=manager.api_reader))
    )
    stale = Wakeups()
    condition_only = Funcs(
        on_create=_may_have_stale_condition,
        on_update=lambda _old, new: _may_have_stale_condition(new),
        on_delete=lambda _pod: False,
    )
    (
        manager.controller()
        .named("disruption-stale-pods")
        .for_(POD, predicates=[condition_only])
        .watches_source(stale.channel)
        .complete(StalePodDisruptionReconciler(stale))
    )
