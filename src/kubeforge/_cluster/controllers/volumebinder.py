"""The PersistentVolume binder (persistentvolume-binder-controller): binds claims to volumes,
asks provisioners for new ones, and reclaims the volumes of deleted claims, as
pkg/controller/volume/persistentvolume/pv_controller.go does.

Claims. A claim not yet bound (no `pv.kubernetes.io/bind-completed`) is bound to the volume
pre-bound to it, else to the smallest Available volume of its class that is big enough and
offers its access modes and matches its selector. A claim of a WaitForFirstConsumer class
waits for the scheduler: it gets a pre-bound volume only (the scheduler pre-binds the one it
chose, or sets `volume.kubernetes.io/selected-node` for provisioning). Without a match, a
claim with no class at all gets the default class (1.28's retroactive assignment); one of a
class is handed to the class's provisioner (`volume.kubernetes.io/storage-provisioner` and
the beta annotation, an ExternalProvisioning event); every provisioner here is external, so
an in-tree `kubernetes.io/...` name gets a ProvisioningFailed event. Binding writes the
volume's `claimRef` (and `pv.kubernetes.io/bound-by-controller` when the binder chose the
volume), the volume's phase Bound, the claim's `volumeName` and annotations, then the claim's
phase Bound with the volume's access modes and capacity. A bound claim whose volume is gone
becomes Lost.

Volumes. A volume without a claim is Available; one whose claim is gone (or is another claim
of the same name now) becomes Released and its reclaim policy runs: Retain keeps it, Delete
leaves it to the provisioner that made it (`pv.kubernetes.io/provisioned-by`) -- a volume no
provisioner made cannot be deleted here (Failed, VolumeFailedDelete) -- and Recycle, which
needs a recycler pod, fails (VolumeFailedRecycle). A volume bound by the controller to a claim
that took another volume is released again.

Claims and volumes are synced again every 15 s while pending, as the controller's resync
does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from kubeforge._api.machinery.access import (
    annotations_of,
    as_dict,
    as_list,
    is_deleting,
    json_copy,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    uid_of,
)
from kubeforge._apiserver.admission.volumes import default_class
from kubeforge._client.errors import NotFound
from kubeforge._cluster.controllers._volumes import (
    BETA_STORAGE_PROVISIONER,
    BIND_COMPLETED,
    BOUND_BY_CONTROLLER,
    PROVISIONED_BY,
    PV,
    PVC,
    SELECTED_NODE,
    STORAGE_CLASS,
    STORAGE_PROVISIONER,
    access_modes_fit,
    capacity_of,
    claim_class,
    claim_reference,
    claimed_by,
    find_matching_volume,
    is_bound_to,
    read,
    storage_request,
)
from kubeforge._cluster.controllers._writes import quiet_conflicts
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["EVENT_SOURCE", "Binder", "setup"]

Obj = dict[str, Any]
EventType = Literal["Normal", "Warning"]

# The name the controller's events report (kube-controller-manager's event source for it).
EVENT_SOURCE = "persistentvolume-controller"
RESYNC_SECONDS = 15.0
# Volumes indexed by the claim their claimRef names: `<namespace>/<name>`.
CLAIM_REF_INDEX = "kubeforge.dev/claim-ref"

LOST_VOLUME = "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
MISBOUND = "Two claims are bound to the same volume, this one is bound incorrectly"
WAITING_FOR_CONSUMER = "waiting for first consumer to be created before binding"
NO_CLASS = "no persistent volumes available for this claim and no storage class is set"
EXTERNAL = (
    "Waiting for a volume to be created either by the external provisioner '{}' or manually "
    "by the system administrator. If volume creation is delayed, please verify that the "
    "provisioner is running and correctly registered."
)


def _claim_ref_keys(volume: Mapping[str, Any]) -> list[str]:
    ref = claimed_by(volume)
    return [f"{ref[0]}/{ref[1]}"] if ref is not None else []


def _volume_mode(obj: Mapping[str, Any]) -> str:
    return str(spec_of(obj).get("volumeMode") or "Filesystem")


class Binder:
    """The controller's state and its two syncs (syncClaim, syncVolume)."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.client = manager.client
        self.live = manager.api_reader
        self.events = manager.event_recorder(EVENT_SOURCE)

    def _event(self, obj: Mapping[str, Any], kind: EventType, reason: str, note: str) -> None:
        self.events.record(obj, kind, reason, note)

    async def _class(self, name: str) -> Obj | None:
        return await read(self.client, STORAGE_CLASS, name)

    async def _delay_binding(self, claim: Mapping[str, Any]) -> bool:
        """Whether the claim's class binds only once a pod uses it (IsDelayBindingMode)."""
        cls = await self._class(claim_class(claim))
        return cls is not None and cls.get("volumeBindingMode") == "WaitForFirstConsumer"

    async def _volume(self, name: str) -> Obj | None:
        return await read(self.client, PV, name)

    # claims ---------------------------------------------------------------------------------

    async def sync_claim(self, claim: Obj) -> Result | None:
        if BIND_COMPLETED not in annotations_of(claim):
            return await self._sync_unbound(claim)
        await self._sync_bound(claim)
        return None

    async def _sync_unbound(self, claim: Obj) -> Result | None:
        wanted = str(spec_of(claim).get("volumeName") or "")
        if not wanted:
            delay = await self._delay_binding(claim)
            volumes = list(await self.client.list(PV))
            volume = find_matching_volume(claim, volumes, delay_binding=delay)
            if volume is not None:
                await self._bind(json_copy(volume), claim)
                return None
            if await self._assign_default_class(claim):
                return None  # the update brings the claim back with its class
            if delay and SELECTED_NODE not in annotations_of(claim):
                self._event(claim, "Normal", "WaitForFirstConsumer", WAITING_FOR_CONSUMER)
            elif claim_class(claim):
                await self._provision(claim)
                return Result(requeue_after=RESYNC_SECONDS)
            else:
                self._event(claim, "Normal", "FailedBinding", NO_CLASS)
            await self._claim_status(claim, "Pending", None)
            return Result(requeue_after=RESYNC_SECONDS)
        volume = await self._volume(wanted)
        if volume is None:
            await self._claim_status(claim, "Pending", None)
            return Result(requeue_after=RESYNC_SECONDS)
        if claimed_by(volume) is None:
            problem = _unsatisfied(volume, claim)
            if problem:
                note = f'Cannot bind to requested volume "{wanted}": {problem}'
                self._event(claim, "Warning", "VolumeMismatch", note)
                await self._claim_status(claim, "Pending", None)
                return Result(requeue_after=RESYNC_SECONDS)
            await self._bind(json_copy(volume), claim)
            return None
        if is_bound_to(volume, claim):
            await self._bind(json_copy(volume), claim)
            return None
        note = f'volume "{wanted}" already bound to a different claim.'
        self._event(claim, "Warning", "FailedBinding", note)
        if BOUND_BY_CONTROLLER not in annotations_of(claim):
            await self._claim_status(claim, "Pending", None)
        return Result(requeue_after=RESYNC_SECONDS)

    async def _sync_bound(self, claim: Obj) -> None:
        wanted = str(spec_of(claim).get("volumeName") or "")
        if not wanted:
            await self._lost(
                claim,
                "ClaimLost",
                "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
            )
            return
        volume = await self._volume(wanted)
        if volume is None:
            await self._lost(
                claim,
                "ClaimLost",
                "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
            )
            return
        ref = claimed_by(volume)
        if ref is None or ref[2] == uid_of(claim):
            # Unbound in between, or bound well: make sure every part of the binding is there.
            await self._bind(json_copy(volume), claim)
            return
        await self._lost(
            claim,
            "ClaimMisbound",
            "Two claims are bound to the same volume, this one is bound incorrectly",
        )

    async def _lost(self, claim: Obj, reason: str, note: str) -> None:
        if status_of(claim).get("phase") != "Lost":
            await self._claim_status(claim, "Lost", None)
            self._event(claim, "Warning", reason, note)

    async def _assign_default_class(self, claim: Obj) -> bool:
        """A claim that names no class at all gets the default one, when there is one."""
        if spec_of(claim).get("storageClassName") is not None or claim_class(claim):
            return False
        chosen = default_class(list(await self.client.list(STORAGE_CLASS)))
        if chosen is None:
            return False
        updated = json_copy(claim)
        updated["spec"]["storageClassName"] = name_of(chosen)
        await self.client.update(updated)
        return True

    async def _provision(self, claim: Obj) -> None:
        """Hand the claim to its class's provisioner (provisionClaimOperationExternal)."""
        class_name = claim_class(claim)
        cls = await self._class(class_name)
        if cls is None:
            note = f'storageclass.storage.k8s.io "{class_name}" not found'
            self._event(claim, "Warning", "ProvisioningFailed", note)
            return
        provisioner = str(cls.get("provisioner") or "")
        if provisioner.startswith("kubernetes.io/"):
            # In-tree provisioners are volume plugins this cluster has none of.
            note = f"no volume plugin matched name: {provisioner}"
            self._event(claim, "Warning", "ProvisioningFailed", note)
            return
        annotations = annotations_of(claim)
        if (
            annotations.get(STORAGE_PROVISIONER) != provisioner
            or annotations.get(BETA_STORAGE_PROVISIONER) != provisioner
        ):
            updated = json_copy(claim)
            marks = updated["metadata"].setdefault("annotations", {})
            marks[STORAGE_PROVISIONER] = provisioner
            marks[BETA_STORAGE_PROVISIONER] = provisioner
            claim = await self.client.update(updated)
        self._event(claim, "Normal", "ExternalProvisioning", EXTERNAL.format(provisioner))

    async def _claim_status(self, claim: Obj, phase: str, volume: Mapping[str, Any] | None) -> Obj:
        """updateClaimStatus: the phase, and the volume's access modes and (when the claim
        becomes bound) its capacity; written only when something changes."""
        status = dict(status_of(claim))
        changes: dict[str, Any] = {}
        if status.get("phase") != phase:
            changes["phase"] = phase
        if volume is None:
            for key in ("accessModes", "capacity"):
                if status.get(key) is not None:
                    changes[key] = None
        else:
            modes = as_list(spec_of(volume).get("accessModes"))
            if as_list(status.get("accessModes")) != modes:
                changes["accessModes"] = modes
            if status.get("phase") != phase:
                size = as_dict(spec_of(volume).get("capacity")).get("storage")
                if as_dict(status.get("capacity")).get("storage") != size:
                    changes["capacity"] = dict(as_dict(spec_of(volume).get("capacity")))
        if not changes:
            return claim
        status.update(changes)
        updated = json_copy(claim)
        updated["status"] = {k: v for k, v in status.items() if v is not None}
        result: Obj = await self.client.update_status(updated)
        return result

    async def _bind(self, volume: Obj, claim: Obj) -> None:
        """Volume first (claimRef, then phase), then the claim (volumeName and
        annotations, then phase): each step written only when needed (bind)."""
        dirty = False
        chose = not is_bound_to(volume, claim)
        ref = claimed_by(volume)
        if ref is None or ref != (namespace_of(claim), name_of(claim), uid_of(claim)):
            volume["spec"]["claimRef"] = claim_reference(claim)
            dirty = True
        marks = volume["metadata"].setdefault("annotations", {})
        if chose and BOUND_BY_CONTROLLER not in marks:
            marks[BOUND_BY_CONTROLLER] = "yes"
            dirty = True
        if dirty:
            volume = await self.client.update(volume)
        volume = await self._volume_phase(volume, "Bound")
        updated = json_copy(claim)
        dirty = False
        claim_marks = updated["metadata"].setdefault("annotations", {})
        if spec_of(claim).get("volumeName") != name_of(volume):
            updated["spec"]["volumeName"] = name_of(volume)
            claim_marks.setdefault(BOUND_BY_CONTROLLER, "yes")
            dirty = True
        if BIND_COMPLETED not in claim_marks:
            claim_marks[BIND_COMPLETED] = "yes"
            dirty = True
        if dirty:
            claim = await self.client.update(updated)
        await self._claim_status(claim, "Bound", volume)

    # volumes --------------------------------------------------------------------------------

    async def _volume_phase(
        self, volume: Obj, phase: str, message: str = "", event: tuple[str, str] | None = None
    ) -> Obj:
        """updateVolumePhase(WithEvent): the phase and its message, and the event, only
        when the phase changes."""
        if status_of(volume).get("phase") == phase:
            return volume
        updated = json_copy(volume)
        updated["status"] = {"phase": phase, **({"message": message} if message else {})}
        result: Obj = await self.client.update_status(updated)
        if event is not None:
            self._event(result, "Warning", event[0], event[1])
        return result

    async def _claim_of(self, volume: Obj) -> Obj | None:
        """The claim the volume is bound to, read live when the cache has none (or another
        of that name): a volume is never released on a stale view."""
        ref = claimed_by(volume)
        assert ref is not None
        namespace, name, uid = ref
        claim: Obj | None
        try:
            claim = await self.client.get(PVC, name, namespace=namespace)
        except NotFound:
            claim = None
        if claim is not None and uid_of(claim) == uid:
            return claim
        if claim is None and status_of(volume).get("phase") in ("Released", "Failed"):
            return None
        try:
            claim = await self.live.get(PVC, name, namespace=namespace)
        except NotFound:
            return None
        return claim if uid_of(claim) == uid else None

    async def sync_volume(self, volume: Obj) -> Result | None:
        ref = claimed_by(volume)
        if ref is None or not ref[2]:
            # Unused, or pre-bound to a claim whose sync does the binding.
            await self._volume_phase(volume, "Available")
            return None
        claim = await self._claim_of(volume)
        if claim is None:
            if status_of(volume).get("phase") not in ("Released", "Failed"):
                volume = await self._volume_phase(volume, "Released")
            return await self._reclaim(volume)
        bound_to = str(spec_of(claim).get("volumeName") or "")
        if not bound_to:
            if _volume_mode(claim) != _volume_mode(volume):
                self._event(
                    volume,
                    "Warning",
                    "VolumeMismatch",
                    "Cannot bind PersistentVolume to requested PersistentVolumeClaim "
                    f'"{name_of(claim)}" due to incompatible volumeMode.',
                )
            # Otherwise the claim's sync finishes the binding (this event queued it).
            return None
        if bound_to == name_of(volume):
            await self._volume_phase(volume, "Bound")
            return None
        # The claim took another volume.
        annotations = annotations_of(volume)
        policy = spec_of(volume).get("persistentVolumeReclaimPolicy")
        if PROVISIONED_BY in annotations and policy == "Delete":
            if status_of(volume).get("phase") not in ("Released", "Failed"):
                volume = await self._volume_phase(volume, "Released")
            return await self._reclaim(volume)
        await self._unbind(volume)
        return None

    async def _unbind(self, volume: Obj) -> None:
        """Undo a binding: the controller's own entirely, a user's pre-binding down to the
        claim's uid; the volume is Available again."""
        updated = json_copy(volume)
        annotations = updated["metadata"].get("annotations") or {}
        if BOUND_BY_CONTROLLER in annotations:
            updated["spec"].pop("claimRef", None)
            annotations.pop(BOUND_BY_CONTROLLER)
        else:
            updated["spec"]["claimRef"].pop("uid", None)
        volume = await self.client.update(updated)
        await self._volume_phase(volume, "Available")

    async def _reclaim(self, volume: Obj) -> Result | None:
        """The volume's reclaim policy (reclaimVolume)."""
        policy = spec_of(volume).get("persistentVolumeReclaimPolicy")
        if policy == "Retain":
            return None
        if policy == "Recycle":
            await self._volume_phase(
                volume,
                "Failed",
                "No recycler plugin found for the volume!",
                ("VolumeFailedRecycle", "No recycler plugin found for the volume!"),
            )
            return None
        if policy == "Delete":
            provisioner = str(annotations_of(volume).get(PROVISIONED_BY) or "")
            if provisioner and not provisioner.startswith("kubernetes.io/"):
                return None  # the external provisioner deletes it
            if is_deleting(volume):
                return None
            note = (
                f'error getting deleter volume plugin for volume "{name_of(volume)}": '
                "no deletable volume plugin matched"
            )
            await self._volume_phase(volume, "Failed", note, ("VolumeFailedDelete", note))
            return Result(requeue_after=RESYNC_SECONDS)
        await self._volume_phase(
            volume,
            "Failed",
            "Volume has unrecognized PersistentVolumeReclaimPolicy",
            ("VolumeUnknownReclaimPolicy", "Volume has unrecognized PersistentVolumeReclaimPolicy"),
        )
        return None


def _unsatisfied(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> str:
    """Why a volume a claim asks for by name cannot serve it (checkVolumeSatisfyClaim)."""
    if is_deleting(volume):
        return f'the volume is marked for deletion "{name_of(volume)}"'
    if capacity_of(volume) < storage_request(claim):
        return "requested PV is too small"
    if str(spec_of(volume).get("storageClassName") or "") != claim_class(claim):
        return "storageClassName does not match"
    if _volume_mode(volume) != _volume_mode(claim):
        return "incompatible volumeMode"
    if not access_modes_fit(claim, volume):
        return "incompatible accessMode"
    return ""


class _ClaimSync(Reconciler):
    def __init__(self, binder: Binder) -> None:
        self.binder = binder

    async def reconcile(self, request: Request) -> Result | None:
        try:
            claim: Obj = await self.client.get(PVC, request.name, namespace=request.namespace)
        except NotFound:
            return None
        return await quiet_conflicts(lambda: self.binder.sync_claim(claim))


class _VolumeSync(Reconciler):
    def __init__(self, binder: Binder) -> None:
        self.binder = binder

    async def reconcile(self, request: Request) -> Result | None:
        try:
            volume: Obj = await self.client.get(PV, request.name)
        except NotFound:
            return None
        return await quiet_conflicts(lambda: self.binder.sync_volume(volume))


def setup(manager: Manager) -> None:
    """Register the binder's two loops (claims and volumes) with `manager`."""
    manager.cache.index_field(PV, CLAIM_REF_INDEX, _claim_ref_keys)
    binder = Binder(manager)
    volumes = manager.cache.informer_for(PV).store

    def unbound_claims(wanted: Callable[[Mapping[str, Any]], bool]) -> list[Request]:
        claims = manager.cache.informer_for(PVC).store
        requests = []
        for key in claims:
            claim = claims.get(key)
            if claim is not None and not spec_of(claim).get("volumeName") and wanted(claim):
                requests.append(Request(namespace_of(claim), name_of(claim)))
        return requests

    def claims_of_volume(volume: Mapping[str, Any]) -> list[Request]:
        """The volume's claim; for a free volume, the unbound claims of its class (the
        periodic resync would find it for them later)."""
        ref = claimed_by(volume)
        if ref is not None:
            return [Request(ref[0], ref[1])]
        if status_of(volume).get("phase") != "Available":
            return []
        cls = str(spec_of(volume).get("storageClassName") or "")
        return unbound_claims(lambda claim: claim_class(claim) == cls)

    def volumes_of_claim(claim: Mapping[str, Any]) -> list[Request]:
        key = f"{namespace_of(claim)}/{name_of(claim)}"
        names = {key.rpartition("/")[2] for key in volumes.by_index(CLAIM_REF_INDEX, key)}
        wanted = spec_of(claim).get("volumeName")
        if wanted:
            names.add(str(wanted))
        return [Request("", name) for name in sorted(names)]

    def classless_claims(_cls: Any) -> list[Request]:
        return unbound_claims(lambda claim: not claim_class(claim))

    (
        manager.controller()
        .named("persistentvolume-binder-claims")
        .for_(PVC)
        .watches(PV, claims_of_volume)
        .watches(STORAGE_CLASS, classless_claims)
        # Each loop runs one sync at a time (syncClaim is not re-entrant).
        .with_options(max_concurrent_reconciles=1)
        .complete(_ClaimSync(binder))
    )
    (
        manager.controller()
        .named("persistentvolume-binder-volumes")
        .for_(PV)
        .watches(PVC, volumes_of_claim)
        .with_options(max_concurrent_reconciles=1)
        .complete(_VolumeSync(binder))
    )
