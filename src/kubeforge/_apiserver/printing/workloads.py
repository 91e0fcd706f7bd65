"""`kubectl get` columns of workload kinds: apps/v1 (Deployment, ReplicaSet, StatefulSet,
DaemonSet, ControllerRevision), batch/v1 (Job, CronJob), autoscaling (the
HorizontalPodAutoscaler's targets, read as autoscaling/v2) and policy/v1's
PodDisruptionBudget, as pkg/printers/internalversion/printers.go prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubeforge._api.machinery.access import as_dict, as_int, as_list, meta_of, name_of
from kubeforge._api.machinery.durations import human_duration
from kubeforge._api.machinery.timestamps import parse_time_or_none
from kubeforge._apiserver.printing.columns import (
    AGE,
    CONTAINERS,
    IMAGES,
    NAME,
    REPLICA_COLUMNS,
    Cells,
    Column,
    Obj,
    Printer,
    container_cells,
    first_condition_true,
    format_label_selector,
    format_labels,
    int_or_string,
    lower_group_kind,
    object_age,
    quantity_ref,
    selector_column,
    selector_string,
    since,
    template_spec,
)
from kubeforge._apiserver.types.hpaversions import hpa_v1_to_v2

__all__ = ["PRINTERS"]


def _deployment_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    names, images = container_cells(template_spec(obj))
    selector = selector_string(spec.get("selector")) if spec.get("selector") else ""
    return [
        name_of(obj),
        f"{as_int(status.get('readyReplicas'), 0)}/{as_int(spec.get('replicas', 1), 0)}",
        as_int(status.get("updatedReplicas"), 0),
        as_int(status.get("availableReplicas"), 0),
        object_age(obj, now),
        names,
        images,
        "<invalid>" if selector is None else selector,
    ]


def _replica_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    names, images = container_cells(template_spec(obj))
    return [
        name_of(obj),
        as_int(spec.get("replicas", 1), 0),
        as_int(status.get("replicas"), 0),
        as_int(status.get("readyReplicas"), 0),
        object_age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _stateful_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    names, images = container_cells(template_spec(obj))
    return [
        name_of(obj),
        f"{as_int(status.get('readyReplicas'), 0)}/{as_int(spec.get('replicas', 1), 0)}",
        object_age(obj, now),
        names,
        images,
    ]


def _daemon_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    pod_spec = template_spec(obj)
    names, images = container_cells(pod_spec)
    return [
        name_of(obj),
        as_int(status.get("desiredNumberScheduled"), 0),
        as_int(status.get("currentNumberScheduled"), 0),
        as_int(status.get("numberReady"), 0),
        as_int(status.get("updatedNumberScheduled"), 0),
        as_int(status.get("numberAvailable"), 0),
        format_labels(pod_spec.get("nodeSelector")),
        object_age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _controller_revision_cells(obj: Obj, now: datetime) -> Cells:
    controller = "<none>"
    for ref in as_list(meta_of(obj).get("ownerReferences")):
        ref = as_dict(ref)
        if ref.get("controller") is True:
            kind = lower_group_kind(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
            name = str(ref.get("name") or "")
            controller = f"{kind}/{name}" if kind else name
            break
    return [name_of(obj), controller, as_int(obj.get("revision"), 0), object_age(obj, now)]


def _job_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    succeeded = as_int(status.get("succeeded"), 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{as_int(spec.get('completions'), 0)}"
    else:
        parallelism = as_int(spec.get("parallelism"), 0)
        completions = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    started = parse_time_or_none(status.get("startTime"))
    finished = parse_time_or_none(status.get("completionTime"))
    duration = ""
    if started is not None:
        end = finished if finished is not None else now
        duration = human_duration((end - started).total_seconds())
    conditions = status.get("conditions")
    if first_condition_true(conditions, "Complete"):
        state = "Complete"
    elif first_condition_true(conditions, "Failed"):
        state = "Failed"
    elif meta_of(obj).get("deletionTimestamp"):
        state = "Terminating"
    elif first_condition_true(conditions, "Suspended"):
        state = "Suspended"
    elif first_condition_true(conditions, "FailureTarget"):
        state = "FailureTarget"
    else:
        state = "Running"
    names, images = container_cells(template_spec(obj))
    return [
        name_of(obj),
        state,
        completions,
        duration,
        object_age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _cron_job_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    job_spec = as_dict(as_dict(spec.get("jobTemplate")).get("spec"))
    names, images = container_cells(as_dict(as_dict(job_spec.get("template")).get("spec")))
    suspend = spec.get("suspend")
    last = status.get("lastScheduleTime")
    return [
        name_of(obj),
        str(spec.get("schedule") or ""),
        spec.get("timeZone") or "<none>",
        "<unset>" if suspend is None else ("True" if suspend else "False"),
        len(as_list(status.get("active"))),
        since(last, now) if last else "<none>",
        object_age(obj, now),
        names,
        images,
        format_label_selector(job_spec.get("selector")),
    ]


def _metric_text(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    kind = spec.get("type")
    if kind in ("External", "Object"):
        key = "external" if kind == "External" else "object"
        target = as_dict(as_dict(spec.get(key)).get("target"))
        current_status = status.get(key)
        current = as_dict(as_dict(current_status).get("current"))
        if target.get("averageValue") is not None:
            value = "<unknown>"
            if isinstance(current_status, Mapping) and current.get("averageValue") is not None:
                value = str(current["averageValue"])
            return f"{value}/{target['averageValue']} (avg)"
        value = "<unknown>"
        if isinstance(current_status, Mapping):
            value = quantity_ref(current.get("value"))
        return f"{value}/{quantity_ref(target.get('value'))}"
    if kind == "Pods":
        target = as_dict(as_dict(spec.get("pods")).get("target"))
        value = "<unknown>"
        if isinstance(status.get("pods"), Mapping):
            value = quantity_ref(as_dict(status["pods"].get("current")).get("averageValue"))
        return f"{value}/{quantity_ref(target.get('averageValue'))}"
    if kind in ("Resource", "ContainerResource"):
        key = "resource" if kind == "Resource" else "containerResource"
        source = as_dict(spec.get(key))
        target = as_dict(source.get("target"))
        name = str(source.get("name") or "")
        current_status = status.get(key)
        current = as_dict(as_dict(current_status).get("current"))
        if target.get("averageValue") is not None:
            value = "<unknown>"
            if isinstance(current_status, Mapping):
                value = quantity_ref(current.get("averageValue"))
            return f"{name}: {value}/{target['averageValue']}"
        value = "<unknown>"
        if isinstance(current_status, Mapping) and current.get("averageUtilization") is not None:
            value = f"{current['averageUtilization']}%"
        goal = "<auto>"
        if target.get("averageUtilization") is not None:
            goal = f"{target['averageUtilization']}%"
        return f"{name}: {value}/{goal}"
    return "<unknown type>"


def _hpa_metrics(specs: list[Any], statuses: list[Any]) -> str:
    if not specs:
        return "<none>"
    limit = 2
    items = [
        _metric_text(as_dict(spec), as_dict(statuses[i]) if i < len(statuses) else {})
        for i, spec in enumerate(specs)
    ]
    text = ", ".join(items[:limit])
    if len(items) > limit:
        return f"{text} + {len(items) - limit} more..."
    return text


def _hpa_cells(obj: Obj, now: datetime) -> Cells:
    if obj.get("apiVersion") == "autoscaling/v1":
        obj = hpa_v1_to_v2(dict(obj))  # printed from the full (stored) form, as upstream does
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    ref = as_dict(spec.get("scaleTargetRef"))
    minimum = spec.get("minReplicas")
    return [
        name_of(obj),
        f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
        _hpa_metrics(as_list(spec.get("metrics")), as_list(status.get("currentMetrics"))),
        "<unset>" if minimum is None else str(minimum),
        as_int(spec.get("maxReplicas"), 0),
        as_int(status.get("currentReplicas"), 0),
        object_age(obj, now),
    ]


def _pdb_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    low, high = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [
        name_of(obj),
        "N/A" if low is None else int_or_string(low),
        "N/A" if high is None else int_or_string(high),
        as_int(as_dict(obj.get("status")).get("disruptionsAllowed"), 0),
        object_age(obj, now),
    ]


PRINTERS: dict[tuple[str, str], Printer] = {
    ("apps", "Deployment"): Printer(
        (
            NAME,
            Column("Ready", "string", "Ready replicas out of desired replicas."),
            Column("Up-to-date", "string", "Replicas running the latest pod template."),
            Column("Available", "string", "Replicas available to serve."),
            AGE,
            CONTAINERS,
            IMAGES,
            selector_column("the deployment manages"),
        ),
        _deployment_cells,
    ),
    ("apps", "ReplicaSet"): Printer(
        (NAME, *REPLICA_COLUMNS, AGE, CONTAINERS, IMAGES, selector_column("it manages")),
        _replica_set_cells,
    ),
    ("apps", "StatefulSet"): Printer(
        (
            NAME,
            Column("Ready", "string", "Ready replicas out of desired replicas."),
            AGE,
            CONTAINERS,
            IMAGES,
        ),
        _stateful_set_cells,
    ),
    ("apps", "DaemonSet"): Printer(
        (
            NAME,
            Column("Desired", "integer", "Nodes that should run the daemon pod."),
            Column("Current", "integer", "Nodes that run at least one daemon pod."),
            Column("Ready", "integer", "Nodes whose daemon pod is ready."),
            Column("Up-to-date", "integer", "Nodes running the latest pod template."),
            Column("Available", "integer", "Nodes whose daemon pod is available."),
            Column("Node Selector", "string", "Labels a node needs to run the daemon pod."),
            AGE,
            CONTAINERS,
            IMAGES,
            selector_column("the daemon set manages"),
        ),
        _daemon_set_cells,
    ),
    ("apps", "ControllerRevision"): Printer(
        (
            NAME,
            Column("Controller", "string", "The object owning this revision."),
            Column("Revision", "string", "The revision number."),
            AGE,
        ),
        _controller_revision_cells,
    ),
    ("batch", "Job"): Printer(
        (
            NAME,
            Column("Status", "string", "The state of the job."),
            Column("Completions", "string", "Succeeded pods out of the completions wanted."),
            Column("Duration", "string", "How long the job ran, or has been running."),
            AGE,
            CONTAINERS,
            IMAGES,
            selector_column("of the job"),
        ),
        _job_cells,
    ),
    ("batch", "CronJob"): Printer(
        (
            NAME,
            Column("Schedule", "string", "The cron schedule."),
            Column("Timezone", "string", "The time zone of the schedule."),
            Column("Suspend", "boolean", "Whether new runs are suspended."),
            Column("Active", "integer", "Number of jobs currently running."),
            Column("Last Schedule", "string", "Time since a job was last scheduled."),
            AGE,
            CONTAINERS,
            IMAGES,
            selector_column("of the jobs"),
        ),
        _cron_job_cells,
    ),
    ("autoscaling", "HorizontalPodAutoscaler"): Printer(
        (
            NAME,
            Column("Reference", "string", "The scaled object, as Kind/name."),
            Column("Targets", "string", "Current and target values of the metrics."),
            Column("MinPods", "string", "The lower replica bound."),
            Column("MaxPods", "string", "The upper replica bound."),
            Column("Replicas", "string", "The current number of replicas."),
            AGE,
        ),
        _hpa_cells,
    ),
    ("policy", "PodDisruptionBudget"): Printer(
        (
            NAME,
            Column("Min Available", "string", "Pods that must stay available."),
            Column("Max Unavailable", "string", "Pods that may be unavailable."),
            Column("Allowed Disruptions", "integer", "Pods that may be disrupted right now."),
            AGE,
        ),
        _pdb_cells,
    ),
}
