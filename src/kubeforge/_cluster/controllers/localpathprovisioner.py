"""The dynamic provisioner of the `standard` StorageClass (`local-path-provisioner`), as kind
installs it: rancher's local-path-provisioner, an external provisioner built on
sig-storage-lib-external-provisioner (controller/controller.go), serving the provisioner
name `rancher.io/local-path`.

The class is kind's (pkg/build/nodeimage/const_storage.go, kind v0.32.0): `standard`, the
default class, provisioner `rancher.io/local-path`, WaitForFirstConsumer, reclaim policy
Delete; `install_default_class` creates it when missing.

Provisioning. A claim handed to this provisioner (`volume.kubernetes.io/storage-provisioner:
rancher.io/local-path`, by the binder) whose class names it gets a volume `pvc-<claim uid>`:
a directory `<pv>_<namespace>_<claim>` in the cluster's volume directory (volumedirs.py), a
hostPath PersistentVolume of the claim's size, access modes and class, with the class's
reclaim policy and mount options, `pv.kubernetes.io/provisioned-by`, and a `claimRef` that
pre-binds it to the claim (the binder finishes the binding). A claim of a WaitForFirstConsumer
class waits for `volume.kubernetes.io/selected-node` (the scheduler's choice); its volume is
the node's: node affinity to that node's `kubernetes.io/hostname`, and, as on a node's disk,
ReadWriteOnce or ReadWriteOncePod only and no selector. A claim of an Immediate class is
provisioned at once on storage every node reaches (local-path-provisioner's shared
filesystem mode): no node affinity, any access mode. Events: Provisioning,
ProvisioningSucceeded, ProvisioningFailed.

Deletion. A Released volume this provisioner made, with reclaim policy Delete, loses its
directory and is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    uid_of,
)
from kubeforge._apiserver.admission.volumes import DEFAULT_CLASS_ANNOTATIONS
from kubeforge._client.client import Client
from kubeforge._client.errors import AlreadyExists, NotFound
from kubeforge._cluster.controllers._volumes import (
    BETA_STORAGE_PROVISIONER,
    PROVISIONED_BY,
    PV,
    PVC,
    SELECTED_NODE,
    STORAGE_CLASS,
    STORAGE_PROVISIONER,
    claim_class,
    claim_reference,
    read,
)
from kubeforge._cluster.controllers._writes import quiet_conflicts
from kubeforge._cluster.sandboxpaths import UnsafePath
from kubeforge._cluster.volumedirs import VolumeDirectories
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["DEFAULT_CLASS", "PROVISIONER", "install_default_class", "setup"]

Obj = dict[str, Any]

PROVISIONER = "rancher.io/local-path"
NODE = "v1/Node"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# local-path-provisioner's record of the node a volume lives on ("" when shared).
SELECTED_NODE_OF_VOLUME = "local.path.provisioner/selected-node"
NODE_LOCAL_MODES = ("ReadWriteOnce", "ReadWriteOncePod")
RETRY_SECONDS = 5.0

DEFAULT_CLASS: Obj = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {
        "name": "standard",
        "annotations": {DEFAULT_CLASS_ANNOTATIONS[0]: "true"},
    },
    "provisioner": PROVISIONER,
    "volumeBindingMode": "WaitForFirstConsumer",
    "reclaimPolicy": "Delete",
}


async def install_default_class(client: Client) -> None:
    """Create kind's `standard` StorageClass unless a class of that name exists."""
    try:
        await client.get(STORAGE_CLASS, "standard")
    except NotFound:
        try:
            await client.create(json_copy(DEFAULT_CLASS))  # create() fills in what it gets
        except AlreadyExists:
            pass


def _volume_name(claim: Mapping[str, Any]) -> str:
    return f"pvc-{uid_of(claim)}"


class _Provision(Reconciler):
    """Provisions volumes for the claims handed to this provisioner."""

    def __init__(self, manager: Manager, directories: VolumeDirectories) -> None:
        self.directories = directories
        self.events = manager.event_recorder(PROVISIONER)

    async def reconcile(self, request: Request) -> Result | None:
        try:
            claim: Obj = await self.client.get(PVC, request.name, namespace=request.namespace)
        except NotFound:
            return None
        return await quiet_conflicts(lambda: self._provision(claim))

    async def _provision(self, claim: Obj) -> Result | None:
        cls = await self._class_of(claim)
        if cls is None:
            return None
        node_local = cls.get("volumeBindingMode") == "WaitForFirstConsumer"
        node_name = str(annotations_of(claim).get(SELECTED_NODE) or "")
        if node_local and not node_name:
            return None  # the scheduler has not chosen a node yet
        if await read(self.client, PV, _volume_name(claim)) is not None:
            return None  # provisioned already
        key = f"{namespace_of(claim)}/{name_of(claim)}"
        self.events.record(
            claim,
            "Normal",
            "Provisioning",
            f'External provisioner is provisioning volume for claim "{key}"',
        )
        try:
            volume = await self._volume(claim, cls, node_name if node_local else None)
        except (_Refused, UnsafePath, OSError) as exc:
            note = f'failed to provision volume with StorageClass "{name_of(cls)}": {exc}'
            self.events.record(claim, "Warning", "ProvisioningFailed", note)
            return Result(requeue_after=RETRY_SECONDS)
        try:
            await self.client.create(volume)
        except AlreadyExists:
            return None
        self.events.record(
            claim,
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {name_of(volume)}",
        )
        return None

    async def _class_of(self, claim: Mapping[str, Any]) -> Obj | None:
        """The claim's class when this provisioner is to provision for it (shouldProvision):
        unbound, handed to this provisioner, its class naming it."""
        if spec_of(claim).get("volumeName") or is_deleting(claim):
            return None
        annotations = annotations_of(claim)
        handed = annotations.get(STORAGE_PROVISIONER) or annotations.get(BETA_STORAGE_PROVISIONER)
        if handed != PROVISIONER:
            return None
        cls = await read(self.client, STORAGE_CLASS, claim_class(claim))
        return cls if cls is not None and cls.get("provisioner") == PROVISIONER else None

    async def _volume(self, claim: Obj, cls: Obj, node_name: str | None) -> Obj:
        """The volume for the claim (its directory made first); _Refused when the claim asks
        for what a node's disk cannot give."""
        spec = spec_of(claim)
        affinity = None
        if node_name is not None:
            if spec.get("selector") is not None:
                raise _Refused("claim.Spec.Selector is not supported")
            if any(mode not in NODE_LOCAL_MODES for mode in as_list(spec.get("accessModes"))):
                raise _Refused(
                    "NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes"
                )
            try:
                node: Obj = await self.client.get(NODE, node_name)
            except NotFound:
                raise _Refused(f'nodes "{node_name}" not found') from None
            hostname = labels_of(node).get(HOSTNAME_LABEL) or node_name
            term = {"key": HOSTNAME_LABEL, "operator": "In", "values": [hostname]}
            affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}}
        name = _volume_name(claim)
        path = self.directories.new(f"{name}_{namespace_of(claim)}_{name_of(claim)}")
        requests = as_dict(as_dict(spec.get("resources")).get("requests"))
        volume_spec: Obj = {
            "accessModes": list(as_list(spec.get("accessModes"))),
            "capacity": {"storage": requests.get("storage")},
            "hostPath": {"path": str(path), "type": "DirectoryOrCreate"},
            "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy") or "Delete",
            "storageClassName": name_of(cls),
            "volumeMode": "Filesystem",
            "claimRef": claim_reference(claim),
        }
        if affinity is not None:
            volume_spec["nodeAffinity"] = affinity
        if cls.get("mountOptions"):
            volume_spec["mountOptions"] = list(as_list(cls.get("mountOptions")))
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": name,
                "annotations": {
                    PROVISIONED_BY: PROVISIONER,
                    SELECTED_NODE_OF_VOLUME: node_name or "",
                },
            },
            "spec": volume_spec,
        }


class _Refused(Exception):
    """A claim this provisioner cannot serve."""


class _Delete(Reconciler):
    """Deletes the Released volumes this provisioner made whose policy says Delete."""

    def __init__(self, directories: VolumeDirectories) -> None:
        self.directories = directories

    async def reconcile(self, request: Request) -> Result | None:
        try:
            volume: Obj = await self.client.get(PV, request.name)
        except NotFound:
            return None
        if (
            status_of(volume).get("phase") != "Released"
            or spec_of(volume).get("persistentVolumeReclaimPolicy") != "Delete"
            or annotations_of(volume).get(PROVISIONED_BY) != PROVISIONER
            or is_deleting(volume)
        ):
            return None
        # Nothing outside the cluster's volume directory is ever removed.
        self.directories.remove(str(as_dict(spec_of(volume).get("hostPath")).get("path") or ""))
        try:
            await self.client.delete(PV, name_of(volume), preconditions={"uid": uid_of(volume)})
        except NotFound:
            pass
        return None


def setup(manager: Manager, directories: VolumeDirectories) -> None:
    """Register the provisioner, keeping volumes' data in `directories`, with `manager`."""
    (
        manager.controller()
        .named("local-path-provisioner")
        .for_(PVC)
        .complete(_Provision(manager, directories))
    )
    (
        manager.controller()
        .named("local-path-provisioner-deleter")
        .for_(PV)
        .complete(_Delete(directories))
    )
