"""The scheduler's part in binding volumes, as kube-scheduler's VolumeBinding plugin does it
(pkg/scheduler/framework/plugins/volumebinding/: volume_binding.go, binder.go).

PreFilter: every claim the pod's volumes name must exist, not be Lost, not be being deleted,
and every claim of an Immediate class (or naming its volume) must be bound already; else the
pod is unschedulable on every node with upstream's message (`persistentvolumeclaim "data"
not found`, `pod has unbound immediate PersistentVolumeClaims`).

Filter, per node: a bound claim's volume must exist and its node affinity admit the node; a
WaitForFirstConsumer claim that names no volume must find a node-compatible Available volume
(the smallest that fits, each volume for one claim), or else be provisionable there (its
class has a provisioner other than `kubernetes.io/no-provisioner`, whose allowed topologies
admit the node), or, when the scheduler chose a node for it earlier
(`volume.kubernetes.io/selected-node`), be on that node.

Binding, once a node is chosen (Reserve and PreBind): the volumes chosen are pre-bound to
their claims (`claimRef`, `pv.kubernetes.io/bound-by-controller`) and the claims to provision
get `volume.kubernetes.io/selected-node`; the pod is bound to the node only when every claim
is bound (the binder, the provisioner) -- upstream waits in PreBind, this scheduler keeps the
node for the pod and comes back when its claims change, for at most 600 s
(bindTimeoutSeconds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeforge._api.machinery.access import (
    annotations_of,
    as_dict,
    as_list,
    is_deleting,
    json_copy,
    labels_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
)
from kubeforge._api.machinery.selectors import requirement_matches
from kubeforge._client.errors import NotFound
from kubeforge._client.protocols import ObjectClient
from kubeforge._cluster.controllers._volumes import (
    BOUND_BY_CONTROLLER,
    NO_PROVISIONER,
    PV,
    PVC,
    SELECTED_NODE,
    STORAGE_CLASS,
    claim_class,
    claim_reference,
    claimed_by,
    find_matching_volume,
    is_bound_to,
    is_fully_bound,
    pod_claim_names,
    read,
    storage_request,
    volume_fits_node,
)

__all__ = [
    "BIND_TIMEOUT_SECONDS",
    "BindingPlan",
    "ClaimsOfPod",
    "VolumeBinding",
]

Obj = dict[str, Any]

BIND_TIMEOUT_SECONDS = 600.0
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# Filter reasons (binder.go's ErrReason...).
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NODE_CONFLICT = "node(s) had volume node affinity conflict"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


@dataclass
class ClaimsOfPod:
    """A pod's claims after PreFilter: bound ones with their volumes (None: missing), and
    the WaitForFirstConsumer ones the scheduler is to bind."""

    bound: list[tuple[Obj, Obj | None]] = field(default_factory=list)
    delayed: list[Obj] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.bound and not self.delayed


@dataclass
class BindingPlan:
    """What binding the pod's claims on one node takes: volumes to pre-bind to claims, and
    claims to provision there."""

    static: list[tuple[Obj, Obj]] = field(default_factory=list)
    provision: list[Obj] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.static and not self.provision


def _topology_admits(cls: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """MatchTopologySelectorTerms: no allowed topologies, or one term all of whose label
    expressions the node's labels satisfy."""
    terms = as_list(cls.get("allowedTopologies"))
    if not terms:
        return True
    labels = labels_of(node)
    for term in terms:
        expressions = as_list(as_dict(term).get("matchLabelExpressions"))
        if all(
            requirement_matches(
                {"key": e.get("key"), "operator": "In", "values": e.get("values") or []}, labels
            )
            for e in expressions
        ):
            return True
    return False


class VolumeBinding:
    """Reads what binding needs from the scheduler's cache and makes its writes."""

    def __init__(self, client: ObjectClient) -> None:
        self.client = client

    async def _class(self, name: str) -> Obj | None:
        return await read(self.client, STORAGE_CLASS, name)

    async def prefilter(self, pod: Mapping[str, Any]) -> tuple[ClaimsOfPod, str]:
        """The pod's claims, and why no node can take the pod ("" when some may)."""
        claims = ClaimsOfPod()
        namespace = namespace_of(pod)
        found: list[Obj] = []
        for name in pod_claim_names(pod):
            try:
                claim: Obj = await self.client.get(PVC, name, namespace=namespace)
            except NotFound:
                return claims, f'persistentvolumeclaim "{name}" not found'
            if status_of(claim).get("phase") == "Lost":
                lost = spec_of(claim).get("volumeName") or ""
                return claims, (
                    f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                    f'"{lost}"'
                )
            if is_deleting(claim):
                return claims, f'persistentvolumeclaim "{name}" is being deleted'
            found.append(claim)
        immediate = False
        for claim in found:
            if is_fully_bound(claim):
                volume = await read(self.client, PV, spec_of(claim)["volumeName"])
                claims.bound.append((claim, volume))
                continue
            cls = await self._class(claim_class(claim))
            delayed = cls is not None and cls.get("volumeBindingMode") == "WaitForFirstConsumer"
            if delayed and not spec_of(claim).get("volumeName"):
                claims.delayed.append(claim)
            else:
                immediate = True
        return claims, UNBOUND_IMMEDIATE if immediate else ""

    async def filter(
        self, claims: ClaimsOfPod, node: Mapping[str, Any], volumes: Sequence[Mapping[str, Any]]
    ) -> tuple[list[str], BindingPlan]:
        """Why the pod's claims rule the node out (FindPodVolumes: empty when they do not),
        and what binding them there takes."""
        reasons: list[str] = []
        plan = BindingPlan()
        for _, volume in claims.bound:
            if volume is None:
                if PV_NOT_EXIST not in reasons:
                    reasons.append(PV_NOT_EXIST)
            elif not volume_fits_node(volume, node) and NODE_CONFLICT not in reasons:
                reasons.insert(0, NODE_CONFLICT)
        to_match: list[Obj] = []
        to_provision: list[Obj] = []
        for claim in claims.delayed:
            chosen = annotations_of(claim).get(SELECTED_NODE)
            if chosen is None:
                to_match.append(claim)
            elif chosen != name_of(node):
                return [*reasons, BIND_CONFLICT], plan
            else:
                to_provision.append(claim)
        satisfied = True
        taken: set[str] = set()
        # The smallest claims first, so each finds the smallest volume that fits.
        for claim in sorted(to_match, key=storage_request):
            match = find_matching_volume(claim, volumes, node=node, excluded=taken)
            if match is None:
                to_provision.append(claim)
                continue
            taken.add(name_of(match))
            plan.static.append((claim, json_copy(match)))
        for claim in to_provision:
            cls = await self._class(claim_class(claim))
            provisioner = str((cls or {}).get("provisioner") or "")
            if (
                cls is None
                or provisioner in ("", NO_PROVISIONER)
                or not _topology_admits(cls, node)
            ):
                satisfied = False
                break
            plan.provision.append(claim)
        if not satisfied:
            reasons.append(BIND_CONFLICT)
        return reasons, plan

    async def bind(self, plan: BindingPlan, node_name: str) -> None:
        """Pre-bind the chosen volumes and ask for the rest to be provisioned on the node
        (bindAPIUpdate)."""
        for claim, volume in plan.static:
            ref = claimed_by(volume)
            if ref is not None and ref[2] and is_bound_to(volume, claim):
                continue  # bound already
            if not is_bound_to(volume, claim):
                volume["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"
            volume["spec"]["claimRef"] = claim_reference(claim)
            await self.client.update(volume)
        for claim in plan.provision:
            if annotations_of(claim).get(SELECTED_NODE) == node_name:
                continue
            updated = json_copy(claim)
            updated["metadata"].setdefault("annotations", {})[SELECTED_NODE] = node_name
            await self.client.update(updated)

    async def check(self, pod: Mapping[str, Any], plan: BindingPlan, node: Obj) -> str | None:
        """Whether the pod's claims are bound (checkBindings): None while they are not yet,
        "" once they all are, or why binding failed and scheduling starts over."""
        namespace = namespace_of(pod)
        for claim_name in pod_claim_names(pod):
            try:
                claim: Obj = await self.client.get(PVC, claim_name, namespace=namespace)
            except NotFound:
                return f'persistentvolumeclaim "{claim_name}" not found'
            if not is_fully_bound(claim):
                if any(name_of(c) == claim_name for c in plan.provision) and (
                    annotations_of(claim).get(SELECTED_NODE) != name_of(node)
                ):
                    return f'provisioning failed for PVC "{claim_name}"'
                return None
            volume = await read(self.client, PV, spec_of(claim)["volumeName"])
            if volume is None:
                return None  # not seen yet
            if not volume_fits_node(volume, node):
                return f'pv "{name_of(volume)}" node affinity doesn\'t match node "{name_of(node)}"'
        return ""
