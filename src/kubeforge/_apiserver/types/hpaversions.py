"""HorizontalPodAutoscalers between autoscaling/v1 and autoscaling/v2 (the stored version).

autoscaling/v1 knows one target, the CPU utilization; everything else a v2 object holds
travels in annotations through v1 clients, as kube-apiserver keeps it
(pkg/apis/autoscaling/v1/conversion.go): the other metrics and the current metrics in
autoscaling/v1's own MetricSpec and MetricStatus shapes, the conditions, and the behavior in
the field names of the internal Go type. Reading as v1 adds them; writing as v1 reads them
back (and drops them), so a v1 client's update keeps what it could not see.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from kubeforge._api.machinery.access import as_dict, as_list
from kubeforge._api.machinery.quantity import decode_quantity

__all__ = ["hpa_v1_to_v2", "hpa_v2_to_v1"]

Obj = dict[str, Any]

METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_ANNOTATIONS = (METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR)
# The target autoscaling/v1 always meant when none is given.
DEFAULT_CPU_UTILIZATION = 80
# Fields both versions spell alike.
_SAME_SPEC = ("scaleTargetRef", "minReplicas", "maxReplicas")
_SAME_STATUS = ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _put(out: Obj, key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def _is_cpu_utilization(metric: Any) -> bool:
    metric = as_dict(metric)
    resource = as_dict(metric.get("resource"))
    return (
        metric.get("type") == "Resource"
        and resource.get("name") == "cpu"
        and as_dict(resource.get("target")).get("averageUtilization") is not None
    )


# -- metric shapes ----------------------------------------------------------------------------

# autoscaling/v1 (like v2beta1) spells a metric source flat: each (v1 field, where in the v2
# source, v2 field). Where: "" the source itself, "metric" its MetricIdentifier, _VALUE the
# MetricTarget of a spec or the MetricValueStatus of a status. `{}` in a v1 field stands for
# "target" or "current" (targetAverageValue, currentAverageValue).
_VALUE = "value"
_RESOURCE = (
    ("name", "", "name"),
    ("{}AverageUtilization", _VALUE, "averageUtilization"),
    ("{}AverageValue", _VALUE, "averageValue"),
    ("container", "", "container"),
)
_FLAT_FIELDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "resource": _RESOURCE,
    "containerResource": _RESOURCE,
    "pods": (
        ("metricName", "metric", "name"),
        ("{}AverageValue", _VALUE, "averageValue"),
        ("selector", "metric", "selector"),
    ),
    "object": (
        ("target", "", "describedObject"),
        ("metricName", "metric", "name"),
        ("{}Value", _VALUE, "value"),
        ("selector", "metric", "selector"),
        ("averageValue", _VALUE, "averageValue"),
    ),
    "external": (
        ("metricName", "metric", "name"),
        ("metricSelector", "metric", "selector"),
        ("{}Value", _VALUE, "value"),
        ("{}AverageValue", _VALUE, "averageValue"),
    ),
}
# A v2 MetricTarget's type is that of the first of these values a v1 spec sets (the target
# then holds that value alone); with none set, the last one's type.
_RESOURCE_TARGETS = (("averageUtilization", "Utilization"), ("averageValue", "AverageValue"))
_TARGET_TYPES: dict[str, tuple[tuple[str, str], ...]] = {
    "resource": _RESOURCE_TARGETS,
    "containerResource": _RESOURCE_TARGETS,
    "pods": (("averageValue", "AverageValue"),),
    "object": (("averageValue", "AverageValue"), ("value", "Value")),
    "external": (("averageValue", "AverageValue"), ("value", "Value")),
}


def _sources(metric: Obj) -> Iterator[tuple[str, Obj, tuple[tuple[str, str, str], ...]]]:
    """The metric's sources autoscaling/v1 knows, each with its flat fields."""
    for key, source in metric.items():
        fields = _FLAT_FIELDS.get(key)
        if fields is not None and isinstance(source, dict):
            yield key, source, fields


def _to_v1(metric: Obj, side: str) -> Obj:
    """An autoscaling/v2 MetricSpec (`side` "target") or MetricStatus ("current") in
    autoscaling/v1's shape."""
    out: Obj = {"type": metric.get("type")}
    for key, source, fields in _sources(metric):
        converted: Obj = {}
        for v1_name, where, v2_name in fields:
            holder = as_dict(source.get(side if where == _VALUE else where)) if where else source
            _put(converted, v1_name.format(side), holder.get(v2_name))
        out[key] = converted
    return out


def _from_v1(metric: Obj, side: str) -> Obj:
    """autoscaling/v1's shape of a MetricSpec (`side` "target") or MetricStatus ("current")
    back in autoscaling/v2's."""
    out: Obj = {"type": metric.get("type")}
    for key, source, fields in _sources(metric):
        converted: Obj = {}
        value: Obj = {}
        for v1_name, where, v2_name in fields:
            found = source.get(v1_name.format(side))
            if where == _VALUE:
                _put(value, v2_name, found)
            elif where == "metric":
                described = converted.setdefault("metric", {"name": ""})
                if v2_name == "name":
                    described["name"] = found if isinstance(found, str) else ""
                else:
                    _put(described, v2_name, found)
            else:
                _put(converted, v2_name, found)
        converted[side] = _typed_target(key, value) if side == "target" else value
        out[key] = converted
    return out


def _typed_target(key: str, values: Obj) -> Obj:
    kinds = _TARGET_TYPES[key]
    for field, kind in kinds:
        if field in values:
            return {"type": kind, field: values[field]}
    return {"type": kinds[-1][1]}


# The behavior annotation holds the internal Go type, whose fields have no JSON names: Go's
# field names are the JSON ones with an upper-case first letter.
def _first_letters(value: Any, case: Callable[[str], str]) -> Any:
    """`value` with the first letter of every key, at every depth, in `case`."""
    if isinstance(value, dict):
        return {case(k[:1]) + k[1:]: _first_letters(v, case) for k, v in value.items()}
    if isinstance(value, list):
        return [_first_letters(v, case) for v in value]
    return value


# -- the two directions -------------------------------------------------------------------


def hpa_v2_to_v1(obj: Obj) -> Obj:
    """A stored (autoscaling/v2) HorizontalPodAutoscaler as autoscaling/v1 serves it."""
    out = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = "autoscaling/v1"
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    annotations: dict[str, str] = {}

    v1_spec: Obj = {}
    for key in _SAME_SPEC:
        _put(v1_spec, key, copy.deepcopy(spec.get(key)))
    metrics = [m for m in as_list(spec.get("metrics")) if isinstance(m, dict)]
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    if cpu is not None:
        v1_spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    others = [_to_v1(m, "target") for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRICS] = _json(others)
    if isinstance(spec.get("behavior"), dict):
        annotations[BEHAVIOR] = _json(_first_letters(spec["behavior"], str.upper))
    out["spec"] = v1_spec

    if "status" in obj:
        v1_status: Obj = {}
        for key in _SAME_STATUS:
            _put(v1_status, key, status.get(key))
        current = [m for m in as_list(status.get("currentMetrics")) if isinstance(m, dict)]
        for metric in current:
            resource = as_dict(metric.get("resource"))
            if metric.get("type") == "Resource" and resource.get("name") == "cpu":
                utilization = as_dict(resource.get("current")).get("averageUtilization")
                if utilization is not None:
                    v1_status["currentCPUUtilizationPercentage"] = utilization
        if current:
            annotations[CURRENT_METRICS] = _json([_to_v1(m, "current") for m in current])
        conditions = as_list(status.get("conditions"))
        if conditions:
            annotations[CONDITIONS] = _json(conditions)
        out["status"] = v1_status

    if annotations:
        meta = dict(as_dict(out.get("metadata")))
        meta["annotations"] = {**as_dict(meta.get("annotations")), **annotations}
        out["metadata"] = meta
    return out


# -- annotations as the Go types read them ------------------------------------------------------

# kube-apiserver reads an annotation into its Go type and ignores the annotation when that
# fails (a string where a number goes, a number out of int32's range, a quantity that does
# not parse). Each shape names its fields as they are matched: case-insensitively, as Go's
# encoding/json does, unknown ones ignored.
_INT32 = "int32"
_STRING = "string"
_QUANTITY = "quantity"
_OBJECT = "object"
Shape = str | dict[str, Any] | list[Any]
_REFERENCE: Shape = {"kind": _STRING, "name": _STRING, "apiVersion": _STRING}
_V1_RESOURCE: Shape = {
    "name": _STRING,
    "targetAverageUtilization": _INT32,
    "targetAverageValue": _QUANTITY,
    "container": _STRING,
}
# autoscaling/v1's MetricSpec (staging/src/k8s.io/api/autoscaling/v1/types.go).
_V1_METRIC: Shape = {
    "type": _STRING,
    "object": {
        "target": _REFERENCE,
        "metricName": _STRING,
        "targetValue": _QUANTITY,
        "selector": _OBJECT,
        "averageValue": _QUANTITY,
    },
    "pods": {"metricName": _STRING, "targetAverageValue": _QUANTITY, "selector": _OBJECT},
    "resource": _V1_RESOURCE,
    "containerResource": _V1_RESOURCE,
    "external": {
        "metricName": _STRING,
        "metricSelector": _OBJECT,
        "targetValue": _QUANTITY,
        "targetAverageValue": _QUANTITY,
    },
}
_SCALING_RULES: Shape = {
    "stabilizationWindowSeconds": _INT32,
    "selectPolicy": _STRING,
    "policies": [{"type": _STRING, "value": _INT32, "periodSeconds": _INT32}],
    "tolerance": _QUANTITY,
}
# The internal HorizontalPodAutoscalerBehavior (pkg/apis/autoscaling/types.go).
_BEHAVIOR: Shape = {"scaleUp": _SCALING_RULES, "scaleDown": _SCALING_RULES}


class _Unfit(Exception):
    """A value the Go type cannot hold."""


def _go_read(value: Any, shape: Shape) -> Any:
    """`value` as read into a Go value of `shape`, back in JSON (null fields dropped)."""
    if value is None:
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            raise _Unfit
        return [_go_read(item, shape[0]) for item in value]
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            raise _Unfit
        folded = {name.lower(): name for name in shape}
        out: Obj = {}
        for key, item in value.items():
            name = key if key in shape else folded.get(key.lower())
            if name is not None:
                _put(out, name, _go_read(item, shape[name]))
        return out
    fits = {
        _INT32: lambda: type(value) is int and -(2**31) <= value < 2**31,
        _STRING: lambda: isinstance(value, str),
        _QUANTITY: lambda: decode_quantity(value) is not None,
        _OBJECT: lambda: isinstance(value, dict),
    }[shape]()
    if not fits:
        raise _Unfit
    return value


def _annotation(annotations: dict[str, Any], key: str, shape: Shape | None = None) -> Any:
    """An annotation's JSON, or None when it is absent, not JSON, or (given `shape`) not
    readable into the Go type."""
    text = annotations.get(key)
    if not isinstance(text, str):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if shape is None:
        return value
    try:
        return _go_read(value, shape)
    except _Unfit:
        return None


def hpa_v1_to_v2(obj: Obj) -> Obj:
    """An autoscaling/v1 HorizontalPodAutoscaler in the stored (autoscaling/v2) form."""
    out = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = "autoscaling/v2"
    meta = dict(as_dict(obj.get("metadata")))
    annotations = dict(as_dict(meta.get("annotations")))
    spec = as_dict(obj.get("spec"))

    v2_spec: Obj = {}
    for key in _SAME_SPEC:
        _put(v2_spec, key, copy.deepcopy(spec.get(key)))
    metrics = [
        _from_v1(m, "target")
        for m in as_list(_annotation(annotations, METRICS, [_V1_METRIC]))
        if isinstance(m, dict)
    ]
    cpu = spec.get("targetCPUUtilizationPercentage")
    if cpu is None and not metrics:
        cpu = DEFAULT_CPU_UTILIZATION
    if cpu is not None:
        metrics.append(
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": cpu},
                },
            }
        )
    v2_spec["metrics"] = metrics
    behavior = _annotation(annotations, BEHAVIOR, _BEHAVIOR)
    if isinstance(behavior, dict):
        v2_spec["behavior"] = behavior
    out["spec"] = v2_spec

    if "status" in obj:
        status = as_dict(obj.get("status"))
        v2_status: Obj = {}
        for key in _SAME_STATUS:
            _put(v2_status, key, status.get(key))
        current = [
            _from_v1(m, "current")
            for m in as_list(_annotation(annotations, CURRENT_METRICS))
            if isinstance(m, dict)
        ]
        if current:
            v2_status["currentMetrics"] = current
        conditions = _annotation(annotations, CONDITIONS)
        if isinstance(conditions, list) and conditions:
            v2_status["conditions"] = conditions
        out["status"] = v2_status

    for key in _ANNOTATIONS:
        annotations.pop(key, None)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    return out
