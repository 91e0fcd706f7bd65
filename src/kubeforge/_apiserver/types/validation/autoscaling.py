"""Validation of HorizontalPodAutoscalers, checked on the stored (autoscaling/v2) form whichever
version a client wrote, as kube-apiserver checks the internal object
(pkg/apis/autoscaling/validation/validation.go)."""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.access import as_dict, as_list
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.names import is_dns1123_label, is_path_segment_name, is_qualified_name
from kubeforge._api.machinery.quantity import decode_quantity
from kubeforge._apiserver.types.hpaversions import hpa_v1_to_v2
from kubeforge._apiserver.types.validation.common import Errors, Obj, each

__all__ = ["validate_hpa", "validate_hpa_update", "validate_hpa_v1", "validate_hpa_v1_update"]

# The longest scaling policy period and stabilization window (MaxPeriodSeconds,
# MaxStabilizationWindowSeconds).
MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600

_SOURCE_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
# Each metric source type and the field that holds it.
_SOURCE_FIELDS = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "External": "external",
    "ContainerResource": "containerResource",
}
_SELECT_POLICIES = ("Disabled", "Max", "Min")
_POLICY_TYPES = ("Percent", "Pods")
_TARGET_TYPES = ("Utilization", "Value", "AverageValue")
# Resource names a container may name without a domain (IsStandardContainerResourceName).
_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def validate_hpa(obj: Obj) -> Errors:
    """A new HorizontalPodAutoscaler (ValidateHorizontalPodAutoscaler; scale to zero is an
    alpha feature, off, so minReplicas is at least 1)."""
    return _validate_spec(as_dict(obj.get("spec")), "spec", min_replicas_floor=1)


def validate_hpa_update(obj: Obj, old: Obj) -> Errors:
    """An update: the spec is checked again, and an object already at minReplicas 0 may keep
    it (ValidateHorizontalPodAutoscalerUpdate)."""
    old_min = as_dict(old.get("spec")).get("minReplicas")
    return _validate_spec(
        as_dict(obj.get("spec")), "spec", min_replicas_floor=0 if old_min == 0 else 1
    )


def validate_hpa_v1(obj: Obj) -> Errors:
    """An autoscaling/v1 write, checked in the full form its annotations complete (the
    internal object upstream), so errors name autoscaling/v2's fields."""
    return validate_hpa(hpa_v1_to_v2(obj))


def validate_hpa_v1_update(obj: Obj, old: Obj) -> Errors:
    """An autoscaling/v1 update (only the old object's minReplicas matters, the same in
    both versions)."""
    return validate_hpa_update(hpa_v1_to_v2(obj), old)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _validate_spec(spec: Obj, path: str, *, min_replicas_floor: int) -> Errors:
    errs: Errors = []
    min_replicas = _int(spec.get("minReplicas"))
    max_replicas = _int(spec.get("maxReplicas")) or 0
    if min_replicas is not None and min_replicas < min_replicas_floor:
        errs.append(
            FieldError.invalid(
                f"{path}.minReplicas",
                min_replicas,
                f"must be greater than or equal to {min_replicas_floor}",
            )
        )
    if max_replicas < 1:
        errs.append(
            FieldError.invalid(f"{path}.maxReplicas", max_replicas, "must be greater than 0")
        )
    if min_replicas is not None and max_replicas < min_replicas:
        errs.append(
            FieldError.invalid(
                f"{path}.maxReplicas",
                max_replicas,
                "must be greater than or equal to `minReplicas`",
            )
        )
    errs += _validate_reference(as_dict(spec.get("scaleTargetRef")), f"{path}.scaleTargetRef")
    errs += _validate_metrics(as_list(spec.get("metrics")), f"{path}.metrics", min_replicas)
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for side in ("scaleUp", "scaleDown"):
            rules = behavior.get(side)
            if isinstance(rules, dict):
                errs += _validate_scaling_rules(rules, f"{path}.behavior.{side}")
    return errs


def _validate_reference(ref: Obj, path: str) -> Errors:
    """ValidateCrossVersionObjectReference: a kind and a name, each a path segment."""
    errs: Errors = []
    for key in ("kind", "name"):
        value = ref.get(key)
        if not value:
            errs.append(FieldError.required(f"{path}.{key}"))
        elif isinstance(value, str):
            errs += each(is_path_segment_name(value), f"{path}.{key}", value)
    return errs


def _validate_metrics(metrics: list[Any], path: str, min_replicas: int | None) -> Errors:
    errs: Errors = []
    types = set()
    for index, metric in enumerate(metrics):
        metric = as_dict(metric)
        types.add(metric.get("type"))
        errs += _validate_metric(metric, f"{path}[{index}]")
    if min_replicas == 0 and not types & {"Object", "External"}:
        errs.append(
            FieldError.forbidden(
                path,
                "must specify at least one Object or External metric to support scaling to "
                "zero replicas",
            )
        )
    return errs


def _validate_metric(metric: Obj, path: str) -> Errors:
    errs: Errors = []
    kind = metric.get("type")
    if not kind:
        errs.append(FieldError.required(f"{path}.type", "must specify a metric source type"))
    if kind not in _SOURCE_TYPES:
        errs.append(FieldError.not_supported(f"{path}.type", kind or "", _SOURCE_TYPES))
    present = [field for field in _SOURCE_FIELDS.values() if metric.get(field) is not None]
    # Only the first source present is looked into, as upstream does.
    if present:
        first = present[0]
        errs += _SOURCE_CHECKS[first](as_dict(metric[first]), f"{path}.{first}")
    expected = _SOURCE_FIELDS.get(kind) if isinstance(kind, str) else None
    if expected is not None and metric.get(expected) is None:
        errs.append(
            FieldError.required(
                f"{path}.{expected}", "must populate information for the given metric source"
            )
        )
    if len(present) != 1:
        for field in present:
            if field != expected:
                errs.append(
                    FieldError.forbidden(
                        f"{path}.{field}", "must populate the given metric source only"
                    )
                )
    return errs


def _target(source: Obj) -> Obj:
    return as_dict(source.get("target"))


def _validate_object_source(source: Obj, path: str) -> Errors:
    errs = _validate_reference(as_dict(source.get("describedObject")), f"{path}.describedObject")
    errs += _validate_identifier(as_dict(source.get("metric")), f"{path}.metric")
    errs += _validate_target(_target(source), f"{path}.target")
    target = _target(source)
    if target.get("value") is None and target.get("averageValue") is None:
        errs.append(
            FieldError.required(
                f"{path}.target.averageValue", "must set either a target value or averageValue"
            )
        )
    return errs


def _validate_external_source(source: Obj, path: str) -> Errors:
    errs = _validate_identifier(as_dict(source.get("metric")), f"{path}.metric")
    target = _target(source)
    return (
        errs
        + _validate_target(target, f"{path}.target")
        + _exactly_one(
            target,
            f"{path}.target",
            ("averageValue", "must set either a target value for metric or a per-pod target"),
            ("value", "may not set both a target value for metric and a per-pod target"),
            ("value", "averageValue"),
        )
    )


def _validate_pods_source(source: Obj, path: str) -> Errors:
    errs = _validate_identifier(as_dict(source.get("metric")), f"{path}.metric")
    target = _target(source)
    errs += _validate_target(target, f"{path}.target")
    if target.get("averageValue") is None:
        errs.append(
            FieldError.required(
                f"{path}.target.averageValue", "must specify a positive target averageValue"
            )
        )
    return errs


def _validate_resource_target(target: Obj, path: str) -> Errors:
    return _validate_target(target, path) + _exactly_one(
        target,
        path,
        ("averageUtilization", "must set either a target raw value or a target utilization"),
        ("averageValue", "may not set both a target raw value and a target utilization"),
        ("averageUtilization", "averageValue"),
    )


def _exactly_one(
    target: Obj,
    path: str,
    missing: tuple[str, str],
    both: tuple[str, str],
    fields: tuple[str, str],
) -> Errors:
    """One of the two target `fields` set, not both: each failure reported at its (field,
    message)."""
    given = [target.get(field) is not None for field in fields]
    if not any(given):
        return [FieldError.required(f"{path}.{missing[0]}", missing[1])]
    if all(given):
        return [FieldError.forbidden(f"{path}.{both[0]}", both[1])]
    return []


def _validate_resource_source(source: Obj, path: str) -> Errors:
    errs: Errors = []
    if not source.get("name"):
        errs.append(FieldError.required(f"{path}.name", "must specify a resource name"))
    return errs + _validate_resource_target(_target(source), f"{path}.target")


def _validate_container_resource_source(source: Obj, path: str) -> Errors:
    errs: Errors = []
    name = source.get("name")
    if not name:
        errs.append(FieldError.required(f"{path}.name", "must specify a resource name"))
    elif isinstance(name, str):
        errs += _validate_container_resource_name(name, f"{path}.name")
    container = source.get("container")
    if not container:
        errs.append(FieldError.required(f"{path}.container", "must specify a container"))
    elif isinstance(container, str):
        errs += each(is_dns1123_label(container), f"{path}.container", container)
    return errs + _validate_resource_target(_target(source), f"{path}.target")


def _validate_container_resource_name(name: str, path: str) -> Errors:
    """A resource a container may request (pkg/apis/core/v1/validation's
    ValidateContainerResourceName): a qualified name, and without a domain a standard one."""
    errs = each(is_qualified_name(name), path, name)
    if "/" not in name and not (name in _CONTAINER_RESOURCES or name.startswith("hugepages-")):
        errs.append(FieldError.invalid(path, name, "must be a standard resource for containers"))
    return errs


def _validate_target(target: Obj, path: str) -> Errors:
    """validateMetricTarget: a known type; values, when given, positive."""
    errs: Errors = []
    kind = target.get("type")
    if not kind:
        errs.append(FieldError.required(f"{path}.type", "must specify a metric target type"))
    if kind not in _TARGET_TYPES:
        errs.append(
            FieldError.invalid(
                f"{path}.type", kind or "", "must be either Utilization, Value, or AverageValue"
            )
        )
    for key in ("value", "averageValue"):
        raw = target.get(key)
        if raw is not None:
            amount = decode_quantity(raw)
            if amount is None or amount <= 0:
                errs.append(FieldError.invalid(f"{path}.{key}", raw, "must be positive"))
    utilization = _int(target.get("averageUtilization"))
    if utilization is not None and utilization < 1:
        errs.append(
            FieldError.invalid(f"{path}.averageUtilization", utilization, "must be greater than 0")
        )
    return errs


def _validate_identifier(identifier: Obj, path: str) -> Errors:
    name = identifier.get("name")
    if not name:
        return [FieldError.required(f"{path}.name", "must specify a metric name")]
    return each(is_path_segment_name(str(name)), f"{path}.name", name)


def _validate_scaling_rules(rules: Obj, path: str) -> Errors:
    errs: Errors = []
    window = _int(rules.get("stabilizationWindowSeconds"))
    if window is not None and window < 0:
        errs.append(
            FieldError.invalid(
                f"{path}.stabilizationWindowSeconds",
                window,
                "must be greater than or equal to zero",
            )
        )
    if window is not None and window > MAX_STABILIZATION_WINDOW_SECONDS:
        errs.append(
            FieldError.invalid(
                f"{path}.stabilizationWindowSeconds",
                window,
                f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}",
            )
        )
    select = rules.get("selectPolicy")
    if select is not None and select not in _SELECT_POLICIES:
        errs.append(FieldError.not_supported(f"{path}.selectPolicy", select, _SELECT_POLICIES))
    policies = as_list(rules.get("policies"))
    if not policies:
        errs.append(FieldError.required(f"{path}.policies", "must specify at least one Policy"))
    for index, policy in enumerate(policies):
        errs += _validate_policy(as_dict(policy), f"{path}.policies[{index}]")
    return errs


def _validate_policy(policy: Obj, path: str) -> Errors:
    errs: Errors = []
    kind = policy.get("type")
    if kind not in _POLICY_TYPES:
        errs.append(FieldError.not_supported(f"{path}.type", kind or "", _POLICY_TYPES))
    value = _int(policy.get("value")) or 0
    if value <= 0:
        errs.append(FieldError.invalid(f"{path}.value", value, "must be greater than zero"))
    period = _int(policy.get("periodSeconds")) or 0
    if period <= 0:
        errs.append(
            FieldError.invalid(f"{path}.periodSeconds", period, "must be greater than zero")
        )
    if period > MAX_PERIOD_SECONDS:
        errs.append(
            FieldError.invalid(
                f"{path}.periodSeconds",
                period,
                f"must be less than or equal to {MAX_PERIOD_SECONDS}",
            )
        )
    return errs


_SOURCE_CHECKS = {
    "object": _validate_object_source,
    "pods": _validate_pods_source,
    "resource": _validate_resource_source,
    "external": _validate_external_source,
    "containerResource": _validate_container_resource_source,
}
