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
from typing import Any

import orjson

from kubeforge.api.machinery.access import as_dict, as_list

__all__ = ["hpa_v1_to_v2", "hpa_v2_to_v1"]

Obj = dict[str, Any]

METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_ANNOTATIONS = (METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR)
# The target autoscaling/v1 always meant when none is given.
DEFAULT_CPU_UTILIZATION = 80


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


def _metric_to_v1(metric: Obj) -> Obj:
    """An autoscaling/v2 MetricSpec in autoscaling/v1's (v2beta1-like) shape."""
    out: Obj = {"type": metric.get("type")}
    for key, source in metric.items():
        if key == "type" or not isinstance(source, dict):
            continue
        target = as_dict(source.get("target"))
        described = as_dict(source.get("metric"))
        converted: Obj = {}
        if key in ("resource", "containerResource"):
            _put(converted, "name", source.get("name"))
            _put(converted, "targetAverageUtilization", target.get("averageUtilization"))
            _put(converted, "targetAverageValue", target.get("averageValue"))
            _put(converted, "container", source.get("container"))
        elif key == "pods":
            _put(converted, "metricName", described.get("name"))
            _put(converted, "targetAverageValue", target.get("averageValue"))
            _put(converted, "selector", described.get("selector"))
        elif key == "object":
            _put(converted, "target", source.get("describedObject"))
            _put(converted, "metricName", described.get("name"))
            _put(converted, "targetValue", target.get("value"))
            _put(converted, "selector", described.get("selector"))
            _put(converted, "averageValue", target.get("averageValue"))
        elif key == "external":
            _put(converted, "metricName", described.get("name"))
            _put(converted, "metricSelector", described.get("selector"))
            _put(converted, "targetValue", target.get("value"))
            _put(converted, "targetAverageValue", target.get("averageValue"))
        else:
            continue
        out[key] = converted
    return out


def _metric_from_v1(metric: Obj) -> Obj:
    """autoscaling/v1's MetricSpec shape back to an autoscaling/v2 MetricSpec."""
    out: Obj = {"type": metric.get("type")}
    for key, source in metric.items():
        if key == "type" or not isinstance(source, dict):
            continue
        target: Obj = {}
        converted: Obj = {}
        if key in ("resource", "containerResource"):
            _put(converted, "name", source.get("name"))
            if source.get("targetAverageUtilization") is not None:
                target = {
                    "type": "Utilization",
                    "averageUtilization": source["targetAverageUtilization"],
                }
            else:
                target = {"type": "AverageValue"}
                _put(target, "averageValue", source.get("targetAverageValue"))
            _put(converted, "container", source.get("container"))
        elif key == "pods":
            converted["metric"] = _identifier(source.get("metricName"), source.get("selector"))
            target = {"type": "AverageValue"}
            _put(target, "averageValue", source.get("targetAverageValue"))
        elif key == "object":
            _put(converted, "describedObject", source.get("target"))
            converted["metric"] = _identifier(source.get("metricName"), source.get("selector"))
            if source.get("averageValue") is not None:
                target = {"type": "AverageValue", "averageValue": source["averageValue"]}
            else:
                target = {"type": "Value"}
                _put(target, "value", source.get("targetValue"))
        elif key == "external":
            converted["metric"] = _identifier(
                source.get("metricName"), source.get("metricSelector")
            )
            if source.get("targetAverageValue") is not None:
                target = {"type": "AverageValue", "averageValue": source["targetAverageValue"]}
            else:
                target = {"type": "Value"}
                _put(target, "value", source.get("targetValue"))
        else:
            continue
        converted["target"] = target
        out[key] = converted
    return out


def _identifier(name: Any, selector: Any) -> Obj:
    out: Obj = {"name": name if isinstance(name, str) else ""}
    _put(out, "selector", selector)
    return out


def _status_to_v1(metric: Obj) -> Obj:
    """An autoscaling/v2 MetricStatus in autoscaling/v1's shape."""
    out: Obj = {"type": metric.get("type")}
    for key, source in metric.items():
        if key == "type" or not isinstance(source, dict):
            continue
        current = as_dict(source.get("current"))
        described = as_dict(source.get("metric"))
        converted: Obj = {}
        if key in ("resource", "containerResource"):
            _put(converted, "name", source.get("name"))
            _put(converted, "currentAverageUtilization", current.get("averageUtilization"))
            _put(converted, "currentAverageValue", current.get("averageValue"))
            _put(converted, "container", source.get("container"))
        elif key == "pods":
            _put(converted, "metricName", described.get("name"))
            _put(converted, "currentAverageValue", current.get("averageValue"))
            _put(converted, "selector", described.get("selector"))
        elif key == "object":
            _put(converted, "target", source.get("describedObject"))
            _put(converted, "metricName", described.get("name"))
            _put(converted, "currentValue", current.get("value"))
            _put(converted, "selector", described.get("selector"))
            _put(converted, "averageValue", current.get("averageValue"))
        elif key == "external":
            _put(converted, "metricName", described.get("name"))
            _put(converted, "metricSelector", described.get("selector"))
            _put(converted, "currentValue", current.get("value"))
            _put(converted, "currentAverageValue", current.get("averageValue"))
        else:
            continue
        out[key] = converted
    return out


def _status_from_v1(metric: Obj) -> Obj:
    out: Obj = {"type": metric.get("type")}
    for key, source in metric.items():
        if key == "type" or not isinstance(source, dict):
            continue
        current: Obj = {}
        converted: Obj = {}
        if key in ("resource", "containerResource"):
            _put(converted, "name", source.get("name"))
            _put(current, "averageUtilization", source.get("currentAverageUtilization"))
            _put(current, "averageValue", source.get("currentAverageValue"))
            _put(converted, "container", source.get("container"))
        elif key == "pods":
            converted["metric"] = _identifier(source.get("metricName"), source.get("selector"))
            _put(current, "averageValue", source.get("currentAverageValue"))
        elif key == "object":
            _put(converted, "describedObject", source.get("target"))
            converted["metric"] = _identifier(source.get("metricName"), source.get("selector"))
            _put(current, "value", source.get("currentValue"))
            _put(current, "averageValue", source.get("averageValue"))
        elif key == "external":
            converted["metric"] = _identifier(
                source.get("metricName"), source.get("metricSelector")
            )
            _put(current, "value", source.get("currentValue"))
            _put(current, "averageValue", source.get("currentAverageValue"))
        else:
            continue
        converted["current"] = current
        out[key] = converted
    return out


# The behavior annotation holds the internal Go type, whose fields have no JSON names.
def _go_names(value: Any) -> Any:
    if isinstance(value, dict):
        return {k[:1].upper() + k[1:]: _go_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go_names(v) for v in value]
    return value


def _json_names(value: Any) -> Any:
    if isinstance(value, dict):
        return {k[:1].lower() + k[1:]: _json_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_names(v) for v in value]
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
    for key in ("scaleTargetRef", "minReplicas", "maxReplicas"):
        _put(v1_spec, key, copy.deepcopy(spec.get(key)))
    metrics = [m for m in as_list(spec.get("metrics")) if isinstance(m, dict)]
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    if cpu is not None:
        v1_spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    others = [_metric_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRICS] = _json(others)
    if isinstance(spec.get("behavior"), dict):
        annotations[BEHAVIOR] = _json(_go_names(spec["behavior"]))
    out["spec"] = v1_spec

    if "status" in obj:
        v1_status: Obj = {}
        for key in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"):
            _put(v1_status, key, status.get(key))
        current = [m for m in as_list(status.get("currentMetrics")) if isinstance(m, dict)]
        for metric in current:
            resource = as_dict(metric.get("resource"))
            if metric.get("type") == "Resource" and resource.get("name") == "cpu":
                utilization = as_dict(resource.get("current")).get("averageUtilization")
                if utilization is not None:
                    v1_status["currentCPUUtilizationPercentage"] = utilization
        if current:
            annotations[CURRENT_METRICS] = _json([_status_to_v1(m) for m in current])
        conditions = as_list(status.get("conditions"))
        if conditions:
            annotations[CONDITIONS] = _json(conditions)
        out["status"] = v1_status

    if annotations:
        meta = dict(as_dict(out.get("metadata")))
        meta["annotations"] = {**as_dict(meta.get("annotations")), **annotations}
        out["metadata"] = meta
    return out


def _annotation(annotations: dict[str, Any], key: str) -> Any:
    text = annotations.get(key)
    if not isinstance(text, str):
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def hpa_v1_to_v2(obj: Obj) -> Obj:
    """An autoscaling/v1 HorizontalPodAutoscaler in the stored (autoscaling/v2) form."""
    out = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = "autoscaling/v2"
    meta = dict(as_dict(obj.get("metadata")))
    annotations = dict(as_dict(meta.get("annotations")))
    spec = as_dict(obj.get("spec"))

    v2_spec: Obj = {}
    for key in ("scaleTargetRef", "minReplicas", "maxReplicas"):
        _put(v2_spec, key, copy.deepcopy(spec.get(key)))
    metrics = [
        _metric_from_v1(m)
        for m in as_list(_annotation(annotations, METRICS))
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
    behavior = _annotation(annotations, BEHAVIOR)
    if isinstance(behavior, dict):
        v2_spec["behavior"] = _json_names(behavior)
    out["spec"] = v2_spec

    if "status" in obj:
        status = as_dict(obj.get("status"))
        v2_status: Obj = {}
        for key in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"):
            _put(v2_status, key, status.get(key))
        current = [
            _status_from_v1(m)
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
