"""Volume expansion (persistentvolume-expander-controller): growing a bound claim's volume
when its request grows, simplified from the three parts a cluster splits it into.

1. kube-controller-manager's expand controller (pkg/controller/volume/expand/
   expand_controller.go) finds no in-tree plugin to expand a hostPath volume and says so on
   the claim (ExternalExpanding, from `volume_expand`), leaving it to an external resizer.
2. The external resizer (kubernetes-csi/external-resizer, with RecoverVolumeExpansionFailure
   as 1.33 has it on), here for the volumes `local-path-provisioner` made: it records the
   request in `status.allocatedResources` with `allocatedResourceStatuses.storage:
   ControllerResizeInProgress` and the Resizing condition (event Resizing), grows the
   volume's `spec.capacity`, then, a filesystem volume needing the node's part, marks the
   claim NodeResizePending with the FileSystemResizePending condition (event
   FileSystemResizeRequired).
3. The kubelet (NodeExpandVolume, when the volume is mounted): once a pod using the claim
   runs on a node, the claim's `status.capacity` becomes the new size and the pending marks
   go (event FileSystemResizeSuccessful).

The StorageClass's `allowVolumeExpansion` is the API server's concern (the
PersistentVolumeClaimResize admission); a volume's data is a directory, whose size nothing
limits, so only the objects change.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from kubeforge._api.machinery.access import (
    annotations_of,
    as_dict,
    as_list,
    json_copy,
    namespace_of,
    spec_of,
    status_of,
)
from kubeforge._api.machinery.quantity import decode_quantity
from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._client.errors import NotFound
from kubeforge._cluster.controllers._podstate import is_pod_active
from kubeforge._cluster.controllers._volumes import (
    POD,
    PROVISIONED_BY,
    PV,
    PVC,
    capacity_of,
    claimed_by,
    index_pods_by_claim,
    pod_claim_names,
    pods_using,
    storage_request,
)
from kubeforge._cluster.controllers._writes import quiet_conflicts
from kubeforge._cluster.controllers.localpathprovisioner import PROVISIONER
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["setup"]

Obj = dict[str, Any]

CONTROLLER_RESIZING = "ControllerResizeInProgress"
NODE_RESIZE_PENDING = "NodeResizePending"
RESIZING = "Resizing"
FS_RESIZE_PENDING = "FileSystemResizePending"
WAITING_FOR_POD = (
    "Waiting for user to (re-)start a pod to finish file system resize of volume on node."
)
NO_PLUGIN = (
    "Ignoring the PVC: didn't find a plugin capable of expanding the volume; waiting for an "
    "external controller to process this PVC."
)


def _condition(kind: str, message: str = "") -> Obj:
    condition: Obj = {
        "type": kind,
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": now_rfc3339(),
    }
    if message:
        condition["message"] = message
    return condition


def _status_capacity(claim: Mapping[str, Any]) -> Decimal:
    return decode_quantity(as_dict(status_of(claim).get("capacity")).get("storage")) or Decimal(0)


class _Expander(Reconciler):
    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.expand_events = manager.event_recorder("volume_expand")
        self.resizer_events = manager.event_recorder("external-resizer")
        self.kubelet_events = manager.event_recorder("kubelet")

    async def reconcile(self, request: Request) -> Result | None:
        try:
            claim: Obj = await self.client.get(PVC, request.name, namespace=request.namespace)
        except NotFound:
            return None
        return await quiet_conflicts(lambda: self._sync(claim))

    async def _sync(self, claim: Obj) -> Result | None:
        volume_name = str(spec_of(claim).get("volumeName") or "")
        if status_of(claim).get("phase") != "Bound" or not volume_name:
            return None
        try:
            volume: Obj = await self.client.get(PV, volume_name)
        except NotFound:
            return None
        wanted = storage_request(claim)
        resize = as_dict(status_of(claim).get("allocatedResourceStatuses")).get("storage")
        if resize == NODE_RESIZE_PENDING:
            await self._node_expand(claim, volume)
            return None
        if wanted <= _status_capacity(claim) or wanted <= capacity_of(volume):
            return None
        self.expand_events.record(claim, "Warning", "ExternalExpanding", NO_PLUGIN)
        if annotations_of(volume).get(PROVISIONED_BY) != PROVISIONER:
            return None  # no resizer serves this volume
        await self._controller_expand(claim, volume)
        return None

    async def _write_status(self, claim: Obj, changes: Mapping[str, Any]) -> Obj:
        updated = json_copy(claim)
        status = updated.setdefault("status", {})
        for key, value in changes.items():
            if value is None:
                status.pop(key, None)
            else:
                status[key] = value
        result: Obj = await self.client.update_status(updated)
        return result

    async def _controller_expand(self, claim: Obj, volume: Obj) -> None:
        """The external resizer's part: record the resize, grow the volume, hand over to
        the node."""
        size = as_dict(as_dict(spec_of(claim).get("resources")).get("requests")).get("storage")
        others = [
            c
            for c in as_list(status_of(claim).get("conditions"))
            if as_dict(c).get("type") not in (RESIZING, FS_RESIZE_PENDING)
        ]
        statuses = {**as_dict(status_of(claim).get("allocatedResourceStatuses"))}
        claim = await self._write_status(
            claim,
            {
                "allocatedResources": {"storage": size},
                "allocatedResourceStatuses": {**statuses, "storage": CONTROLLER_RESIZING},
                "conditions": [*others, _condition(RESIZING)],
            },
        )
        name = str(as_dict(volume.get("metadata")).get("name") or "")
        self.resizer_events.record(
            claim, "Normal", "Resizing", f"External resizer is resizing volume {name}"
        )
        grown = json_copy(volume)
        grown["spec"]["capacity"] = {**as_dict(spec_of(volume).get("capacity")), "storage": size}
        await self.client.update(grown)
        await self._write_status(
            claim,
            {
                "allocatedResourceStatuses": {**statuses, "storage": NODE_RESIZE_PENDING},
                "conditions": [*others, _condition(FS_RESIZE_PENDING, WAITING_FOR_POD)],
            },
        )
        self.resizer_events.record(
            claim,
            "Normal",
            "FileSystemResizeRequired",
            "Require file system resize of volume on node",
        )

    async def _node_expand(self, claim: Obj, volume: Obj) -> None:
        """The kubelet's part, once a pod using the claim runs on a node."""
        running = [
            pod
            for pod in pods_using(self.manager, namespace_of(claim), str(claim["metadata"]["name"]))
            if spec_of(pod).get("nodeName")
            and status_of(pod).get("phase") == "Running"
            and is_pod_active(pod)
        ]
        if not running:
            return
        node = str(spec_of(running[0]).get("nodeName"))
        size = as_dict(spec_of(volume).get("capacity")).get("storage")
        statuses = {
            k: v
            for k, v in as_dict(status_of(claim).get("allocatedResourceStatuses")).items()
            if k != "storage"
        }
        conditions = [
            c
            for c in as_list(status_of(claim).get("conditions"))
            if as_dict(c).get("type") not in (RESIZING, FS_RESIZE_PENDING)
        ]
        claim = await self._write_status(
            claim,
            {
                "capacity": {**as_dict(status_of(claim).get("capacity")), "storage": size},
                "allocatedResourceStatuses": statuses or None,
                "conditions": conditions or None,
            },
        )
        name = str(as_dict(volume.get("metadata")).get("name") or "")
        self.kubelet_events.record(
            claim,
            "Normal",
            "FileSystemResizeSuccessful",
            f'MountVolume.NodeExpandVolume succeeded for volume "{name}" {node}',
        )


def _claims_of_running_pod(pod: Mapping[str, Any]) -> list[Request]:
    if status_of(pod).get("phase") != "Running":
        return []
    namespace = namespace_of(pod)
    return [Request(namespace, name) for name in pod_claim_names(pod)]


def setup(manager: Manager) -> None:
    """Register the expander with `manager`."""
    index_pods_by_claim(manager)

    def claim_of_volume(volume: Mapping[str, Any]) -> list[Request]:
        ref = claimed_by(volume)
        return [Request(ref[0], ref[1])] if ref is not None else []

    (
        manager.controller()
        .named("persistentvolume-expander")
        .for_(PVC)
        .watches(PV, claim_of_volume)
        .watches(POD, _claims_of_running_pod)
        .complete(_Expander(manager))
    )
