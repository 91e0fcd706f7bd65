"""Validation of PersistentVolumeClaims and PersistentVolumes, as pkg/apis/core/validation/
validation.go checks them (ValidatePersistentVolumeClaimSpec and ...ClaimUpdate,
ValidatePersistentVolumeSpec and ...Update), for the fields a claim's life depends on.

A claim's spec is fixed once created, except that its `volumeName` may be set once (the
binder does that), a missing `storageClassName` may be filled in (the retroactive default
class), and a bound claim's storage request may grow (whether the class allows it is the
PersistentVolumeClaimResize admission's concern) or shrink back no lower than its
`status.capacity` (RecoverVolumeExpansionFailure, on by default since 1.32).
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from kubeforge._api.machinery.access import as_dict, as_list, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.names import immutable, is_dns1123_subdomain, validate_label_selector
from kubeforge._api.machinery.quantity import decode_quantity
from kubeforge._apiserver.types.validation.common import Errors, Obj, each, semantic_equal

__all__ = [
    "validate_persistent_volume",
    "validate_persistent_volume_claim",
    "validate_persistent_volume_claim_update",
    "validate_persistent_volume_update",
]

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
# The fields of a PersistentVolumeSource: a volume has exactly one of them.
VOLUME_SOURCES = (
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
)
_SPEC_IMMUTABLE = (
    "spec is immutable after creation except resources.requests and volumeAttributesClassName "
    "for bound claims"
)
_NOT_POSITIVE = "must be greater than zero"


def _access_modes(spec: Obj, path: str, required: str) -> Errors:
    modes = as_list(spec.get("accessModes"))
    if not modes:
        return [FieldError.required(f"{path}.accessModes", required)]
    errs: Errors = []
    once_pod = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(FieldError.not_supported(f"{path}.accessModes", mode, ACCESS_MODES))
        elif mode == "ReadWriteOncePod":
            once_pod = True
        else:
            other = True
    if once_pod and other:
        errs.append(
            FieldError.forbidden(
                f"{path}.accessModes", "may not use ReadWriteOncePod with other access modes"
            )
        )
    return errs


def _positive(raw: Any, path: str) -> Errors:
    amount = decode_quantity(raw)
    if amount is not None and amount <= 0:
        return [FieldError.invalid(path, str(raw), _NOT_POSITIVE)]
    return []


def _class_name(name: Any, path: str) -> Errors:
    text = as_str(name)
    return each(is_dns1123_subdomain(text), path, text) if text else []


def _volume_mode(spec: Obj, path: str) -> Errors:
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        return [FieldError.not_supported(f"{path}.volumeMode", mode, VOLUME_MODES)]
    return []


# -- claims ---------------------------------------------------------------------------------


def _claim_spec(spec: Obj, path: str = "spec") -> Errors:
    errs = _access_modes(spec, path, "at least 1 access mode is required")
    if spec.get("selector") is not None:
        errs += validate_label_selector(spec.get("selector"), f"{path}.selector")
    requests = as_dict(as_dict(spec.get("resources")).get("requests"))
    at = f"{path}.resources[storage]"
    if "storage" not in requests:
        errs.append(FieldError.required(at, ""))
    else:
        errs += _positive(requests["storage"], at)
    errs += _class_name(spec.get("storageClassName"), f"{path}.storageClassName")
    return errs + _volume_mode(spec, path)


def validate_persistent_volume_claim(obj: Obj) -> Errors:
    """A new claim: access modes, a positive storage request, class name, volume mode."""
    return _claim_spec(as_dict(obj.get("spec")))


def _storage(obj: Obj, *path: str) -> Decimal | None:
    value: Any = obj
    for key in path:
        value = as_dict(value).get(key)
    return decode_quantity(value) if value is not None else None


def validate_persistent_volume_claim_update(obj: Obj, old: Obj) -> Errors:
    """An update: the new claim is valid, and its spec changed only where allowed."""
    errs = _claim_spec(as_dict(obj.get("spec")))
    new_spec = copy.deepcopy(as_dict(obj.get("spec")))
    old_spec = copy.deepcopy(as_dict(old.get("spec")))
    if not old_spec.get("volumeName"):
        # The binder sets volumeName once.
        old_spec["volumeName"] = new_spec.get("volumeName")
    old_annotations = as_dict(as_dict(old.get("metadata")).get("annotations"))
    new_annotations = as_dict(as_dict(obj.get("metadata")).get("annotations"))
    old_class = old_spec.get("storageClassName")
    new_class = new_spec.get("storageClassName")
    if (
        BETA_CLASS_ANNOTATION in old_annotations
        and old_class is None
        and new_class == old_annotations[BETA_CLASS_ANNOTATION]
        and new_annotations.get(BETA_CLASS_ANNOTATION, new_class) == new_class
    ):
        # The class moves from the beta annotation to the field.
        new_spec.pop("storageClassName", None)
    else:
        if new_annotations.get(BETA_CLASS_ANNOTATION) != old_annotations.get(BETA_CLASS_ANNOTATION):
            errs.append(
                immutable(
                    f"metadata.annotations[{BETA_CLASS_ANNOTATION}]",
                    new_annotations.get(BETA_CLASS_ANNOTATION, ""),
                )
            )
        if (
            new_class is not None
            and old_class is None
            and old_annotations.get(BETA_CLASS_ANNOTATION, new_class) == new_class
        ):
            # A claim without a class gets one (the default class, retroactively).
            new_spec.pop("storageClassName", None)
    bound = as_dict(old.get("status")).get("phase") == "Bound"
    new_requests = as_dict(as_dict(new_spec.get("resources")).get("requests"))
    if bound and new_requests:
        old_requests = as_dict(as_dict(old_spec.get("resources")).get("requests"))
        new_requests["storage"] = old_requests.get("storage")
    new_spec.pop("volumeAttributesClassName", None)
    old_spec.pop("volumeAttributesClassName", None)
    if not semantic_equal(new_spec, old_spec):
        errs.append(FieldError.forbidden("spec", _SPEC_IMMUTABLE))
    new_size = _storage(obj, "spec", "resources", "requests", "storage")
    old_size = _storage(old, "spec", "resources", "requests", "storage")
    capacity = _storage(old, "status", "capacity", "storage") or Decimal(0)
    shrinks = new_size is not None and old_size is not None and new_size < old_size
    if shrinks and new_size is not None and new_size <= capacity:
        errs.append(
            FieldError.forbidden(
                "spec.resources.requests.storage", "field can not be less than status.capacity"
            )
        )
    new_mode = as_dict(obj.get("spec")).get("volumeMode")
    if new_mode != as_dict(old.get("spec")).get("volumeMode"):
        errs.append(immutable("volumeMode", new_mode))
    return errs


# -- volumes --------------------------------------------------------------------------------


def _volume_spec(spec: Obj) -> Errors:
    errs = _access_modes(spec, "spec", "")
    capacity = as_dict(spec.get("capacity"))
    if not capacity:
        errs.append(FieldError.required("spec.capacity", ""))
    elif "storage" not in capacity or len(capacity) > 1:
        errs.append(FieldError.not_supported("spec.capacity", capacity, ("storage",)))
    for resource, raw in capacity.items():
        errs += _positive(raw, f"spec.capacity[{resource}]")
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in RECLAIM_POLICIES:
        errs.append(
            FieldError.not_supported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES)
        )
    sources = [key for key in VOLUME_SOURCES if spec.get(key) is not None]
    if not sources:
        errs.append(FieldError.required("spec", "must specify a volume type"))
    for extra in sources[1:]:
        errs.append(
            FieldError.forbidden(f"spec.{extra}", "may not specify more than 1 volume type")
        )
    if sources[:1] == ["hostPath"] and not as_dict(spec.get("hostPath")).get("path"):
        errs.append(FieldError.required("spec.hostPath.path", ""))
    if sources[:1] == ["local"]:
        if not as_dict(spec.get("local")).get("path"):
            errs.append(FieldError.required("spec.local.path", ""))
        if not as_dict(spec.get("nodeAffinity")).get("required"):
            errs.append(
                FieldError.required("spec.nodeAffinity", "Local volume requires node affinity")
            )
    errs += _class_name(spec.get("storageClassName"), "spec.storageClassName")
    return errs + _volume_mode(spec, "spec")


def validate_persistent_volume(obj: Obj) -> Errors:
    """A new volume: access modes, a positive storage capacity, a reclaim policy, exactly one
    volume source (a local one with node affinity), class name, volume mode."""
    return _volume_spec(as_dict(obj.get("spec")))


def validate_persistent_volume_update(obj: Obj, old: Obj) -> Errors:
    """An update: the new volume is valid; its source and volume mode stay, and node affinity
    once set stays."""
    spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
    errs = _volume_spec(spec)
    source = {key: spec.get(key) for key in VOLUME_SOURCES if spec.get(key) is not None}
    old_source = {key: old_spec.get(key) for key in VOLUME_SOURCES if old_spec.get(key) is not None}
    if not semantic_equal(source, old_source):
        errs.append(
            FieldError.forbidden(
                "spec.persistentvolumesource",
                "spec.persistentvolumesource is immutable after creation",
            )
        )
    if spec.get("volumeMode") != old_spec.get("volumeMode"):
        errs.append(immutable("volumeMode", spec.get("volumeMode")))
    affinity = old_spec.get("nodeAffinity")
    if affinity is not None and not semantic_equal(spec.get("nodeAffinity"), affinity):
        errs.append(immutable("nodeAffinity", spec.get("nodeAffinity")))
    return errs
