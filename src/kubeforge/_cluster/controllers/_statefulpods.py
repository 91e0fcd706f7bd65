"""A StatefulSet's pods and claims: their stable identities and the owner references the
claims carry, as pkg/controller/statefulset/stateful_set_utils.go defines them.

Pod `<set>-<ordinal>` has hostname `<set>-<ordinal>`, subdomain `spec.serviceName`, the
labels `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and
`controller-revision-hash` (the revision it was made from), and for each volume claim
template a volume of the claim `<template>-<set>-<ordinal>`. Claims carry owner references
after `persistentVolumeClaimRetentionPolicy`: none for Retain/Retain; the set for
`whenDeleted: Delete`; the pod for `whenScaled: Delete` once the pod is beyond the replicas
(so the garbage collector deletes the claim with the set, or with the scaled-down pod).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubeforge._api.machinery.access import (
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    uid_of,
)
from kubeforge._cluster.controllers._children import pod_from_template
from kubeforge._cluster.controllers._claiming import owner_reference
from kubeforge._cluster.controllers._podstate import is_pod_available, is_pod_ready

__all__ = [
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "REVISION_LABEL",
    "claim_name",
    "claim_owner_references",
    "claim_owners_up_to_date",
    "claims_for",
    "end_ordinal",
    "has_stale_owner_ref",
    "identity_matches",
    "in_ordinal_range",
    "is_created",
    "is_member",
    "is_running_and_ready",
    "is_unavailable",
    "ordinal_of",
    "pod_revision",
    "replicas_of",
    "retention_policy",
    "start_ordinal",
    "storage_matches",
    "update_identity",
    "update_storage",
    "versioned_pod",
]

Obj = dict[str, Any]

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
# apps.ControllerRevisionHashLabelKey: the revision a pod was made from.
REVISION_LABEL = "controller-revision-hash"
RETAIN = "Retain"
DELETE = "Delete"

_STATEFUL_POD = re.compile(r"(.*)-([0-9]+)$")
_INT32_MAX = 2**31 - 1


# -- names and ordinals ------------------------------------------------------------------------


def _parent_and_ordinal(pod: Mapping[str, Any]) -> tuple[str, int]:
    match = _STATEFUL_POD.match(name_of(pod))
    if match is None:
        return "", -1
    ordinal = int(match.group(2))
    return match.group(1), ordinal if ordinal <= _INT32_MAX else -1


def ordinal_of(pod: Mapping[str, Any]) -> int:
    """The ordinal in a pod's name (`web-3`: 3); -1 when it has none."""
    return _parent_and_ordinal(pod)[1]


def is_member(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Whether the pod's name says it belongs to the set."""
    return _parent_and_ordinal(pod)[0] == name_of(sts)


def replicas_of(sts: Mapping[str, Any]) -> int:
    value = spec_of(sts).get("replicas")
    return 1 if value is None else int(value)


def start_ordinal(sts: Mapping[str, Any]) -> int:
    """`spec.ordinals.start` (0 without it)."""
    return int((spec_of(sts).get("ordinals") or {}).get("start") or 0)


def end_ordinal(sts: Mapping[str, Any]) -> int:
    """The last ordinal the set runs (inclusive)."""
    return start_ordinal(sts) + replicas_of(sts) - 1


def in_ordinal_range(pod: Mapping[str, Any], sts: Mapping[str, Any]) -> bool:
    return start_ordinal(sts) <= ordinal_of(pod) <= end_ordinal(sts)


def _pod_name(sts: Mapping[str, Any], ordinal: int) -> str:
    return f"{name_of(sts)}-{ordinal}"


def claim_name(sts: Mapping[str, Any], template: Mapping[str, Any], ordinal: int) -> str:
    """`<template>-<set>-<ordinal>`."""
    return f"{name_of(template)}-{name_of(sts)}-{ordinal}"


def pod_revision(pod: Mapping[str, Any]) -> str:
    return str(labels_of(pod).get(REVISION_LABEL) or "")


# -- pod state ---------------------------------------------------------------------------------


def is_created(pod: Mapping[str, Any]) -> bool:
    """Whether the pod exists on the server (a new one has no phase yet)."""
    return bool(status_of(pod).get("phase"))


def is_running_and_ready(pod: Mapping[str, Any]) -> bool:
    return status_of(pod).get("phase") == "Running" and is_pod_ready(pod)


def is_unavailable(pod: Mapping[str, Any], min_ready_seconds: int, at: datetime) -> bool:
    """Not available (ready for minReadySeconds), or being deleted."""
    return not is_pod_available(pod, min_ready_seconds, at) or bool(
        meta_of(pod).get("deletionTimestamp")
    )


# -- identity and storage ----------------------------------------------------------------------


def _claim_templates(sts: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [t for t in spec_of(sts).get("volumeClaimTemplates") or () if isinstance(t, Mapping)]


def identity_matches(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    parent, ordinal = _parent_and_ordinal(pod)
    return (
        ordinal >= 0
        and parent == name_of(sts)
        and name_of(pod) == _pod_name(sts, ordinal)
        and namespace_of(pod) == namespace_of(sts)
        and labels_of(pod).get(POD_NAME_LABEL) == name_of(pod)
    )


def storage_matches(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Whether the pod mounts each claim of its ordinal under its template's name."""
    ordinal = ordinal_of(pod)
    if ordinal < 0:
        return False
    volumes = {str(v.get("name")): v for v in spec_of(pod).get("volumes") or ()}
    for template in _claim_templates(sts):
        source = (volumes.get(name_of(template)) or {}).get("persistentVolumeClaim") or {}
        if source.get("claimName") != claim_name(sts, template, ordinal):
            return False
    return True


def claims_for(sts: Mapping[str, Any], ordinal: int) -> dict[str, Obj]:
    """The claims of an ordinal by template name, labelled with the template's labels and
    the selector's matchLabels (getPersistentVolumeClaims)."""
    match_labels = (spec_of(sts).get("selector") or {}).get("matchLabels") or {}
    claims = {}
    for template in _claim_templates(sts):
        meta = dict(meta_of(template))
        meta["name"] = claim_name(sts, template, ordinal)
        meta["namespace"] = namespace_of(sts)
        meta["labels"] = {**(meta.get("labels") or {}), **match_labels}
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta,
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        claims[name_of(template)] = claim
    return claims


def update_storage(sts: Mapping[str, Any], pod: Obj) -> None:
    """Mount the ordinal's claims, replacing volumes of the same names."""
    claims = claims_for(sts, ordinal_of(pod))
    volumes: list[Obj] = [
        {"name": name, "persistentVolumeClaim": {"claimName": name_of(claim)}}
        for name, claim in claims.items()
    ]
    spec = pod.setdefault("spec", {})
    volumes += [v for v in spec.get("volumes") or () if v.get("name") not in claims]
    spec["volumes"] = volumes


def update_identity(sts: Mapping[str, Any], pod: Obj) -> None:
    """The pod's name, namespace and identity labels, as its ordinal makes them."""
    ordinal = ordinal_of(pod)
    meta = pod.setdefault("metadata", {})
    meta["name"] = _pod_name(sts, ordinal)
    meta["namespace"] = namespace_of(sts)
    labels = meta.get("labels")
    if not isinstance(labels, dict):
        labels = meta["labels"] = {}
    labels[POD_NAME_LABEL] = meta["name"]
    labels[POD_INDEX_LABEL] = str(ordinal)


def _new_pod(sts: Mapping[str, Any], ordinal: int) -> Obj:
    template = copy.deepcopy(dict(spec_of(sts).get("template") or {}))
    pod = pod_from_template(template, sts, name=_pod_name(sts, ordinal))
    meta = pod["metadata"]
    update_identity(sts, pod)
    # Set once, at creation: a pod's hostname and subdomain cannot change.
    pod["spec"]["hostname"] = meta["name"]
    service = spec_of(sts).get("serviceName")
    if service:
        pod["spec"]["subdomain"] = service
    update_storage(sts, pod)
    return pod


def versioned_pod(
    current_set: Mapping[str, Any],
    update_set: Mapping[str, Any],
    current_revision: str,
    update_revision: str,
    ordinal: int,
) -> Obj:
    """A new pod for `ordinal`, from the current revision below the partition of a rolling
    update, from the update revision otherwise (newVersionedStatefulSetPod)."""
    strategy = spec_of(current_set).get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate")
    start = start_ordinal(current_set)
    current_replicas = int(status_of(current_set).get("currentReplicas") or 0)
    # Go's precedence: (RollingUpdate && no rollingUpdate && below currentReplicas) or
    # (rollingUpdate && below the partition).
    if (
        strategy.get("type") == "RollingUpdate"
        and rolling is None
        and ordinal < start + current_replicas
    ) or (rolling is not None and ordinal < start + int(rolling.get("partition") or 0)):
        pod = _new_pod(current_set, ordinal)
        pod["metadata"]["labels"][REVISION_LABEL] = current_revision
        return pod
    pod = _new_pod(update_set, ordinal)
    pod["metadata"]["labels"][REVISION_LABEL] = update_revision
    return pod


# -- claims' owners ----------------------------------------------------------------------------


def retention_policy(sts: Mapping[str, Any]) -> tuple[str, str]:
    """(whenDeleted, whenScaled), Retain when unset."""
    policy = spec_of(sts).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(policy.get("whenDeleted") or RETAIN), str(policy.get("whenScaled") or RETAIN)


def _refs(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in meta_of(claim).get("ownerReferences") or () if isinstance(r, Mapping)]


def _refers_to(ref: Mapping[str, Any], obj: Mapping[str, Any], api_version: str, kind: str) -> bool:
    return (
        ref.get("apiVersion") == api_version
        and ref.get("kind") == kind
        and ref.get("name") == name_of(obj)
    )


def _set_ref(ref: Mapping[str, Any], sts: Mapping[str, Any]) -> bool:
    return _refers_to(ref, sts, "apps/v1", "StatefulSet")


def _pod_ref(ref: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    return _refers_to(ref, pod, "v1", "Pod")


def has_stale_owner_ref(claim: Mapping[str, Any], obj: Mapping[str, Any], kind: str) -> bool:
    """Whether the claim refers to `obj` ("StatefulSet" or "Pod") by name with another uid:
    a predecessor of that name owns it."""
    matches = _set_ref if kind == "StatefulSet" else _pod_ref
    for ref in _refs(claim):
        if matches(ref, obj):
            return ref.get("uid") != uid_of(obj)
    return False


def _has_owner(claim: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = uid_of(owner)
    return any(ref.get("uid") == uid for ref in _refs(claim))


def _unexpected_controller(
    claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]
) -> bool:
    """Whether, under a deleting policy, someone other than the set or pod controls the
    claim (or the set's or pod's reference has a stale uid)."""
    if retention_policy(sts) == (RETAIN, RETAIN):
        return False
    for ref in _refs(claim):
        if _set_ref(ref, sts):
            if ref.get("uid") != uid_of(sts):
                return True
            continue
        if _pod_ref(ref, pod):
            if ref.get("uid") != uid_of(pod):
                return True
            continue
        if ref.get("controller"):
            return True
    return False


def claim_owners_up_to_date(
    claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]
) -> bool:
    """Whether the claim's owner references follow the retention policy
    (isClaimOwnerUpToDate); claims of predecessors or of other controllers are left alone."""
    if has_stale_owner_ref(claim, sts, "StatefulSet") or has_stale_owner_ref(claim, pod, "Pod"):
        return True
    if _unexpected_controller(claim, sts, pod):
        return not (_has_owner(claim, sts) or _has_owner(claim, pod))
    for ref in _refs(claim):
        if ref.get("uid") in (uid_of(sts), uid_of(pod)) and not ref.get("controller"):
            return False
    when_deleted, when_scaled = retention_policy(sts)
    on_set, on_pod = _has_owner(claim, sts), _has_owner(claim, pod)
    scaled_down = not in_ordinal_range(pod, sts)
    if when_scaled == DELETE and when_deleted == DELETE:
        return on_set != scaled_down and on_pod == scaled_down
    if when_scaled == DELETE:
        return not on_set and on_pod == scaled_down
    if when_deleted == DELETE:
        return on_set and not on_pod
    return not on_set and not on_pod


def claim_owner_references(
    claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]
) -> list[Obj]:
    """The claim's owner references as the retention policy wants them
    (updateClaimOwnerRefForSetAndPod): the set's and pod's replaced, others kept."""
    unexpected = _unexpected_controller(claim, sts, pod)
    refs = [dict(r) for r in _refs(claim) if not (_set_ref(r, sts) or _pod_ref(r, pod))]
    if unexpected:
        return refs
    when_deleted, when_scaled = retention_policy(sts)
    scaled_down = not in_ordinal_range(pod, sts)
    wanted = []
    if when_deleted == DELETE and not (when_scaled == DELETE and scaled_down):
        wanted.append({**owner_reference(sts), "apiVersion": "apps/v1", "kind": "StatefulSet"})
    if when_scaled == DELETE and scaled_down:
        wanted.append({**owner_reference(pod), "apiVersion": "v1", "kind": "Pod"})
    for ref in wanted:
        if not any(r.get("uid") == ref["uid"] for r in refs):
            refs.append(ref)
    return refs
