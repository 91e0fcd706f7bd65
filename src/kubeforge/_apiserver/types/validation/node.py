"""Validation of node.k8s.io/v1 RuntimeClasses, as pkg/apis/node/validation/validation.go
checks them."""

from __future__ import annotations

from kubeforge._api.machinery.access import as_dict, as_list, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.names import immutable, is_dns1123_label, validate_labels
from kubeforge._apiserver.types.validation.common import Errors, Obj, go_json
from kubeforge._apiserver.types.validation.core_pods import (
    _validate_resources,  # the pod's resource rules, which the overhead reuses upstream too
    _validate_tolerations,
)

__all__ = ["validate_runtime_class", "validate_runtime_class_update"]

_TOLERATION_KEYS = ("key", "operator", "value", "effect")


def validate_runtime_class(obj: Obj) -> list[FieldError]:
    """ValidateRuntimeClass: a DNS-label handler, a valid overhead and scheduling."""
    handler = as_str(obj.get("handler"))
    errs: Errors = [FieldError.invalid("handler", handler, m) for m in is_dns1123_label(handler)]
    overhead = obj.get("overhead")
    if isinstance(overhead, dict):
        errs += _validate_resources({"limits": as_dict(overhead.get("podFixed"))}, "overhead")
    scheduling = obj.get("scheduling")
    if isinstance(scheduling, dict):
        errs += validate_labels(scheduling.get("nodeSelector"), "scheduling.nodeSelector")
        tolerations = as_list(scheduling.get("tolerations"))
        errs += _validate_tolerations(tolerations, "scheduling.tolerations")
        seen: set[tuple[str, ...]] = set()
        for i, toleration in enumerate(tolerations):
            toleration = as_dict(toleration)
            key = tuple(as_str(toleration.get(k)) for k in _TOLERATION_KEYS)
            if key in seen:
                errs.append(
                    FieldError.duplicate(f"scheduling.tolerations[{i}]", go_json(toleration))
                )
            seen.add(key)
    return errs


def validate_runtime_class_update(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateRuntimeClassUpdate: the handler never changes (the rest is not re-checked)."""
    handler = as_str(obj.get("handler"))
    if handler != as_str(old.get("handler")):
        return [immutable("handler", handler)]
    return []
