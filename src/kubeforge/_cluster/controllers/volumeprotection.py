"""The storage protection controllers: a claim in use by a pod, and a volume bound to a
claim, are not removed until that ends.

- pvc-protection (persistentvolumeclaim-protection-controller, pkg/controller/volume/
  pvcprotection/pvc_protection_controller.go): a claim being deleted keeps its
  `kubernetes.io/pvc-protection` finalizer while a pod scheduled to a node names it in its
  volumes (whatever that pod's phase: the pod object must be gone); the cache's answer that
  none does is confirmed by a live list of the namespace's pods before the finalizer goes.
- pv-protection (persistentvolume-protection-controller, pkg/controller/volume/pvprotection/
  pv_protection_controller.go): a volume being deleted keeps `kubernetes.io/pv-protection`
  while its phase is Bound.

Both add their finalizer to a live object that lacks it (one created before the admission
plugin that adds it was on).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeforge._api.machinery.access import (
    is_deleting,
    json_copy,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
)
from kubeforge._apiserver.admission.volumes import PV_PROTECTION, PVC_PROTECTION
from kubeforge._client.errors import NotFound
from kubeforge._cluster.controllers._podstate import is_pod_terminal
from kubeforge._cluster.controllers._volumes import (
    POD,
    PV,
    PVC,
    index_pods_by_claim,
    pod_claim_names,
    pods_using,
)
from kubeforge._cluster.controllers._writes import quiet_conflicts
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["setup_pv_protection", "setup_pvc_protection"]

Obj = dict[str, Any]


def _uses(pod: Mapping[str, Any], claim: str) -> bool:
    """podUsesPVC: a pod on a node uses the claims its volumes name."""
    return bool(spec_of(pod).get("nodeName")) and claim in pod_claim_names(pod)


async def _set_finalizer(
    reconciler: Reconciler, obj: Mapping[str, Any], finalizer: str, present: bool
) -> None:
    updated = json_copy(obj)
    finalizers = [f for f in meta_of(updated).get("finalizers") or () if f != finalizer]
    if present:
        finalizers.append(finalizer)
    updated["metadata"]["finalizers"] = finalizers
    await reconciler.client.update(updated)


class _ClaimProtection(Reconciler):
    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    async def reconcile(self, request: Request) -> Result | None:
        try:
            claim: Obj = await self.client.get(PVC, request.name, namespace=request.namespace)
        except NotFound:
            return None
        return await quiet_conflicts(lambda: self._sync(claim))

    async def _sync(self, claim: Obj) -> Result | None:
        finalizers = meta_of(claim).get("finalizers") or ()
        if is_deleting(claim):
            if PVC_PROTECTION in finalizers and not await self._in_use(claim):
                await _set_finalizer(self, claim, PVC_PROTECTION, present=False)
        elif PVC_PROTECTION not in finalizers:
            await _set_finalizer(self, claim, PVC_PROTECTION, present=True)
        return None

    async def _in_use(self, claim: Mapping[str, Any]) -> bool:
        namespace, name = namespace_of(claim), name_of(claim)
        if any(_uses(pod, name) for pod in pods_using(self.manager, namespace, name)):
            return True
        # The cache may not have seen a new pod yet: ask the server before letting go.
        pods = await self.manager.api_reader.list(POD, namespace=namespace)
        return any(_uses(pod, name) for pod in pods)


class _VolumeProtection(Reconciler):
    async def reconcile(self, request: Request) -> Result | None:
        try:
            volume: Obj = await self.client.get(PV, request.name)
        except NotFound:
            return None
        return await quiet_conflicts(lambda: self._sync(volume))

    async def _sync(self, volume: Obj) -> Result | None:
        finalizers = meta_of(volume).get("finalizers") or ()
        if is_deleting(volume):
            if PV_PROTECTION in finalizers and status_of(volume).get("phase") != "Bound":
                await _set_finalizer(self, volume, PV_PROTECTION, present=False)
        elif PV_PROTECTION not in finalizers:
            await _set_finalizer(self, volume, PV_PROTECTION, present=True)
        return None


def _claims_freed_by(pod: Mapping[str, Any]) -> list[Request]:
    """The claims a pod may have been holding, once it is finished, unscheduled or gone
    (a running pod's events free nothing)."""
    if spec_of(pod).get("nodeName") and not is_pod_terminal(pod) and not is_deleting(pod):
        return []
    namespace = namespace_of(pod)
    return [Request(namespace, name) for name in pod_claim_names(pod)]


class _PodGone:
    """Pod events that may free claims: any event of a pod not running on a node, and the
    deletion of every pod."""

    def create(self, obj: Mapping[str, Any], queue: Any, initial: bool) -> None:
        for request in _claims_freed_by(obj):
            queue.add(request)

    def update(self, old: Mapping[str, Any], new: Mapping[str, Any], queue: Any) -> None:
        for request in _claims_freed_by(new):
            queue.add(request)

    def delete(self, obj: Mapping[str, Any], queue: Any) -> None:
        namespace = namespace_of(obj)
        for name in pod_claim_names(obj):
            queue.add(Request(namespace, name))


def setup_pvc_protection(manager: Manager) -> None:
    """Register the claim protection controller with `manager`."""
    index_pods_by_claim(manager)
    (
        manager.controller()
        .named("pvc-protection")
        .for_(PVC)
        .watches(POD, _PodGone())
        .complete(_ClaimProtection(manager))
    )


def setup_pv_protection(manager: Manager) -> None:
    """Register the volume protection controller with `manager`."""
    manager.controller().named("pv-protection").for_(PV).complete(_VolumeProtection())
