"""The Deployment controller: roll pod templates out through ReplicaSets.

It follows upstream's controller step for step. Each pod template gets a ReplicaSet named
`<deployment>-<pod-template-hash>` (the hash label is on the ReplicaSet, its selector and
its template) whose `deployment.kubernetes.io/revision` is one more than the highest
before. RollingUpdate grows the new ReplicaSet while at most `replicas + maxSurge` pods
exist and shrinks old ones while at least `replicas - maxUnavailable` stay available
(percentages: surge rounds up, unavailability down; both zero means one unavailable).
Recreate scales every old ReplicaSet to zero and waits for their pods to go before
creating the new one. Scaling a deployment mid-rollout spreads the change across its
active ReplicaSets in proportion to their size. Old ReplicaSets scaled to zero beyond
`revisionHistoryLimit` are deleted. A paused deployment is only scaled.

The status carries replicas, updatedReplicas, readyReplicas, availableReplicas,
unavailableReplicas, observedGeneration and the Available and Progressing conditions
(with lastUpdateTime and lastTransitionTime), which `kubectl rollout status` and
`kubectl wait --for=condition=Available` read; a rollout making no progress for
`progressDeadlineSeconds` gets Progressing=False/ProgressDeadlineExceeded.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubeforge._api.machinery.access import (
    annotations_of,
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
from kubeforge._api.machinery.timestamps import format_time, now, parse_time_or_none
from kubeforge._client.errors import AlreadyExists, ApiError, NotFound
from kubeforge._client.protocols import ObjectClient, Reader
from kubeforge._cluster.controllers._claiming import claim, controllers_of
from kubeforge._cluster.controllers._hashing import template_hash
from kubeforge._cluster.controllers._podindex import index_pods_by_controller, pods_controlled_by
from kubeforge._cluster.controllers._writes import namespace_terminating, quiet_conflicts, replace
from kubeforge._runtime.cache import Cache
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.predicate import Funcs
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = [
    "DESIRED_REPLICAS_ANNOTATION",
    "HASH_LABEL",
    "MAX_REPLICAS_ANNOTATION",
    "REVISION_ANNOTATION",
    "REVISION_HISTORY_ANNOTATION",
    "DeploymentReconciler",
    "calculate_status",
    "deployment_complete",
    "equal_ignore_hash",
    "find_new_rs",
    "get_condition",
    "max_surge",
    "max_unavailable",
    "new_rs_replicas",
    "remove_condition",
    "resolve_fenceposts",
    "revision_of",
    "scaled_value",
    "set_condition",
    "setup",
    "template_hash",
]

Obj = dict[str, Any]

DEPLOYMENT = "apps/v1/Deployment"
REPLICA_SET = "apps/v1/ReplicaSet"
POD = "v1/Pod"

HASH_LABEL = "pod-template-hash"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
# Annotations of a deployment that are not copied to its ReplicaSets.
_NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION_ANNOTATION,
        REVISION_HISTORY_ANNOTATION,
        DESIRED_REPLICAS_ANNOTATION,
        MAX_REPLICAS_ANNOTATION,
        "deprecated.deployment.rollback.to",
    }
)
MAX_REVISION_HISTORY_CHARS = 2000
MAX_INT32 = 2**31 - 1

AVAILABLE = "Available"
PROGRESSING = "Progressing"
REPLICA_FAILURE = "ReplicaFailure"
# Condition reasons, as upstream spells them.
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
FAILED_RS_CREATE = "ReplicaSetCreateError"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"

# -- reading objects ---------------------------------------------------------------------------


def _replicas(obj: Mapping[str, Any]) -> int:
    value = spec_of(obj).get("replicas")
    return 1 if value is None else int(value)


def _count(rss: Sequence[Mapping[str, Any] | None], field: str) -> int:
    return sum(int(status_of(rs).get(field) or 0) for rs in rss if rs is not None)


def _spec_total(rss: Sequence[Mapping[str, Any] | None]) -> int:
    return sum(_replicas(rs) for rs in rss if rs is not None)


def _active(rss: Sequence[Obj | None]) -> list[Obj]:
    return [rs for rs in rss if rs is not None and _replicas(rs) > 0]


def _creation_key(rs: Mapping[str, Any]) -> tuple[str, str]:
    # RFC 3339 UTC strings order like the times they name.
    return (str(meta_of(rs).get("creationTimestamp") or ""), name_of(rs))


def _int_annotation(obj: Mapping[str, Any], key: str) -> int | None:
    try:
        return int(annotations_of(obj)[key])
    except (KeyError, ValueError):
        return None


def revision_of(rs: Mapping[str, Any]) -> int:
    """A ReplicaSet's revision (0 when it has none)."""
    return _int_annotation(rs, REVISION_ANNOTATION) or 0


def _annotations(obj: Obj) -> dict[str, str]:
    meta = obj.setdefault("metadata", {})
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    result: dict[str, str] = annotations
    return result


# -- surge and unavailability ------------------------------------------------------------------


def scaled_value(value: int | str | None, total: int, round_up: bool) -> int:
    """An IntOrString of the API (`3` or `"25%"`) as a count of `total`."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        raise ValueError(f"invalid value for IntOrString: string is not a percentage: {text!r}")
    percent = int(text[:-1])
    return -(-percent * total // 100) if round_up else percent * total // 100


def _is_rolling(d: Mapping[str, Any]) -> bool:
    strategy = spec_of(d).get("strategy") or {}
    return bool(strategy.get("type", "RollingUpdate") == "RollingUpdate")


def resolve_fenceposts(
    surge: int | str | None, unavailable: int | str | None, desired: int
) -> tuple[int, int]:
    """maxSurge rounded up and maxUnavailable rounded down; never both zero."""
    surge_count = scaled_value(surge, desired, True)
    unavailable_count = scaled_value(unavailable, desired, False)
    if surge_count == 0 and unavailable_count == 0:
        # Otherwise a rollout could neither add nor remove a pod.
        unavailable_count = 1
    return surge_count, unavailable_count


def _fenceposts(d: Mapping[str, Any]) -> tuple[int, int]:
    rolling = (spec_of(d).get("strategy") or {}).get("rollingUpdate") or {}
    return resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), _replicas(d))


def max_unavailable(d: Mapping[str, Any]) -> int:
    """Pods a rolling deployment may have unavailable (0 for Recreate or no replicas)."""
    replicas = _replicas(d)
    if not _is_rolling(d) or replicas == 0:
        return 0
    return min(_fenceposts(d)[1], replicas)


def max_surge(d: Mapping[str, Any]) -> int:
    """Pods a rolling deployment may run beyond its replicas (0 for Recreate)."""
    return _fenceposts(d)[0] if _is_rolling(d) else 0


# -- templates ---------------------------------------------------------------------------------


def _normalized(value: Any) -> Any:
    """Drop nulls and empty maps/lists: the API treats them like absent fields."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            norm = _normalized(item)
            if norm is not None and norm != {} and norm != []:
                out[key] = norm
        return out
    if isinstance(value, list):
        return [_normalized(item) for item in value]
    return value


def equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two pod templates are the same apart from the pod-template-hash label."""
    left, right = copy.deepcopy(dict(a)), copy.deepcopy(dict(b))
    for template in (left, right):
        labels = (template.get("metadata") or {}).get("labels")
        if isinstance(labels, dict):
            labels.pop(HASH_LABEL, None)
    return bool(_normalized(left) == _normalized(right))


# -- finding ReplicaSets -----------------------------------------------------------------------


def find_new_rs(d: Mapping[str, Any], rss: Sequence[Obj]) -> Obj | None:
    """The oldest ReplicaSet whose template is the deployment's."""
    template = spec_of(d).get("template") or {}
    for rs in sorted(rss, key=_creation_key):
        if equal_ignore_hash(spec_of(rs).get("template") or {}, template):
            return rs
    return None


def _old_rss(rss: Sequence[Obj], new_rs: Obj | None) -> list[Obj]:
    new_uid = uid_of(new_rs) if new_rs is not None else None
    return [rs for rs in rss if uid_of(rs) != new_uid]


def _active_or_latest(new_rs: Obj | None, old_rss: Sequence[Obj]) -> Obj | None:
    """The one ReplicaSet with pods; the newest when none has; None when several have."""
    if new_rs is None and not old_rss:
        return None
    newest_first = sorted(old_rss, key=_creation_key, reverse=True)
    active = _active([*newest_first, new_rs])
    if not active:
        return new_rs if new_rs is not None else newest_first[0]
    return active[0] if len(active) == 1 else None


def _is_saturated(d: Mapping[str, Any], rs: Mapping[str, Any] | None) -> bool:
    if rs is None:
        return False
    desired = _int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
    want = _replicas(d)
    return (
        _replicas(rs) == want
        and desired == want
        and int(status_of(rs).get("availableReplicas") or 0) == want
    )


def new_rs_replicas(d: Mapping[str, Any], all_rss: Sequence[Obj | None], new_rs: Obj) -> int:
    """How large the new ReplicaSet may grow now."""
    want = _replicas(d)
    if not _is_rolling(d):
        return want
    current = _spec_total(all_rss)
    max_total = want + max_surge(d)
    if current >= max_total:
        return _replicas(new_rs)
    grow = min(max_total - current, want - _replicas(new_rs))
    return _replicas(new_rs) + grow


def _replica_fraction(rs: Mapping[str, Any], d: Mapping[str, Any]) -> int:
    if _replicas(d) == 0:
        return -_replicas(rs)
    deployment_replicas = _replicas(d) + max_surge(d)
    annotated = _int_annotation(rs, MAX_REPLICAS_ANNOTATION)
    if annotated is None:
        annotated = int(status_of(d).get("replicas") or 0)
    if annotated <= 0:
        return 0
    size = _replicas(rs) * deployment_replicas / annotated
    return math.floor(size + 0.5) - _replicas(rs)


def _proportion(rs: Mapping[str, Any], d: Mapping[str, Any], to_add: int, added: int) -> int:
    if _replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _replica_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


# -- annotations -------------------------------------------------------------------------------


def _replica_annotations_stale(rs: Mapping[str, Any], desired: int, maximum: int) -> bool:
    annotations = annotations_of(rs)
    return annotations.get(DESIRED_REPLICAS_ANNOTATION) != str(desired) or annotations.get(
        MAX_REPLICAS_ANNOTATION
    ) != str(maximum)


def _set_replica_annotations(rs: Obj, desired: int, maximum: int) -> bool:
    if not _replica_annotations_stale(rs, desired, maximum):
        return False
    annotations = _annotations(rs)
    annotations[DESIRED_REPLICAS_ANNOTATION] = str(desired)
    annotations[MAX_REPLICAS_ANNOTATION] = str(maximum)
    return True


def _set_new_rs_annotations(d: Mapping[str, Any], rs: Obj, revision: str, exists: bool) -> bool:
    """Copy the deployment's annotations and set the revision (keeping a rolled-back-to
    ReplicaSet's earlier revisions in revision-history)."""
    changed = False
    annotations = _annotations(rs)
    for key, value in annotations_of(d).items():
        if key in _NOT_COPIED or annotations.get(key) == value:
            continue
        annotations[key] = value
        changed = True
    old_text = annotations.get(REVISION_ANNOTATION)
    try:
        old = int(old_text) if old_text is not None else 0
    except ValueError:
        return changed
    if old < int(revision):
        annotations[REVISION_ANNOTATION] = revision
        changed = True
        if old_text is not None:
            history = annotations.get(REVISION_HISTORY_ANNOTATION, "")
            entries = [e for e in history.split(",") if e] if history else []
            entries.append(old_text)
            while len(",".join(entries)) > MAX_REVISION_HISTORY_CHARS and len(entries) > 1:
                entries.pop(0)
            annotations[REVISION_HISTORY_ANNOTATION] = ",".join(entries)
    if not exists and _set_replica_annotations(rs, _replicas(d), _replicas(d) + max_surge(d)):
        changed = True
    return changed


# -- conditions and status ---------------------------------------------------------------------


def _condition(kind: str, status: str, reason: str, message: str, at: datetime) -> Obj:
    stamp = format_time(at)
    return {
        "type": kind,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def get_condition(status: Mapping[str, Any], kind: str) -> Obj | None:
    for condition in status.get("conditions") or ():
        if condition.get("type") == kind:
            return dict(condition)
    return None


def set_condition(status: Obj, condition: Obj) -> None:
    """SetDeploymentCondition: same status and reason is no change; same status keeps the
    transition time; the condition moves to the end."""
    current = get_condition(status, condition["type"])
    if current is not None:
        if current.get("status") == condition["status"] and current.get("reason") == condition.get(
            "reason"
        ):
            return
        if current.get("status") == condition["status"]:
            condition["lastTransitionTime"] = current.get("lastTransitionTime")
    remove_condition(status, condition["type"])
    status.setdefault("conditions", []).append(condition)


def remove_condition(status: Obj, kind: str) -> None:
    conditions = [c for c in status.get("conditions") or () if c.get("type") != kind]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


def calculate_status(
    all_rss: Sequence[Obj | None], new_rs: Obj | None, d: Mapping[str, Any], at: datetime
) -> Obj:
    """The deployment status its ReplicaSets add up to (zero counts omitted, as the API
    serialises them), with the Available condition."""
    available = _count(all_rss, "availableReplicas")
    unavailable = max(_spec_total(all_rss) - available, 0)
    status: Obj = {}
    for field, value in (
        ("observedGeneration", int(meta_of(d).get("generation") or 0)),
        ("replicas", _count(all_rss, "replicas")),
        ("updatedReplicas", _count([new_rs], "replicas")),
        ("readyReplicas", _count(all_rss, "readyReplicas")),
        ("availableReplicas", available),
        ("unavailableReplicas", unavailable),
    ):
        if value:
            status[field] = value
    collisions = status_of(d).get("collisionCount")
    if collisions is not None:
        status["collisionCount"] = collisions
    conditions = [dict(c) for c in status_of(d).get("conditions") or ()]
    if conditions:
        status["conditions"] = conditions
    if available >= _replicas(d) - max_unavailable(d):
        cond = _condition(
            AVAILABLE,
            "True",
            MINIMUM_REPLICAS_AVAILABLE,
            "Deployment has minimum availability.",
            at,
        )
    else:
        cond = _condition(
            AVAILABLE,
            "False",
            MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            at,
        )
    set_condition(status, cond)
    return status


def _has_progress_deadline(d: Mapping[str, Any]) -> bool:
    deadline = spec_of(d).get("progressDeadlineSeconds")
    return deadline is not None and int(deadline) != MAX_INT32


def deployment_complete(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Every replica updated and available, and the latest generation observed."""
    want = _replicas(d)
    return (
        int(status.get("updatedReplicas") or 0) == want
        and int(status.get("replicas") or 0) == want
        and int(status.get("availableReplicas") or 0) == want
        and int(status.get("observedGeneration") or 0) >= int(meta_of(d).get("generation") or 0)
    )


def _progressing(d: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    old = status_of(d)

    def get(status: Mapping[str, Any], field: str) -> int:
        return int(status.get(field) or 0)

    old_old = get(old, "replicas") - get(old, "updatedReplicas")
    new_old = get(new, "replicas") - get(new, "updatedReplicas")
    return (
        get(new, "updatedReplicas") > get(old, "updatedReplicas")
        or new_old < old_old
        or get(new, "readyReplicas") > get(old, "readyReplicas")
        or get(new, "availableReplicas") > get(old, "availableReplicas")
    )


def _timed_out(d: Mapping[str, Any], status: Mapping[str, Any], at: datetime) -> bool:
    if not _has_progress_deadline(d):
        return False
    condition = get_condition(status, PROGRESSING)
    if condition is None or condition.get("reason") == NEW_RS_AVAILABLE:
        return False
    if condition.get("reason") == TIMED_OUT:
        return True
    since = parse_time_or_none(condition.get("lastUpdateTime"))
    if since is None:
        return False
    return since.timestamp() + int(spec_of(d)["progressDeadlineSeconds"]) < at.timestamp()


def _replica_failures(all_rss: Sequence[Obj | None], new_rs: Obj | None) -> list[Obj]:
    """ReplicaFailure conditions of the ReplicaSets (the new one's first), as deployment
    conditions."""

    def of(rs: Mapping[str, Any]) -> list[Obj]:
        out = []
        for c in status_of(rs).get("conditions") or ():
            if c.get("type") == REPLICA_FAILURE:
                out.append(
                    {
                        "type": REPLICA_FAILURE,
                        "status": c.get("status"),
                        "lastUpdateTime": c.get("lastTransitionTime"),
                        "lastTransitionTime": c.get("lastTransitionTime"),
                        "reason": c.get("reason", ""),
                        "message": c.get("message", ""),
                    }
                )
        return out

    if new_rs is not None and (found := of(new_rs)):
        return found
    return [c for rs in all_rss if rs is not None for c in of(rs)]


# -- one sync of one deployment ----------------------------------------------------------------


class _Sync:
    """One pass over a deployment; `d` is kept equal to the latest version written."""

    def __init__(self, client: ObjectClient, live: Reader, events: Any, d: Obj) -> None:
        self.client = client
        self.live = live
        self.events = events
        self.d = d
        self.requeue_after: float | None = None

    # writes -----------------------------------------------------------------------------------

    async def update_status(self) -> None:
        """Write the deployment's status (and its revision annotation, which upstream's
        status endpoint accepts)."""
        d = self.d
        wanted = annotations_of(d).get(REVISION_ANNOTATION)
        result: Obj = await self.client.update_status(d)
        if wanted is not None and annotations_of(result).get(REVISION_ANNOTATION) != wanted:
            # The server kept metadata out of the status write: record the revision on the
            # object itself, guarded by the version just written.
            patch = {
                "metadata": {
                    "annotations": {REVISION_ANNOTATION: wanted},
                    "resourceVersion": meta_of(result).get("resourceVersion"),
                }
            }
            result = await self.client.patch(
                DEPLOYMENT, name_of(d), patch, namespace=namespace_of(d)
            )
        replace(d, result)

    def _status_dict(self) -> Obj:
        status = self.d.get("status")
        if not isinstance(status, dict):
            status = self.d["status"] = {}
        return status

    def _set_revision(self, revision: str | None) -> bool:
        if revision is None or annotations_of(self.d).get(REVISION_ANNOTATION) == revision:
            return False
        _annotations(self.d)[REVISION_ANNOTATION] = revision
        return True

    def _event(self, kind: str, reason: str, message: str) -> None:
        self.events.record(self.d, kind, reason, message)

    # ReplicaSets ------------------------------------------------------------------------------

    async def replica_sets(self) -> list[Obj]:
        """The ReplicaSets this deployment controls, adopting and releasing by selector."""
        d = self.d
        selector = spec_of(d).get("selector")
        candidates = await self.client.list(REPLICA_SET, namespace=namespace_of(d))
        return await claim(
            self.client,
            self.live,
            d,
            REPLICA_SET,
            candidates,
            lambda rs: label_selector_matches(selector, labels_of(rs)),
        )

    async def pods_by_rs(self, rss: Sequence[Obj]) -> dict[str, list[Obj]]:
        """The pods of each ReplicaSet (by uid) that the deployment selects."""
        d = self.d
        selector = spec_of(d).get("selector")
        by_uid: dict[str, list[Obj]] = {}
        for rs in rss:
            pods = await pods_controlled_by(self.client, namespace_of(d), uid_of(rs))
            by_uid[uid_of(rs)] = [p for p in pods if label_selector_matches(selector, labels_of(p))]
        return by_uid

    async def all_rss(self, rss: list[Obj], create: bool) -> tuple[Obj | None, list[Obj]]:
        """The new ReplicaSet (created if asked and missing) and all old ones, with the
        revisions synced."""
        existing = find_new_rs(self.d, rss)
        old = _old_rss(rss, existing)
        return await self.new_rs(existing, old, create), old

    async def new_rs(self, existing: Obj | None, old: Sequence[Obj], create: bool) -> Obj | None:
        d = self.d
        revision = str(max((revision_of(rs) for rs in old), default=0) + 1)
        if existing is not None:
            changed = copy.deepcopy(existing)
            annotations_changed = _set_new_rs_annotations(d, changed, revision, True)
            min_ready = spec_of(d).get("minReadySeconds") or 0
            if annotations_changed or (spec_of(changed).get("minReadySeconds") or 0) != min_ready:
                changed["spec"]["minReadySeconds"] = min_ready
                replace(existing, await self.client.update(changed))
                return existing
            needs_update = self._set_revision(annotations_of(existing).get(REVISION_ANNOTATION))
            if _has_progress_deadline(d) and get_condition(status_of(d), PROGRESSING) is None:
                message = f'Found new replica set "{name_of(existing)}"'
                set_condition(
                    self._status_dict(),
                    _condition(PROGRESSING, "True", FOUND_NEW_RS, message, now()),
                )
                needs_update = True
            if needs_update:
                await self.update_status()
            return existing
        if not create:
            return None
        return await self._create_new_rs(old, revision)

    async def _create_new_rs(self, old: Sequence[Obj], revision: str) -> Obj:
        d = self.d
        template = copy.deepcopy(dict(spec_of(d).get("template") or {}))
        hash_value = template_hash(template, status_of(d).get("collisionCount"))
        template_meta = template.setdefault("metadata", {})
        template_meta["labels"] = {**(template_meta.get("labels") or {}), HASH_LABEL: hash_value}
        selector = copy.deepcopy(dict(spec_of(d).get("selector") or {}))
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: hash_value}
        name = f"{name_of(d)}-{hash_value}"
        rs: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": namespace_of(d),
                "labels": dict(template_meta["labels"]),
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": name_of(d),
                        "uid": uid_of(d),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": spec_of(d).get("minReadySeconds") or 0,
                "selector": selector,
                "template": template,
            },
        }
        count = new_rs_replicas(d, [*old, rs], rs)
        rs["spec"]["replicas"] = count
        _set_new_rs_annotations(d, rs, revision, False)
        already_existed = False
        try:
            created: Obj = await self.client.create(rs)
        except AlreadyExists:
            already_existed = True
            # Most likely ours, created by an earlier pass the cache has not shown yet.
            found: Obj = await self.live.get(REPLICA_SET, name, namespace=namespace_of(d))
            ref = controller_ref(found)
            if (
                ref is None
                or ref.get("uid") != uid_of(d)
                or not equal_ignore_hash(
                    spec_of(d).get("template") or {}, spec_of(found).get("template") or {}
                )
            ):
                # Someone else's ReplicaSet has this name: hash again with a new salt.
                status = self._status_dict()
                status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                await self.update_status()
                raise
            created = found
        except ApiError as exc:
            if namespace_terminating(exc):
                raise
            message = f'Failed to create new replica set "{name}": {exc}'
            if _has_progress_deadline(d):
                set_condition(
                    self._status_dict(),
                    _condition(PROGRESSING, "False", FAILED_RS_CREATE, message, now()),
                )
                try:
                    await self.update_status()
                except ApiError:
                    pass  # the creation error is the one worth reporting
            self._event("Warning", FAILED_RS_CREATE, message)
            raise
        if not already_existed and count > 0:
            self._event(
                "Normal", "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {count}"
            )
        needs_update = self._set_revision(revision)
        if not already_existed and _has_progress_deadline(d):
            message = f'Created new replica set "{name}"'
            set_condition(
                self._status_dict(), _condition(PROGRESSING, "True", NEW_RS_CREATED, message, now())
            )
            needs_update = True
        if needs_update:
            await self.update_status()
        return created

    # scaling ----------------------------------------------------------------------------------

    async def scale_rs(self, rs: Obj, replicas: int) -> bool:
        """Resize a ReplicaSet (recording the deployment's size in its annotations)."""
        if _replicas(rs) == replicas:
            return False
        return await self._resize(rs, replicas, "up" if _replicas(rs) < replicas else "down")

    async def _resize(self, rs: Obj, replicas: int, direction: str) -> bool:
        d = self.d
        desired, maximum = _replicas(d), _replicas(d) + max_surge(d)
        resize = _replicas(rs) != replicas
        if not resize and not _replica_annotations_stale(rs, desired, maximum):
            return False
        before = _replicas(rs)
        changed = copy.deepcopy(rs)
        changed["spec"]["replicas"] = replicas
        _set_replica_annotations(changed, desired, maximum)
        replace(rs, await self.client.update(changed))
        if resize:
            self._event(
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {direction} replica set {name_of(rs)} from {before} to {replicas}",
            )
        return resize

    async def scale(self, new_rs: Obj | None, old: list[Obj]) -> None:
        """Bring the ReplicaSets to the deployment's size (proportionally mid-rollout)."""
        d = self.d
        want = _replicas(d)
        latest = _active_or_latest(new_rs, old)
        if latest is not None:
            if _replicas(latest) != want:
                await self.scale_rs(latest, want)
            return
        if _is_saturated(d, new_rs):
            for rs in _active(old):
                await self.scale_rs(rs, 0)
            return
        if not _is_rolling(d):
            return
        active = _active([*old, new_rs])
        allowed = want + max_surge(d) if want > 0 else 0
        to_add = allowed - _spec_total(active)
        direction = ""
        if to_add > 0:
            # Larger first; between equals, newer ones grow first.
            active.sort(key=_creation_key, reverse=True)
            active.sort(key=_replicas, reverse=True)
            direction = "up"
        elif to_add < 0:
            # Larger first; between equals, older ones shrink first.
            active.sort(key=_creation_key)
            active.sort(key=_replicas, reverse=True)
            direction = "down"
        sizes: list[int] = []
        added = 0
        for rs in active:
            if to_add != 0:
                share = _proportion(rs, d, to_add, added)
                sizes.append(_replicas(rs) + share)
                added += share
            else:
                sizes.append(_replicas(rs))
        if active and to_add != 0:
            sizes[0] = max(sizes[0] + to_add - added, 0)
        for rs, size in zip(active, sizes, strict=True):
            await self._resize(rs, size, direction)

    async def cleanup(self, old: Sequence[Obj]) -> None:
        """Delete the oldest scaled-down ReplicaSets beyond revisionHistoryLimit."""
        d = self.d
        limit = spec_of(d).get("revisionHistoryLimit")
        if limit is None or int(limit) == MAX_INT32:
            return
        candidates = [rs for rs in old if not is_deleting(rs)]
        excess = len(candidates) - int(limit)
        if excess <= 0:
            return
        candidates.sort(key=lambda rs: (revision_of(rs), _creation_key(rs)))
        for rs in candidates[:excess]:
            status = status_of(rs)
            if (
                int(status.get("replicas") or 0) != 0
                or _replicas(rs) != 0
                or int(meta_of(rs).get("generation") or 0)
                > int(status.get("observedGeneration") or 0)
            ):
                continue
            try:
                await self.client.delete(REPLICA_SET, name_of(rs), namespace=namespace_of(rs))
            except NotFound:
                pass

    # status -----------------------------------------------------------------------------------

    async def sync_status(self, all_rss: Sequence[Obj | None], new_rs: Obj | None) -> None:
        status = calculate_status(all_rss, new_rs, self.d, now())
        if status != status_of(self.d):
            self.d["status"] = status
            await self.update_status()

    async def sync_rollout_status(self, all_rss: Sequence[Obj | None], new_rs: Obj | None) -> None:
        """The status with the Progressing condition estimated, as upstream's progress.go."""
        d = self.d
        at = now()
        status = calculate_status(all_rss, new_rs, d, at)
        if not _has_progress_deadline(d):
            remove_condition(status, PROGRESSING)
        current = get_condition(status_of(d), PROGRESSING)
        finished = (
            int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0)
            and current is not None
            and current.get("reason") == NEW_RS_AVAILABLE
        )
        if _has_progress_deadline(d) and not finished:
            subject = (
                f'ReplicaSet "{name_of(new_rs)}"'
                if new_rs is not None
                else f'Deployment "{name_of(d)}"'
            )
            if deployment_complete(d, status):
                message = f"{subject} has successfully progressed."
                set_condition(
                    status, _condition(PROGRESSING, "True", NEW_RS_AVAILABLE, message, at)
                )
            elif _progressing(d, status):
                message = f"{subject} is progressing."
                condition = _condition(PROGRESSING, "True", RS_UPDATED, message, at)
                # Progress refreshes lastUpdateTime even when the reason stays the same.
                if current is not None:
                    if current.get("status") == "True":
                        condition["lastTransitionTime"] = current.get("lastTransitionTime")
                    remove_condition(status, PROGRESSING)
                set_condition(status, condition)
            elif _timed_out(d, status, at):
                message = f"{subject} has timed out progressing."
                set_condition(status, _condition(PROGRESSING, "False", TIMED_OUT, message, at))
        failures = _replica_failures(all_rss, new_rs)
        if failures:
            set_condition(status, failures[0])
        else:
            remove_condition(status, REPLICA_FAILURE)
        if status == status_of(d):
            self._requeue_if_stuck(status, at)
            return
        d["status"] = status
        await self.update_status()

    def _requeue_if_stuck(self, status: Mapping[str, Any], at: datetime) -> None:
        """Come back when the progress deadline would pass without any further event."""
        d = self.d
        current = get_condition(status_of(d), PROGRESSING)
        if not _has_progress_deadline(d) or current is None:
            return
        if deployment_complete(d, status) or current.get("reason") == TIMED_OUT:
            return
        since = parse_time_or_none(current.get("lastUpdateTime"))
        if since is None:
            return
        after = since.timestamp() + int(spec_of(d)["progressDeadlineSeconds"]) - at.timestamp()
        self.requeue_after = after + 0.05 if after < 1 else after + 1

    async def check_paused_conditions(self) -> None:
        d = self.d
        if not _has_progress_deadline(d):
            return
        condition = get_condition(status_of(d), PROGRESSING)
        if condition is not None and condition.get("reason") == TIMED_OUT:
            return  # a reported lack of progress is not overwritten
        paused_recorded = condition is not None and condition.get("reason") == PAUSED
        paused = bool(spec_of(d).get("paused"))
        if paused and not paused_recorded:
            new = _condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused", now())
        elif not paused and paused_recorded:
            new = _condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed", now())
        else:
            return
        set_condition(self._status_dict(), new)
        await self.update_status()

    # strategies -------------------------------------------------------------------------------

    async def sync(self, rss: list[Obj]) -> None:
        """Scaling (and a paused deployment's bookkeeping) without rolling anything out."""
        new_rs, old = await self.all_rss(rss, False)
        await self.scale(new_rs, old)
        if spec_of(self.d).get("paused"):
            await self.cleanup(old)
        await self.sync_status([*old, new_rs], new_rs)

    async def is_scaling_event(self, rss: list[Obj]) -> bool:
        """Whether an active ReplicaSet was sized for a different replica count."""
        new_rs, old = await self.all_rss(rss, False)
        want = _replicas(self.d)
        for rs in _active([*old, new_rs]):
            desired = _int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
            if desired is not None and desired != want:
                return True
        return False

    async def rollout_rolling(self, rss: list[Obj]) -> None:
        new_rs, old = await self.all_rss(rss, True)
        assert new_rs is not None
        all_rss: list[Obj] = [*old, new_rs]
        scaled = await self._reconcile_new_rs(all_rss, new_rs) or await self._reconcile_old_rss(
            all_rss, _active(old), new_rs
        )
        # Nothing scaled this time: a finished rollout may drop surplus history.
        if not scaled and deployment_complete(self.d, status_of(self.d)):
            await self.cleanup(old)
        await self.sync_rollout_status(all_rss, new_rs)

    async def _reconcile_new_rs(self, all_rss: Sequence[Obj], new_rs: Obj) -> bool:
        want = _replicas(self.d)
        if _replicas(new_rs) == want:
            return False
        if _replicas(new_rs) > want:
            return await self.scale_rs(new_rs, want)
        return await self.scale_rs(new_rs, new_rs_replicas(self.d, all_rss, new_rs))

    async def _reconcile_old_rss(self, all_rss: Sequence[Obj], old: list[Obj], new_rs: Obj) -> bool:
        d = self.d
        if _spec_total(old) == 0:
            return False
        min_available = _replicas(d) - max_unavailable(d)
        new_unavailable = _replicas(new_rs) - int(status_of(new_rs).get("availableReplicas") or 0)
        max_scale_down = _spec_total(all_rss) - min_available - new_unavailable
        if max_scale_down <= 0:
            return False
        # Unhealthy old pods go first: removing them costs no availability.
        old.sort(key=_creation_key)
        cleaned = 0
        for rs in old:
            if cleaned >= max_scale_down:
                break
            unhealthy = _replicas(rs) - int(status_of(rs).get("availableReplicas") or 0)
            if _replicas(rs) == 0 or unhealthy <= 0:
                continue
            count = min(max_scale_down - cleaned, unhealthy)
            await self.scale_rs(rs, _replicas(rs) - count)
            cleaned += count
        scaled = await self._scale_down_old(old, [*old, new_rs])
        return cleaned + scaled > 0

    async def _scale_down_old(self, old: Sequence[Obj], all_rss: Sequence[Obj]) -> int:
        d = self.d
        min_available = _replicas(d) - max_unavailable(d)
        # A ReplicaSet's pods beyond its size are being deleted, even if its status (written
        # before it saw that) still counts them.
        available = sum(
            min(int(status_of(rs).get("availableReplicas") or 0), _replicas(rs)) for rs in all_rss
        )
        if available <= min_available:
            return 0
        budget = available - min_available
        total = 0
        for rs in sorted(old, key=_creation_key):
            if total >= budget:
                break
            if _replicas(rs) == 0:
                continue
            count = min(_replicas(rs), budget - total)
            await self.scale_rs(rs, _replicas(rs) - count)
            total += count
        return total

    async def rollout_recreate(self, rss: list[Obj]) -> None:
        d = self.d
        new_rs, old = await self.all_rss(rss, False)
        all_rss: list[Obj | None] = [*old, new_rs]
        scaled_down = False
        for rs in _active(old):
            if await self.scale_rs(rs, 0):
                scaled_down = True
        # Old pods go entirely before the new template gets any.
        if scaled_down or await self._old_pods_running(rss, new_rs, old):
            await self.sync_rollout_status(all_rss, new_rs)
            return
        if new_rs is None:
            new_rs, old = await self.all_rss(rss, True)
            all_rss = [*old, new_rs]
        assert new_rs is not None
        await self.scale_rs(new_rs, _replicas(d))
        if deployment_complete(self.d, status_of(self.d)):
            await self.cleanup(old)
        await self.sync_rollout_status(all_rss, new_rs)

    async def _old_pods_running(
        self, rss: Sequence[Obj], new_rs: Obj | None, old: Sequence[Obj]
    ) -> bool:
        if _count(old, "replicas") > 0:
            return True
        new_uid = uid_of(new_rs) if new_rs is not None else None
        for rs_uid, pods in (await self.pods_by_rs(rss)).items():
            if rs_uid == new_uid:
                continue
            for pod in pods:
                if status_of(pod).get("phase") not in ("Succeeded", "Failed"):
                    return True
        return False


# -- the reconciler ----------------------------------------------------------------------------


class DeploymentReconciler(Reconciler):
    """Drives each Deployment through its ReplicaSets (upstream's syncDeployment)."""

    def __init__(self, events: Any, live: Reader) -> None:
        self.events = events
        self.live = live

    async def reconcile(self, request: Request) -> Result | None:
        return await quiet_conflicts(functools.partial(self._sync, request))

    async def _sync(self, request: Request) -> Result | None:
        try:
            d: Obj = await self.client.get(DEPLOYMENT, request.name, namespace=request.namespace)
        except NotFound:
            return None
        run = _Sync(self.client, self.live, self.events, d)
        if spec_of(d).get("selector") == {}:
            self.events.record(
                d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            generation = int(meta_of(d).get("generation") or 0)
            if int(status_of(d).get("observedGeneration") or 0) < generation:
                run._status_dict()["observedGeneration"] = generation
                await run.update_status()
            return None
        rss = await run.replica_sets()
        if is_deleting(d):
            new_rs, old = await run.all_rss(rss, False)
            await run.sync_status([*old, new_rs], new_rs)
            return None
        await run.check_paused_conditions()
        if spec_of(run.d).get("paused") or await run.is_scaling_event(rss):
            await run.sync(rss)
        elif _is_rolling(run.d):
            await run.rollout_rolling(rss)
        else:
            await run.rollout_recreate(rss)
        if run.requeue_after is not None:
            return Result(requeue_after=max(run.requeue_after, 0.05))
        return None


# -- wiring ------------------------------------------------------------------------------------


def _deployment_for_pod(cache: Cache, pod: Mapping[str, Any]) -> list[Request]:
    """A deleted pod's Deployment (through its ReplicaSet): Recreate waits for old pods."""
    ref = controller_ref(pod)
    if ref is None or ref.get("kind") != "ReplicaSet":
        return []
    try:
        rs = cache.get(REPLICA_SET, str(ref.get("name")), namespace=namespace_of(pod))
    except NotFound:
        return []
    return controllers_of(cache, rs, DEPLOYMENT) if controller_ref(rs) is not None else []


def setup(manager: Manager) -> None:
    """Register the Deployment controller with `manager`."""
    cache = manager.cache
    deletes_only = Funcs(on_create=lambda _obj: False, on_update=lambda _old, _new: False)
    (
        manager.controller()
        .named("deployment")
        .for_(DEPLOYMENT)
        .watches(REPLICA_SET, lambda rs: controllers_of(cache, rs, DEPLOYMENT))
        .watches(POD, lambda pod: _deployment_for_pod(cache, pod), predicates=[deletes_only])
        .with_options(max_concurrent_reconciles=5)
        .complete(
            DeploymentReconciler(
                manager.event_recorder("deployment-controller"), live=manager.api_reader
            )
        )
    )
    index_pods_by_controller(manager)
