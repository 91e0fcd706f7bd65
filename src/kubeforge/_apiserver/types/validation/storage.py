"""Validation of the storage.k8s.io/v1 kinds: StorageClass, CSIDriver, CSINode,
CSIStorageCapacity and VolumeAttachment, as pkg/apis/storage/validation/validation.go checks
them."""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.access import as_dict, as_int, as_list, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.names import (
    immutable,
    is_dns1123_subdomain,
    is_qualified_name,
    validate_label_selector,
)
from kubeforge._apiserver.types.validation.common import Errors, Obj, go_json, semantic_equal

__all__ = [
    "validate_csi_driver",
    "validate_csi_driver_update",
    "validate_csi_node",
    "validate_csi_node_update",
    "validate_csi_storage_capacity",
    "validate_csi_storage_capacity_update",
    "validate_storage_class",
    "validate_storage_class_update",
    "validate_volume_attachment",
    "validate_volume_attachment_update",
]

# A CSI driver's name is a DNS subdomain of at most 63 characters (csiDriverNameMaxLength).
_DRIVER_NAME_MAX = 63
_NODE_ID_MAX = 192
_ERROR_MESSAGE_MAX = 1024
_LIFECYCLE_MODES = ("Ephemeral", "Persistent")
_FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
_MIN_TOKEN_SECONDS = 600
_MAX_TOKEN_SECONDS = 1 << 32


def _driver_name(name: Any, path: str) -> Errors:
    """validateCSIDriverName: required, at most 63 characters, a DNS subdomain (any case)."""
    text = as_str(name)
    if not text:
        return [FieldError.required(path, "")]
    errs: Errors = []
    if len(text) > _DRIVER_NAME_MAX:
        errs.append(FieldError.too_long(path, _DRIVER_NAME_MAX))
    errs += [FieldError.invalid(path, text, m) for m in is_dns1123_subdomain(text.lower())]
    return errs


def _required_bool(spec: Obj, key: str) -> Errors:
    if spec.get(key) is None:
        return [FieldError.required(f"spec.{key}", "")]
    return []


# -- CSIDriver --------------------------------------------------------------------------------


def _token_requests(requests: Any, path: str) -> Errors:
    errs: Errors = []
    audiences: set[str] = set()
    for i, request in enumerate(as_list(requests)):
        request = as_dict(request)
        audience = as_str(request.get("audience"))
        if audience in audiences:
            errs.append(FieldError.duplicate(f"{path}[{i}].audience", audience))
        audiences.add(audience)
        seconds = as_int(request.get("expirationSeconds"))
        if seconds is None:
            continue
        if seconds < _MIN_TOKEN_SECONDS:
            errs.append(
                FieldError.invalid(
                    f"{path}[{i}].expirationSeconds",
                    seconds,
                    "may not specify a duration less than 10 minutes",
                )
            )
        if seconds > _MAX_TOKEN_SECONDS:
            errs.append(
                FieldError.invalid(
                    f"{path}[{i}].expirationSeconds",
                    seconds,
                    "may not specify a duration larger than 2^32 seconds",
                )
            )
    return errs


def validate_csi_driver(obj: Obj) -> list[FieldError]:
    """ValidateCSIDriver: the name, the required switches, the modes and token requests."""
    errs = _driver_name(as_dict(obj.get("metadata")).get("name"), "metadata.name")
    spec = as_dict(obj.get("spec"))
    for key in ("attachRequired", "podInfoOnMount", "storageCapacity", "requiresRepublish"):
        errs += _required_bool(spec, key)
    policy = spec.get("fsGroupPolicy")
    if policy is None:
        errs.append(FieldError.required("spec.fsGroupPolicy", ""))
    elif policy not in _FS_GROUP_POLICIES:
        errs.append(FieldError.not_supported("spec.fsGroupPolicy", policy, _FS_GROUP_POLICIES))
    for i, mode in enumerate(as_list(spec.get("volumeLifecycleModes"))):
        if mode not in _LIFECYCLE_MODES:
            errs.append(
                FieldError.not_supported(f"spec.volumeLifecycleModes[{i}]", mode, _LIFECYCLE_MODES)
            )
    errs += _token_requests(spec.get("tokenRequests"), "spec.tokenRequests")
    return errs


def validate_csi_driver_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateCSIDriverUpdate: attachRequired, fsGroupPolicy and the lifecycle modes stay."""
    errs = validate_csi_driver(obj)
    spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
    # Upstream names the first path `attachedRequired`; clients see that spelling.
    for key, path in (
        ("attachRequired", "spec.attachedRequired"),
        ("fsGroupPolicy", "spec.fsGroupPolicy"),
        ("volumeLifecycleModes", "spec.volumeLifecycleModes"),
    ):
        if not semantic_equal(spec.get(key), old_spec.get(key)):
            errs.append(immutable(path, _shown(spec.get(key))))
    return errs


def _shown(value: Any) -> Any:
    return go_json(value) if isinstance(value, (dict, list)) else value


# -- CSINode ----------------------------------------------------------------------------------


def _csi_node_driver(driver: Obj, path: str) -> Errors:
    errs = _driver_name(driver.get("name"), f"{path}.name")
    node_id = as_str(driver.get("nodeID"))
    if not node_id:
        errs.append(FieldError.required(f"{path}.nodeID", ""))
    elif len(node_id) > _NODE_ID_MAX:
        errs.append(
            FieldError.invalid(
                f"{path}.nodeID", node_id, f"must be {_NODE_ID_MAX} characters or less"
            )
        )
    keys: set[str] = set()
    for i, key in enumerate(as_list(driver.get("topologyKeys"))):
        text = as_str(key)
        key_path = f"{path}.topologyKeys[{i}]"
        if not text:
            errs.append(FieldError.required(key_path, ""))
            continue
        if text in keys:
            errs.append(FieldError.duplicate(key_path, text))
        keys.add(text)
        errs += [FieldError.invalid(key_path, text, m) for m in is_qualified_name(text)]
    count = as_int(as_dict(driver.get("allocatable")).get("count"))
    if count is not None and count < 0:
        errs.append(
            FieldError.invalid(
                f"{path}.allocatable.count", count, "must be greater than or equal to 0"
            )
        )
    return errs


def validate_csi_node(obj: Obj) -> list[FieldError]:
    """ValidateCSINode: each driver named once, with a node ID and valid topology keys."""
    errs: Errors = []
    names: set[str] = set()
    for i, driver in enumerate(as_list(as_dict(obj.get("spec")).get("drivers"))):
        driver = as_dict(driver)
        path = f"spec.drivers[{i}]"
        errs += _csi_node_driver(driver, path)
        name = as_str(driver.get("name"))
        if name in names:
            errs.append(FieldError.duplicate(f"{path}.name", name))
        names.add(name)
    return errs


def validate_csi_node_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateCSINodeUpdate: a driver that stays keeps its node ID, keys and allocatable."""
    errs = validate_csi_node(obj)
    old_drivers = {
        as_str(as_dict(d).get("name")): as_dict(d)
        for d in as_list(as_dict(old.get("spec")).get("drivers"))
    }
    for i, driver in enumerate(as_list(as_dict(obj.get("spec")).get("drivers"))):
        driver = as_dict(driver)
        before = old_drivers.get(as_str(driver.get("name")))
        if before is None:
            continue
        for key in ("nodeID", "topologyKeys", "allocatable"):
            if not semantic_equal(driver.get(key), before.get(key)):
                errs.append(immutable(f"spec.drivers[{i}].{key}", _shown(driver.get(key))))
    return errs


# -- StorageClass ---------------------------------------------------------------------------

_CLASS_RECLAIM_POLICIES = ("Delete", "Retain")
_BINDING_MODES = ("Immediate", "WaitForFirstConsumer")


def validate_storage_class(obj: Obj) -> list[FieldError]:
    """ValidateStorageClass: a provisioner (a qualified name), a reclaim policy of Delete or
    Retain, a binding mode of Immediate or WaitForFirstConsumer."""
    errs: Errors = []
    provisioner = as_str(obj.get("provisioner"))
    if not provisioner:
        errs.append(FieldError.required("provisioner", ""))
    else:
        errs += [
            FieldError.invalid("provisioner", provisioner, m)
            for m in is_qualified_name(provisioner.lower())
        ]
    policy = obj.get("reclaimPolicy")
    if policy is not None and policy not in _CLASS_RECLAIM_POLICIES:
        errs.append(FieldError.not_supported("reclaimPolicy", policy, _CLASS_RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is None:
        errs.append(FieldError.required("volumeBindingMode", ""))
    elif mode not in _BINDING_MODES:
        errs.append(FieldError.not_supported("volumeBindingMode", mode, _BINDING_MODES))
    return errs


def validate_storage_class_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateStorageClassUpdate: parameters, provisioner, reclaim policy and binding mode
    stay as created."""
    errs = validate_storage_class(obj)
    if not semantic_equal(obj.get("parameters"), old.get("parameters")):
        errs.append(FieldError.forbidden("parameters", "updates to parameters are forbidden."))
    if obj.get("provisioner") != old.get("provisioner"):
        errs.append(FieldError.forbidden("provisioner", "updates to provisioner are forbidden."))
    if obj.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(
            FieldError.forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden.")
        )
    if obj.get("volumeBindingMode") != old.get("volumeBindingMode"):
        errs.append(immutable("volumeBindingMode", obj.get("volumeBindingMode")))
    return errs


# -- CSIStorageCapacity ---------------------------------------------------------------------


def validate_csi_storage_capacity(obj: Obj) -> list[FieldError]:
    """ValidateCSIStorageCapacity: a storage class name and a valid node topology."""
    errs = validate_label_selector(obj.get("nodeTopology"), "nodeTopology")
    name = as_str(obj.get("storageClassName"))
    if not name:
        errs.append(FieldError.required("storageClassName", ""))
    else:
        errs += [
            FieldError.invalid("storageClassName", name, m) for m in is_dns1123_subdomain(name)
        ]
    for key in ("capacity", "maximumVolumeSize"):
        value = obj.get(key)
        negative = (isinstance(value, str) and value.startswith("-")) or (
            isinstance(value, (int, float)) and value < 0
        )
        if negative:
            errs.append(FieldError.invalid(key, value, "must be greater than or equal to 0"))
    return errs


def validate_csi_storage_capacity_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateCSIStorageCapacityUpdate: only the capacity figures may change."""
    errs = validate_csi_storage_capacity(obj)
    for key in ("storageClassName", "nodeTopology"):
        if not semantic_equal(obj.get(key), old.get(key)):
            errs.append(immutable(key, _shown(obj.get(key))))
    return errs


# -- VolumeAttachment ----------------------------------------------------------------------


def _volume_error(error: Any, path: str) -> Errors:
    message = as_str(as_dict(error).get("message"))
    if len(message) > _ERROR_MESSAGE_MAX:
        return [FieldError.too_long(f"{path}.message", _ERROR_MESSAGE_MAX)]
    return []


def validate_volume_attachment(obj: Obj) -> list[FieldError]:
    """ValidateVolumeAttachment: an attacher, one source, a node; short error messages."""
    spec = as_dict(obj.get("spec"))
    errs = _driver_name(spec.get("attacher"), "spec.attacher")
    source = as_dict(spec.get("source"))
    pv_name = source.get("persistentVolumeName")
    inline = source.get("inlineVolumeSpec")
    if (pv_name is None) == (inline is None):
        errs.append(
            FieldError.invalid(
                "spec.source",
                go_json(source),
                "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
            )
        )
    elif pv_name is not None:
        text = as_str(pv_name)
        if not text:
            errs.append(
                FieldError.required(
                    "spec.source.persistentVolumeName",
                    "must specify non empty persistentVolumeName",
                )
            )
        else:
            errs += [
                FieldError.invalid("spec.source.persistentVolumeName", text, m)
                for m in is_dns1123_subdomain(text)
            ]
    node = as_str(spec.get("nodeName"))
    if not node:
        errs.append(FieldError.required("spec.nodeName", ""))
    else:
        errs += [FieldError.invalid("spec.nodeName", node, m) for m in is_dns1123_subdomain(node)]
    status = as_dict(obj.get("status"))
    errs += _volume_error(status.get("attachError"), "status.attachError")
    errs += _volume_error(status.get("detachError"), "status.detachError")
    return errs


def validate_volume_attachment_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateVolumeAttachmentUpdate: the spec never changes."""
    errs = validate_volume_attachment(obj)
    if not semantic_equal(obj.get("spec"), old.get("spec")):
        errs.append(immutable("spec", go_json(obj.get("spec"))))
    return errs
