"""The storage admission plugins kube-apiserver enables by default, for claims and volumes.

- DefaultStorageClass (plugin/pkg/admission/storage/storageclass/setdefault): a new claim
  that names no class (no `storageClassName` at all, no beta class annotation) gets the
  default StorageClass -- the one annotated `storageclass.kubernetes.io/is-default-class:
  "true"` (or the beta annotation), the newest when several are, ties by name. An explicit
  `storageClassName: ""` asks for no class and is left alone.
- PersistentVolumeClaimResize (plugin/pkg/admission/storage/persistentvolume/resize): a
  bigger storage request is refused (403) unless the claim is bound and its class has
  `allowVolumeExpansion: true`.
- StorageObjectInUseProtection (plugin/pkg/admission/storage/storageobjectinuseprotection):
  new claims get the `kubernetes.io/pvc-protection` finalizer and new volumes
  `kubernetes.io/pv-protection`, which the protection controllers remove once nothing uses
  them. The server adds each only when told to (a development cluster does when the
  controller that removes it runs), so that a deletion never waits for nobody.

Each looks at the resource of a write before anything else, so writes of other kinds pay a
comparison of two strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from kubeforge._api.machinery.access import as_dict
from kubeforge._api.machinery.quantity import decode_quantity
from kubeforge._api.machinery.timestamps import parse_time_or_none
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.storage.store import Store
from kubeforge._apiserver.types.resource import GroupResource, ResourceType

__all__ = [
    "BETA_CLASS_ANNOTATION",
    "DEFAULT_CLASS_ANNOTATIONS",
    "PVC_PROTECTION",
    "PV_PROTECTION",
    "ClaimResize",
    "DefaultStorageClass",
    "InUseProtection",
    "claim_class",
    "default_class",
]

CLAIMS = GroupResource("", "persistentvolumeclaims")
VOLUMES = GroupResource("", "persistentvolumes")
CLASSES = GroupResource("storage.k8s.io", "storageclasses")
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"


def _is(rt: ResourceType, gr: GroupResource) -> bool:
    return rt.plural == gr.resource and rt.group == gr.group


def claim_class(claim: Mapping[str, Any]) -> str:
    """The class a claim asks for: the beta annotation, else `spec.storageClassName`
    (GetPersistentVolumeClaimClass); "" for none."""
    annotations = as_dict(as_dict(claim.get("metadata")).get("annotations"))
    if BETA_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_CLASS_ANNOTATION])
    return str(as_dict(claim.get("spec")).get("storageClassName") or "")


def default_class(classes: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The default among `classes`: annotated as such, the newest first, then by name
    (GetDefaultClass in pkg/volume/util/storageclass.go)."""
    defaults = []
    for cls in classes:
        annotations = as_dict(as_dict(cls.get("metadata")).get("annotations"))
        if any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS):
            defaults.append(cls)
    if not defaults:
        return None

    def newest_first(cls: Mapping[str, Any]) -> tuple[float, str]:
        meta = as_dict(cls.get("metadata"))
        created = parse_time_or_none(meta.get("creationTimestamp"))
        return (-(created.timestamp() if created else 0.0), str(meta.get("name") or ""))

    return min(defaults, key=newest_first)


class DefaultStorageClass:
    """The DefaultStorageClass plugin: a mutator of the write pipeline (handlers/writes.py)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def __call__(self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if old is not None or not _is(rt, CLAIMS):
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
            return
        annotations = as_dict(as_dict(obj.get("metadata")).get("annotations"))
        if BETA_CLASS_ANNOTATION in annotations:
            return
        classes, _ = self.store.current(CLASSES)
        chosen = default_class([stored.obj for stored in classes])
        if chosen is not None:
            spec["storageClassName"] = as_dict(chosen.get("metadata")).get("name")


def _storage_request(claim: Mapping[str, Any]) -> Decimal:
    requests = as_dict(as_dict(as_dict(claim.get("spec")).get("resources")).get("requests"))
    return decode_quantity(requests.get("storage")) or Decimal(0)


class ClaimResize:
    """The PersistentVolumeClaimResize plugin: an admitter of the write pipeline."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def __call__(self, call: Call, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if old is None or not _is(call.rt, CLAIMS) or call.info.subresource:
            return
        if _storage_request(obj) <= _storage_request(old):
            return
        name = str(as_dict(obj.get("metadata")).get("name") or "")
        if as_dict(old.get("status")).get("phase") != "Bound":
            raise StatusError.forbidden(
                "", CLAIMS.resource, name, "Only bound persistent volume claims can be expanded"
            )
        wanted, before = claim_class(obj), claim_class(old)
        stored = self.store.get(CLASSES, "", wanted) if wanted and wanted == before else None
        if stored is None or stored.obj.get("allowVolumeExpansion") is not True:
            raise StatusError.forbidden(
                "",
                CLAIMS.resource,
                name,
                "only dynamically provisioned pvc can be resized and the storageclass that "
                "provisions the pvc must support resize",
            )


class InUseProtection:
    """The StorageObjectInUseProtection plugin: a mutator adding the protection finalizers
    to new claims (`claims`) and new volumes (`volumes`)."""

    def __init__(self, *, claims: bool, volumes: bool) -> None:
        self.claims = claims
        self.volumes = volumes

    def __call__(self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if old is not None:
            return
        if self.claims and _is(rt, CLAIMS):
            finalizer = PVC_PROTECTION
        elif self.volumes and _is(rt, VOLUMES):
            finalizer = PV_PROTECTION
        else:
            return
        meta = obj["metadata"]
        finalizers = meta.get("finalizers")
        if not isinstance(finalizers, list):
            meta["finalizers"] = [finalizer]
        elif finalizer not in finalizers:
            finalizers.append(finalizer)
