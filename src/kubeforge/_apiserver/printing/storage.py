"""`kubectl get` columns of storage.k8s.io (StorageClass, CSIDriver, CSINode,
CSIStorageCapacity, VolumeAttachment), as pkg/printers/internalversion/printers.go prints
them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubeforge._api.machinery.access import as_dict, as_list, meta_of, name_of
from kubeforge._apiserver.printing.columns import AGE, NAME, Cells, Column, Obj, Printer, object_age

__all__ = ["PRINTERS"]


def _storage_class_cells(obj: Obj, now: datetime) -> Cells:
    annotations = as_dict(meta_of(obj).get("annotations"))
    name = name_of(obj)
    if (
        annotations.get("storageclass.kubernetes.io/is-default-class") == "true"
        or annotations.get("storageclass.beta.kubernetes.io/is-default-class") == "true"
    ):
        name += " (default)"
    return [
        name,
        str(obj.get("provisioner") or ""),
        obj.get("reclaimPolicy") or "Delete",
        obj.get("volumeBindingMode") or "Immediate",
        bool(obj.get("allowVolumeExpansion")),
        object_age(obj, now),
    ]


def _flag(value: Any, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _csi_driver_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    requests = spec.get("tokenRequests")
    audiences = (
        ",".join(str(as_dict(r).get("audience") or "") for r in requests)
        if isinstance(requests, list)
        else "<unset>"
    )
    modes = ",".join(str(m) for m in as_list(spec.get("volumeLifecycleModes")))
    return [
        name_of(obj),
        _flag(spec.get("attachRequired"), True),
        _flag(spec.get("podInfoOnMount"), False),
        _flag(spec.get("storageCapacity"), False),
        audiences,
        _flag(spec.get("requiresRepublish"), False),
        modes or "<none>",
        object_age(obj, now),
    ]


def _csi_node_cells(obj: Obj, now: datetime) -> Cells:
    drivers = as_list(as_dict(obj.get("spec")).get("drivers"))
    return [name_of(obj), len(drivers), object_age(obj, now)]


def _csi_storage_capacity_cells(obj: Obj, now: datetime) -> Cells:
    capacity = obj.get("capacity")
    return [
        name_of(obj),
        str(obj.get("storageClassName") or ""),
        "<unset>" if capacity is None else str(capacity),
    ]


def _volume_attachment_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    return [
        name_of(obj),
        str(spec.get("attacher") or ""),
        str(as_dict(spec.get("source")).get("persistentVolumeName") or ""),
        str(spec.get("nodeName") or ""),
        bool(as_dict(obj.get("status")).get("attached")),
        object_age(obj, now),
    ]


PRINTERS: dict[tuple[str, str], Printer] = {
    ("storage.k8s.io", "StorageClass"): Printer(
        (
            NAME,
            Column("Provisioner", "string", "The volume plugin provisioning volumes."),
            Column("ReclaimPolicy", "string", "What happens to released volumes."),
            Column("VolumeBindingMode", "string", "When volumes are bound and provisioned."),
            Column("AllowVolumeExpansion", "string", "Whether volumes may grow."),
            AGE,
        ),
        _storage_class_cells,
    ),
    ("storage.k8s.io", "CSIDriver"): Printer(
        (
            NAME,
            Column("AttachRequired", "boolean", "Whether volumes are attached before mounting."),
            Column("PodInfoOnMount", "boolean", "Whether mounts receive the pod's details."),
            Column("StorageCapacity", "boolean", "Whether scheduling checks capacity."),
            Column("TokenRequests", "string", "Audiences of the tokens mounts receive."),
            Column("RequiresRepublish", "boolean", "Whether volumes are mounted again."),
            Column("Modes", "string", "The volume lifecycle modes the driver supports."),
            AGE,
        ),
        _csi_driver_cells,
    ),
    ("storage.k8s.io", "CSINode"): Printer(
        (
            NAME,
            Column("Drivers", "integer", "Number of CSI drivers registered on the node."),
            AGE,
        ),
        _csi_node_cells,
    ),
    ("storage.k8s.io", "CSIStorageCapacity"): Printer(
        (
            NAME,
            Column("StorageClassName", "string", "The storage class the capacity is for."),
            Column("Capacity", "string", "Capacity available for new volumes."),
        ),
        _csi_storage_capacity_cells,
    ),
    ("storage.k8s.io", "VolumeAttachment"): Printer(
        (
            NAME,
            Column("Attacher", "string", "The driver attaching the volume.", format="name"),
            Column("PV", "string", "The persistent volume to attach."),
            Column("Node", "string", "The node the volume is attached to."),
            Column("Attached", "boolean", "Whether the volume is attached."),
            AGE,
        ),
        _volume_attachment_cells,
    ),
}
