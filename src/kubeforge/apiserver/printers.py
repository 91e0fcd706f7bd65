"""`kubectl get` columns for built-in kinds: the column set and cell logic of each printer.

The server always fills every column, wide ones included; clients hide columns whose
priority is above zero unless asked for wide output. Cells follow the Kubernetes printers:
ages are human durations, counts are integers, absent values print as `<none>`,
`<unset>` or `<unknown>` exactly where Kubernetes prints them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubeforge.api.machinery.access import as_dict, as_int, as_list, meta_of, name_of
from kubeforge.api.machinery.durations import age, human_duration
from kubeforge.api.machinery.selectors import SelectorError, selector_from_dict
from kubeforge.api.machinery.timestamps import parse_time_or_none
from kubeforge.apiserver.hpaversions import hpa_v1_to_v2

__all__ = [
    "Column",
    "Printer",
    "format_label_selector",
    "format_labels",
    "pod_status",
    "printer_for",
]

Obj = Mapping[str, Any]
Cells = list[Any]


@dataclass(frozen=True, slots=True)
class Column:
    """One column definition of a Table."""

    name: str
    type: str
    description: str
    priority: int = 0
    format: str = ""

    def definition(self) -> dict[str, Any]:
        """The `columnDefinitions` entry; every key is always present."""
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


@dataclass(frozen=True, slots=True)
class Printer:
    """Columns plus the function computing one object's cells (and optional row conditions)."""

    columns: tuple[Column, ...]
    cells: Callable[[Obj, datetime], Cells]
    conditions: Callable[[Obj], list[dict[str, Any]] | None] | None = None

    def definitions(self) -> list[dict[str, Any]]:
        return [c.definition() for c in self.columns]


# ---------------------------------------------------------------------------------------------
# Shared columns and helpers

NAME_DESCRIPTION = (
    "The object's name, unique among objects of its kind in its namespace (or in the "
    "cluster, for cluster-scoped kinds)."
)
AGE_DESCRIPTION = "Time elapsed since the object was created (metadata.creationTimestamp)."

NAME = Column("Name", "string", NAME_DESCRIPTION, format="name")
AGE = Column("Age", "string", AGE_DESCRIPTION)
CONTAINERS = Column("Containers", "string", "Names of the containers in the pod template.", 1)
IMAGES = Column("Images", "string", "Images of the containers in the pod template.", 1)


def _age(obj: Obj, now: datetime) -> str:
    return age(meta_of(obj).get("creationTimestamp"), now)


def _since(timestamp: Any, now: datetime) -> str:
    return age(timestamp if isinstance(timestamp, str) else None, now)


def _container_cells(pod_spec: Any) -> tuple[str, str]:
    containers = as_list(as_dict(pod_spec).get("containers"))
    names = ",".join(str(as_dict(c).get("name") or "") for c in containers)
    images = ",".join(str(as_dict(c).get("image") or "") for c in containers)
    return names, images


def _template_spec(obj: Obj) -> Mapping[str, Any]:
    return as_dict(as_dict(as_dict(obj.get("spec")).get("template")).get("spec"))


def format_labels(labels: Any) -> str:
    """`a=b,c=d` sorted by key, or `<none>`."""
    labels = as_dict(labels)
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


_SELECTOR_OPS = {"In": " in ", "NotIn": " notin "}


def _selector_string(selector: Any) -> str | None:
    """A structured label selector as selector text; None when it is malformed."""
    selector = as_dict(selector)
    reqs: list[tuple[str, str]] = []
    for key, value in as_dict(selector.get("matchLabels")).items():
        reqs.append((key, f"{key}={value}"))
    for expr in as_list(selector.get("matchExpressions")):
        expr = as_dict(expr)
        key, op = str(expr.get("key") or ""), expr.get("operator")
        values = sorted(str(v) for v in as_list(expr.get("values")))
        if op in _SELECTOR_OPS:
            if not values:
                return None
            reqs.append((key, f"{key}{_SELECTOR_OPS[op]}({','.join(values)})"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                return None
            reqs.append((key, key if op == "Exists" else f"!{key}"))
        else:
            return None
    reqs.sort(key=lambda r: r[0])
    return ",".join(text for _, text in reqs)


def format_label_selector(selector: Any) -> str:
    """A structured label selector as text; `<none>` when empty, `<error>` when malformed."""
    text = _selector_string(selector)
    if text is None:
        return "<error>"
    return text or "<none>"


def _int_or_string(value: Any) -> str:
    return str(value)


def _quantity(value: Any) -> str:
    """A quantity that is a plain value in the API: absent reads as zero."""
    return "0" if value is None else str(value)


def _quantity_ref(value: Any) -> str:
    """A quantity that is optional in the API: absent reads as `<nil>`."""
    return "<nil>" if value is None else str(value)


def _lower_group_kind(api_version: str, kind: str) -> str:
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return (f"{kind}.{group}" if group else kind).lower()


def _with_more(items: list[str], total: int, limit: int, empty: str) -> str:
    text = ",".join(items)
    if total > limit:
        return f"{text} + {total - limit} more..."
    return text or empty


def _lb_ingress(status: Any) -> str:
    found = set()
    for entry in as_list(as_dict(as_dict(status).get("loadBalancer")).get("ingress")):
        entry = as_dict(entry)
        if entry.get("ip"):
            found.add(str(entry["ip"]))
        elif entry.get("hostname"):
            found.add(str(entry["hostname"]))
    return ",".join(sorted(found))


def _first_condition_true(conditions: Any, kind: str) -> bool:
    for cond in as_list(conditions):
        cond = as_dict(cond)
        if cond.get("type") == kind:
            return bool(cond.get("status") == "True")
    return False


# ---------------------------------------------------------------------------------------------
# core/v1 Pod

POD_COLUMNS = (
    NAME,
    Column("Ready", "string", "Ready containers out of all containers of the pod."),
    Column("Status", "string", "A summary of the pod's phase and its containers' states."),
    Column(
        "Restarts",
        "string",
        "Container restarts in the pod, and how long ago the last one happened.",
    ),
    AGE,
    Column("IP", "string", "The pod's primary IP address.", 1),
    Column("Node", "string", "The node the pod is bound to.", 1),
    Column("Nominated Node", "string", "The node the scheduler nominated by preemption.", 1),
    Column("Readiness Gates", "string", "Readiness gates satisfied out of those declared.", 1),
)

_NODE_LOST = "NodeLost"


def _is_restartable(container: Any) -> bool:
    return as_dict(container).get("restartPolicy") == "Always"


def _later(current: datetime | None, state: Any) -> datetime | None:
    finished = parse_time_or_none(as_dict(as_dict(state).get("terminated")).get("finishedAt"))
    if finished is not None and (current is None or finished > current):
        return finished
    return current


def _terminated_reason(terminated: Mapping[str, Any], prefix: str) -> str:
    reason = terminated.get("reason")
    if reason:
        return f"{prefix}{reason}"
    signal = as_int(terminated.get("signal"), 0)
    if signal:
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{as_int(terminated.get('exitCode'), 0)}"


def pod_status(pod: Obj, now: datetime) -> tuple[str, str, str]:
    """The READY, STATUS and RESTARTS cells of a pod, as `kubectl get pods` shows them."""
    spec, status = as_dict(pod.get("spec")), as_dict(pod.get("status"))
    init_specs = as_list(spec.get("initContainers"))
    restartable = {str(as_dict(c).get("name")) for c in init_specs if _is_restartable(c)}
    total = len(as_list(spec.get("containers"))) + len(restartable)
    ready = 0
    restarts = restartable_restarts = 0
    last_restart: datetime | None = None
    last_restartable_restart: datetime | None = None

    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    conditions = as_list(status.get("conditions"))
    for cond in conditions:
        cond = as_dict(cond)
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    initializing = False
    for i, cs in enumerate(as_list(status.get("initContainerStatuses"))):
        cs = as_dict(cs)
        count = as_int(cs.get("restartCount"), 0)
        restarts += count
        last_restart = _later(last_restart, cs.get("lastState"))
        is_sidecar = cs.get("name") in restartable
        if is_sidecar:
            restartable_restarts += count
            last_restartable_restart = _later(last_restartable_restart, cs.get("lastState"))
        state = as_dict(cs.get("state"))
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(terminated, Mapping) and as_int(terminated.get("exitCode"), 0) == 0:
            continue
        if is_sidecar and cs.get("started") is True:
            if cs.get("ready"):
                ready += 1
            continue
        if isinstance(terminated, Mapping):
            reason = _terminated_reason(terminated, "Init:")
        elif (
            isinstance(waiting, Mapping)
            and waiting.get("reason")
            and waiting.get("reason") != "PodInitializing"
        ):
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _first_condition_true(conditions, "Initialized"):
        restarts, last_restart = restartable_restarts, last_restartable_restart
        has_running = False
        for cs in reversed(as_list(status.get("containerStatuses"))):
            cs = as_dict(cs)
            restarts += as_int(cs.get("restartCount"), 0)
            last_restart = _later(last_restart, cs.get("lastState"))
            state = as_dict(cs.get("state"))
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if isinstance(waiting, Mapping) and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif isinstance(terminated, Mapping):
                reason = _terminated_reason(terminated, "")
            elif cs.get("ready") and isinstance(state.get("running"), Mapping):
                has_running = True
                ready += 1
        # A container still running keeps the pod "Running" although another completed.
        if reason == "Completed" and has_running:
            reason = "Running" if _first_condition_true(conditions, "Ready") else "NotReady"

    if meta_of(pod).get("deletionTimestamp"):
        if status.get("reason") == _NODE_LOST:
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"

    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        ago = human_duration((now - last_restart).total_seconds())
        restarts_text = f"{restarts} ({ago} ago)"
    return f"{ready}/{total}", reason, restarts_text


def _pod_cells(pod: Obj, now: datetime) -> Cells:
    spec, status = as_dict(pod.get("spec")), as_dict(pod.get("status"))
    ready, reason, restarts = pod_status(pod, now)
    ips = as_list(status.get("podIPs"))
    pod_ip = str(as_dict(ips[0]).get("ip") or "") if ips else ""
    gates = as_list(spec.get("readinessGates"))
    gates_text = "<none>"
    if gates:
        by_type: dict[str, Any] = {}
        for cond in as_list(status.get("conditions")):
            cond = as_dict(cond)
            by_type.setdefault(str(cond.get("type")), cond.get("status"))
        passed = sum(
            1 for g in gates if by_type.get(str(as_dict(g).get("conditionType"))) == "True"
        )
        gates_text = f"{passed}/{len(gates)}"
    return [
        name_of(pod),
        ready,
        reason,
        restarts,
        _age(pod, now),
        pod_ip or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_text,
    ]


def _pod_conditions(pod: Obj) -> list[dict[str, Any]] | None:
    phase = as_dict(pod.get("status")).get("phase")
    if phase == "Succeeded":
        message = "The pod has completed successfully."
    elif phase == "Failed":
        message = "The pod failed."
    else:
        return None
    return [{"type": "Completed", "status": "True", "reason": phase, "message": message}]


# ---------------------------------------------------------------------------------------------
# Other core/v1 kinds


def _pod_template_cells(obj: Obj, now: datetime) -> Cells:
    template = as_dict(obj.get("template"))
    names, images = _container_cells(template.get("spec"))
    return [
        name_of(obj),
        names,
        images,
        format_labels(as_dict(template.get("metadata")).get("labels")),
    ]


def _replication_controller_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    names, images = _container_cells(_template_spec(obj))
    return [
        name_of(obj),
        as_int(spec.get("replicas", 1), 0),
        as_int(status.get("replicas"), 0),
        as_int(status.get("readyReplicas"), 0),
        _age(obj, now),
        names,
        images,
        format_labels(spec.get("selector")),
    ]


def _format_service_ports(ports: list[Any]) -> str:
    pieces = []
    for port in ports:
        port = as_dict(port)
        protocol = port.get("protocol") or "TCP"
        node_port = as_int(port.get("nodePort"), 0)
        if node_port > 0:
            pieces.append(f"{as_int(port.get('port'), 0)}:{node_port}/{protocol}")
        else:
            pieces.append(f"{as_int(port.get('port'), 0)}/{protocol}")
    return ",".join(pieces)


def _service_external_ip(spec: Mapping[str, Any], status: Any, kind: str) -> str:
    external = [str(ip) for ip in as_list(spec.get("externalIPs"))]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        lb = _lb_ingress(status)
        if external:
            return ",".join(([*lb.split(",")] if lb else []) + external)
        return lb or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def _service_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    kind = str(spec.get("type") or "ClusterIP")
    cluster_ips = as_list(spec.get("clusterIPs"))
    return [
        name_of(obj),
        kind,
        str(cluster_ips[0]) if cluster_ips else "<none>",
        _service_external_ip(spec, obj.get("status"), kind),
        _format_service_ports(as_list(spec.get("ports"))) or "<none>",
        _age(obj, now),
        format_labels(spec.get("selector")),
    ]


def _join_host_port(host: str, port: Any) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _endpoints_text(subsets: list[Any]) -> str:
    if not subsets:
        return "<none>"
    limit, count, more = 3, 0, False
    items: list[str] = []
    for subset in subsets:
        subset = as_dict(subset)
        addresses = [str(as_dict(a).get("ip") or "") for a in as_list(subset.get("addresses"))]
        ports = as_list(subset.get("ports"))
        if not ports:
            count += len(addresses)
            for ip in addresses:
                if len(items) == limit:
                    more = True
                    break
                items.append(ip)
            continue
        for port in ports:
            count += len(addresses)
            for ip in addresses:
                if len(items) == limit:
                    more = True
                    break
                items.append(_join_host_port(ip, as_int(as_dict(port).get("port"), 0)))
    text = ",".join(items)
    return f"{text} + {count - limit} more..." if more else text


def _endpoints_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), _endpoints_text(as_list(obj.get("subsets"))), _age(obj, now)]


def _node_roles(labels: Mapping[str, Any]) -> str:
    roles = set()
    for key, value in labels.items():
        if key.startswith("node-role.kubernetes.io/"):
            role = key[len("node-role.kubernetes.io/") :]
            if role:
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    return ",".join(sorted(roles)) or "<none>"


def _node_address(addresses: list[Any], kind: str) -> str:
    for address in addresses:
        address = as_dict(address)
        if address.get("type") == kind:
            return str(address.get("address") or "")
    return "<none>"


_ABSENT = object()


def _node_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    ready: Any = _ABSENT
    for cond in as_list(status.get("conditions")):
        cond = as_dict(cond)
        if cond.get("type") == "Ready":
            ready = cond.get("status")  # the last one wins, as in a map keyed by type
    states = ["Unknown"] if ready is _ABSENT else ["Ready" if ready == "True" else "NotReady"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    info = as_dict(status.get("nodeInfo"))
    addresses = as_list(status.get("addresses"))
    return [
        name_of(obj),
        ",".join(states),
        _node_roles(as_dict(meta_of(obj).get("labels"))),
        _age(obj, now),
        str(info.get("kubeletVersion") or ""),
        _node_address(addresses, "InternalIP"),
        _node_address(addresses, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _first(obj: Obj, *keys: str) -> Any:
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return value
    return None


def _event_cells(obj: Obj, now: datetime) -> Cells:
    # Both core/v1 and events.k8s.io/v1 field names are read: they share one storage.
    first_ts = _first(obj, "firstTimestamp", "deprecatedFirstTimestamp")
    first = _since(first_ts, now) if first_ts else _since(obj.get("eventTime"), now)
    last_ts = _first(obj, "lastTimestamp", "deprecatedLastTimestamp")
    last = _since(last_ts, now) if last_ts else first
    series = obj.get("series")
    if isinstance(series, Mapping):
        last = _since(series.get("lastObservedTime"), now)
        count = as_int(series.get("count"), 0)
    else:
        count = as_int(_first(obj, "count", "deprecatedCount"), 0) or 1
    involved = as_dict(_first(obj, "involvedObject", "regarding"))
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = as_dict(_first(obj, "source", "deprecatedSource"))
    component = source.get("component") or _first(obj, "reportingComponent", "reportingController")
    instance = source.get("host") or obj.get("reportingInstance")
    source_text = f"{component or ''}, {instance}" if instance else str(component or "")
    message = str(_first(obj, "message", "note") or "").strip()
    return [
        last,
        str(obj.get("type") or ""),
        str(obj.get("reason") or ""),
        target,
        str(involved.get("fieldPath") or ""),
        source_text,
        message,
        first,
        count,
        name_of(obj),
    ]


def _namespace_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), str(as_dict(obj.get("status")).get("phase") or ""), _age(obj, now)]


def _secret_cells(obj: Obj, now: datetime) -> Cells:
    return [
        name_of(obj),
        str(obj.get("type") or ""),
        len(as_dict(obj.get("data"))),
        _age(obj, now),
    ]


def _config_map_cells(obj: Obj, now: datetime) -> Cells:
    return [
        name_of(obj),
        len(as_dict(obj.get("data"))) + len(as_dict(obj.get("binaryData"))),
        _age(obj, now),
    ]


def _service_account_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), len(as_list(obj.get("secrets"))), _age(obj, now)]


_ACCESS_MODES = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def _access_modes(modes: Any) -> str:
    present = set(as_list(modes))
    return ",".join(short for mode, short in _ACCESS_MODES if mode in present)


_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"


def _volume_class(obj: Obj) -> str:
    annotations = as_dict(meta_of(obj).get("annotations"))
    if _BETA_STORAGE_CLASS in annotations:
        return str(annotations[_BETA_STORAGE_CLASS])
    return str(as_dict(obj.get("spec")).get("storageClassName") or "")


def _persistent_volume_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    claim = spec.get("claimRef")
    claim_text = ""
    if isinstance(claim, Mapping):
        claim_text = f"{claim.get('namespace') or ''}/{claim.get('name') or ''}"
    phase = str(status.get("phase") or "")
    if meta_of(obj).get("deletionTimestamp"):
        phase = "Terminating"
    return [
        name_of(obj),
        _quantity(as_dict(spec.get("capacity")).get("storage")),
        _access_modes(spec.get("accessModes")),
        str(spec.get("persistentVolumeReclaimPolicy") or ""),
        phase,
        claim_text,
        _volume_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        str(status.get("reason") or ""),
        _age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _persistent_volume_claim_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    phase = str(status.get("phase") or "")
    if meta_of(obj).get("deletionTimestamp"):
        phase = "Terminating"
    volume = str(spec.get("volumeName") or "")
    capacity = access = ""
    if volume:
        access = _access_modes(status.get("accessModes"))
        capacity = _quantity(as_dict(status.get("capacity")).get("storage"))
    return [
        name_of(obj),
        phase,
        volume,
        capacity,
        access,
        _volume_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        _age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _resource_quota_cells(obj: Obj, now: datetime) -> Cells:
    status = as_dict(obj.get("status"))
    hard, used = as_dict(status.get("hard")), as_dict(status.get("used"))
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        target = limits if resource.split(".")[0] == "limits" and "." in resource else requests
        target.append(f"{resource}: {_quantity(used.get(resource))}/{_quantity(hard[resource])}")
    return [name_of(obj), ", ".join(requests), ", ".join(limits), _age(obj, now)]


# ---------------------------------------------------------------------------------------------
# apps/v1


def _deployment_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    names, images = _container_cells(_template_spec(obj))
    selector = _selector_string(spec.get("selector")) if spec.get("selector") else ""
    return [
        name_of(obj),
        f"{as_int(status.get('readyReplicas'), 0)}/{as_int(spec.get('replicas', 1), 0)}",
        as_int(status.get("updatedReplicas"), 0),
        as_int(status.get("availableReplicas"), 0),
        _age(obj, now),
        names,
        images,
        "<invalid>" if selector is None else selector,
    ]


def _replica_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    names, images = _container_cells(_template_spec(obj))
    return [
        name_of(obj),
        as_int(spec.get("replicas", 1), 0),
        as_int(status.get("replicas"), 0),
        as_int(status.get("readyReplicas"), 0),
        _age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _stateful_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    names, images = _container_cells(_template_spec(obj))
    return [
        name_of(obj),
        f"{as_int(status.get('readyReplicas'), 0)}/{as_int(spec.get('replicas', 1), 0)}",
        _age(obj, now),
        names,
        images,
    ]


def _daemon_set_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    pod_spec = _template_spec(obj)
    names, images = _container_cells(pod_spec)
    return [
        name_of(obj),
        as_int(status.get("desiredNumberScheduled"), 0),
        as_int(status.get("currentNumberScheduled"), 0),
        as_int(status.get("numberReady"), 0),
        as_int(status.get("updatedNumberScheduled"), 0),
        as_int(status.get("numberAvailable"), 0),
        format_labels(pod_spec.get("nodeSelector")),
        _age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _controller_revision_cells(obj: Obj, now: datetime) -> Cells:
    controller = "<none>"
    for ref in as_list(meta_of(obj).get("ownerReferences")):
        ref = as_dict(ref)
        if ref.get("controller") is True:
            kind = _lower_group_kind(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
            name = str(ref.get("name") or "")
            controller = f"{kind}/{name}" if kind else name
            break
    return [name_of(obj), controller, as_int(obj.get("revision"), 0), _age(obj, now)]


# ---------------------------------------------------------------------------------------------
# batch/v1


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
    if _first_condition_true(conditions, "Complete"):
        state = "Complete"
    elif _first_condition_true(conditions, "Failed"):
        state = "Failed"
    elif meta_of(obj).get("deletionTimestamp"):
        state = "Terminating"
    elif _first_condition_true(conditions, "Suspended"):
        state = "Suspended"
    elif _first_condition_true(conditions, "FailureTarget"):
        state = "FailureTarget"
    else:
        state = "Running"
    names, images = _container_cells(_template_spec(obj))
    return [
        name_of(obj),
        state,
        completions,
        duration,
        _age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _cron_job_cells(obj: Obj, now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    job_spec = as_dict(as_dict(spec.get("jobTemplate")).get("spec"))
    names, images = _container_cells(as_dict(as_dict(job_spec.get("template")).get("spec")))
    suspend = spec.get("suspend")
    last = status.get("lastScheduleTime")
    return [
        name_of(obj),
        str(spec.get("schedule") or ""),
        spec.get("timeZone") or "<none>",
        "<unset>" if suspend is None else ("True" if suspend else "False"),
        len(as_list(status.get("active"))),
        _since(last, now) if last else "<none>",
        _age(obj, now),
        names,
        images,
        format_label_selector(job_spec.get("selector")),
    ]


# ---------------------------------------------------------------------------------------------
# autoscaling/v2


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
            value = _quantity_ref(current.get("value"))
        return f"{value}/{_quantity_ref(target.get('value'))}"
    if kind == "Pods":
        target = as_dict(as_dict(spec.get("pods")).get("target"))
        value = "<unknown>"
        if isinstance(status.get("pods"), Mapping):
            value = _quantity_ref(as_dict(status["pods"].get("current")).get("averageValue"))
        return f"{value}/{_quantity_ref(target.get('averageValue'))}"
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
                value = _quantity_ref(current.get("averageValue"))
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
        _age(obj, now),
    ]


# ---------------------------------------------------------------------------------------------
# Networking, discovery, policy, scheduling, storage, coordination, RBAC, admission


def _ingress_hosts(rules: list[Any]) -> str:
    limit, more = 3, False
    hosts: list[str] = []
    for rule in rules:
        if len(hosts) == limit:
            more = True
        host = as_dict(rule).get("host")
        if not more and host:
            hosts.append(str(host))
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - limit} more..." if more else text


def _ingress_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    return [
        name_of(obj),
        spec.get("ingressClassName") or "<none>",
        _ingress_hosts(as_list(spec.get("rules"))),
        _lb_ingress(obj.get("status")),
        "80, 443" if as_list(spec.get("tls")) else "80",
        _age(obj, now),
    ]


def _ingress_class_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    params = spec.get("parameters")
    text = "<none>"
    if isinstance(params, Mapping):
        text = str(params.get("kind") or "")
        if params.get("apiGroup") is not None:
            text += f".{params['apiGroup']}"
        text += f"/{params.get('name') or ''}"
    return [name_of(obj), str(spec.get("controller") or ""), text, _age(obj, now)]


def _network_policy_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    return [name_of(obj), format_label_selector(spec.get("podSelector") or {}), _age(obj, now)]


def _endpoint_slice_cells(obj: Obj, now: datetime) -> Cells:
    limit = 3
    ports = []
    for port in as_list(obj.get("ports")):
        port = as_dict(port)
        if port.get("port") is not None:
            ports.append(str(port["port"]))
        elif port.get("name") is not None:
            ports.append(str(port["name"]))
        else:
            ports.append("*")
    addresses = [
        str(address)
        for endpoint in as_list(obj.get("endpoints"))
        for address in as_list(as_dict(endpoint).get("addresses"))
    ]
    return [
        name_of(obj),
        str(obj.get("addressType") or ""),
        _with_more(ports[:limit], len(ports), limit, "<unset>"),
        _with_more(addresses[:limit], len(addresses), limit, "<unset>"),
        _age(obj, now),
    ]


def _pdb_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    low, high = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [
        name_of(obj),
        "N/A" if low is None else _int_or_string(low),
        "N/A" if high is None else _int_or_string(high),
        as_int(as_dict(obj.get("status")).get("disruptionsAllowed"), 0),
        _age(obj, now),
    ]


def _priority_class_cells(obj: Obj, now: datetime) -> Cells:
    return [
        name_of(obj),
        as_int(obj.get("value"), 0),
        bool(obj.get("globalDefault")),
        _age(obj, now),
        str(obj.get("preemptionPolicy") or ""),
    ]


def _storage_class_cells(obj: Obj, now: datetime) -> Cells:
    annotations = as_dict(meta_of(obj).get("annotations"))
    name = name_of(obj)
    if (
        annotations.get("storageclass.kubernetes.io/is-default-class") == "true"
        or annotations.get("storageclass.beta.kubernetes.io/is-default-class") == "true"
    ):
        name += " (default)"
    return [
        name,
        str(obj.get("provisioner") or ""),
        obj.get("reclaimPolicy") or "Delete",
        obj.get("volumeBindingMode") or "Immediate",
        bool(obj.get("allowVolumeExpansion")),
        _age(obj, now),
    ]


def _lease_cells(obj: Obj, now: datetime) -> Cells:
    holder = as_dict(obj.get("spec")).get("holderIdentity")
    return [name_of(obj), "" if holder is None else str(holder), _age(obj, now)]


def _binding_cells(obj: Obj, now: datetime) -> Cells:
    ref = as_dict(obj.get("roleRef"))
    users, groups, accounts = [], [], []
    for subject in as_list(obj.get("subjects")):
        subject = as_dict(subject)
        kind, name = subject.get("kind"), str(subject.get("name") or "")
        if kind == "ServiceAccount":
            accounts.append(f"{subject.get('namespace') or ''}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return [
        name_of(obj),
        f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
        _age(obj, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ]


def _webhook_configuration_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), len(as_list(obj.get("webhooks"))), _age(obj, now)]


def _admission_policy_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    param = spec.get("paramKind")
    kind = "<unset>"
    if isinstance(param, dict):
        kind = f"{param.get('apiVersion', '')}/{param.get('kind', '')}"
    return [name_of(obj), len(as_list(spec.get("validations"))), kind, _age(obj, now)]


def _admission_policy_binding_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    ref = spec.get("paramRef")
    param = "<unset>"
    if isinstance(ref, dict):
        if ref.get("name"):
            # The param's scope is not known here: a name without namespace shows `*/`.
            param = f"{ref.get('namespace') or '*'}/{ref['name']}"
        elif isinstance(ref.get("selector"), dict):
            try:
                param = str(selector_from_dict(ref["selector"]))
            except (SelectorError, KeyError, TypeError):
                param = "<invalid>"
    return [name_of(obj), spec.get("policyName", ""), param, _age(obj, now)]


# ---------------------------------------------------------------------------------------------
# Component health, aggregation, certificates, flow control, CSI, node runtimes, IP allocation


def _component_status_cells(obj: Obj, now: datetime) -> Cells:
    status, message, error = "Unknown", "", ""
    for condition in as_list(obj.get("conditions")):
        condition = as_dict(condition)
        if condition.get("type") == "Healthy":
            status = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            message = str(condition.get("message") or "")
            error = str(condition.get("error") or "")
            break
    return [name_of(obj), status, message, error]


def _api_service_cells(obj: Obj, now: datetime) -> Cells:
    # As kube-aggregator's pkg/registry/apiservice/etcd/etcd.go prints them.
    service = as_dict(obj.get("spec")).get("service")
    where = (
        f"{as_dict(service).get('namespace') or ''}/{as_dict(service).get('name') or ''}"
        if isinstance(service, dict)
        else "Local"
    )
    available = "Unknown"
    for condition in as_list(as_dict(obj.get("status")).get("conditions")):
        condition = as_dict(condition)
        if condition.get("type") == "Available":
            available = str(condition.get("status") or "")
            if available != "True" and condition.get("reason"):
                available += f" ({condition['reason']})"
            break
    return [name_of(obj), where, available, _age(obj, now)]


def _csr_condition(obj: Obj) -> str:
    """Pending, Approved or Denied, with `,Failed` and `,Issued` as they apply."""
    kinds = {as_dict(c).get("type") for c in as_list(as_dict(obj.get("status")).get("conditions"))}
    text = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        text += ",Failed"
    if as_dict(obj.get("status")).get("certificate"):
        text += ",Issued"
    return text


def _csr_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    seconds = as_int(spec.get("expirationSeconds"))
    return [
        name_of(obj),
        _age(obj, now),
        str(spec.get("signerName") or "<none>"),
        str(spec.get("username") or ""),
        "<none>" if seconds is None else human_duration(seconds),
        _csr_condition(obj),
    ]


def _flow_schema_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    method = spec.get("distinguisherMethod")
    dangling = "?"
    for condition in as_list(as_dict(obj.get("status")).get("conditions")):
        if as_dict(condition).get("type") == "Dangling":
            dangling = str(as_dict(condition).get("status") or "")
            break
    return [
        name_of(obj),
        str(as_dict(spec.get("priorityLevelConfiguration")).get("name") or ""),
        as_int(spec.get("matchingPrecedence"), 0),
        str(as_dict(method).get("type") or "") if isinstance(method, dict) else "<none>",
        _age(obj, now),
        dangling,
    ]


def _priority_level_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    shares: Any = "<none>"
    queues: Any = "<none>"
    hand: Any = "<none>"
    length: Any = "<none>"
    limited = spec.get("limited")
    if isinstance(limited, dict):
        shares = as_int(limited.get("nominalConcurrencyShares"), 0)
        queuing = as_dict(limited.get("limitResponse")).get("queuing")
        if isinstance(queuing, dict):
            queues = as_int(queuing.get("queues"), 0)
            hand = as_int(queuing.get("handSize"), 0)
            length = as_int(queuing.get("queueLengthLimit"), 0)
    return [name_of(obj), str(spec.get("type") or ""), shares, queues, hand, length, _age(obj, now)]


def _flag(value: Any, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _csi_driver_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    requests = spec.get("tokenRequests")
    audiences = (
        ",".join(str(as_dict(r).get("audience") or "") for r in requests)
        if isinstance(requests, list)
        else "<unset>"
    )
    modes = ",".join(str(m) for m in as_list(spec.get("volumeLifecycleModes")))
    return [
        name_of(obj),
        _flag(spec.get("attachRequired"), True),
        _flag(spec.get("podInfoOnMount"), False),
        _flag(spec.get("storageCapacity"), False),
        audiences,
        _flag(spec.get("requiresRepublish"), False),
        modes or "<none>",
        _age(obj, now),
    ]


def _csi_node_cells(obj: Obj, now: datetime) -> Cells:
    drivers = as_list(as_dict(obj.get("spec")).get("drivers"))
    return [name_of(obj), len(drivers), _age(obj, now)]


def _csi_storage_capacity_cells(obj: Obj, now: datetime) -> Cells:
    capacity = obj.get("capacity")
    return [
        name_of(obj),
        str(obj.get("storageClassName") or ""),
        "<unset>" if capacity is None else str(capacity),
    ]


def _volume_attachment_cells(obj: Obj, now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    return [
        name_of(obj),
        str(spec.get("attacher") or ""),
        str(as_dict(spec.get("source")).get("persistentVolumeName") or ""),
        str(spec.get("nodeName") or ""),
        bool(as_dict(obj.get("status")).get("attached")),
        _age(obj, now),
    ]


def _runtime_class_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), str(obj.get("handler") or ""), _age(obj, now)]


def _ip_address_cells(obj: Obj, now: datetime) -> Cells:
    ref = as_dict(obj.get("spec")).get("parentRef")
    parent = "<none>"
    if isinstance(ref, dict):
        group, resource = str(ref.get("group") or ""), str(ref.get("resource") or "")
        parent = (f"{resource}.{group}" if group else resource).lower()
        if ref.get("namespace"):
            parent += f"/{ref['namespace']}"
        parent += f"/{ref.get('name') or ''}"
    return [name_of(obj), parent, _age(obj, now)]


def _service_cidr_cells(obj: Obj, now: datetime) -> Cells:
    cidrs = as_list(as_dict(obj.get("spec")).get("cidrs"))
    return [name_of(obj), ",".join(str(c) for c in cidrs), _age(obj, now)]


# ---------------------------------------------------------------------------------------------
# The column sets and the registry

_REPLICA_COLUMNS = (
    Column("Desired", "integer", "Number of replicas the object asks for."),
    Column("Current", "integer", "Number of replicas that currently exist."),
    Column("Ready", "integer", "Number of replicas that are ready."),
)


def _selector_column(what: str) -> Column:
    return Column("Selector", "string", f"Label query over the pods {what}.", 1)


def _binding_columns(kind: str) -> tuple[Column, ...]:
    return (
        NAME,
        Column("Role", "string", f"The role the {kind} grants, as Kind/name."),
        AGE,
        Column("Users", "string", f"Users named as subjects of the {kind}.", 1),
        Column("Groups", "string", f"Groups named as subjects of the {kind}.", 1),
        Column(
            "ServiceAccounts",
            "string",
            f"Service accounts named as subjects of the {kind}, as namespace/name.",
            1,
        ),
    )


_WEBHOOK_COLUMNS = (
    NAME,
    Column("Webhooks", "integer", "Number of webhooks the configuration declares."),
    AGE,
)

_EVENT_COLUMNS = (
    Column("Last Seen", "string", "Time since the event was last observed."),
    Column("Type", "string", "Whether the event is Normal or a Warning."),
    Column("Reason", "string", "A short, machine-readable cause of the event."),
    Column("Object", "string", "The object the event is about, as kind/name."),
    Column("Subobject", "string", "The part of the object the event is about.", 1),
    Column("Source", "string", "The component (and host) that reported the event.", 1),
    Column("Message", "string", "A human-readable description of the event."),
    Column("First Seen", "string", "Time since the event was first observed.", 1),
    Column("Count", "string", "How many times the event has occurred.", 1),
    Column("Name", "string", NAME_DESCRIPTION, 1, "name"),
)

_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "Pod"): Printer(POD_COLUMNS, _pod_cells, _pod_conditions),
    ("", "PodTemplate"): Printer(
        (
            NAME,
            Column("Containers", "string", "Names of the containers in the template."),
            Column("Images", "string", "Images of the containers in the template."),
            Column("Pod Labels", "string", "Labels the template puts on its pods."),
        ),
        _pod_template_cells,
    ),
    ("", "ReplicationController"): Printer(
        (NAME, *_REPLICA_COLUMNS, AGE, CONTAINERS, IMAGES, _selector_column("it manages")),
        _replication_controller_cells,
    ),
    ("", "Service"): Printer(
        (
            NAME,
            Column("Type", "string", "How the service is exposed."),
            Column("Cluster-IP", "string", "The virtual IP address inside the cluster."),
            Column("External-IP", "string", "Addresses reachable from outside the cluster."),
            Column("Port(s)", "string", "Ports the service exposes, with node ports."),
            AGE,
            _selector_column("that back the service"),
        ),
        _service_cells,
    ),
    ("", "Endpoints"): Printer(
        (NAME, Column("Endpoints", "string", "Addresses and ports of the endpoints."), AGE),
        _endpoints_cells,
    ),
    ("", "Node"): Printer(
        (
            NAME,
            Column("Status", "string", "Whether the node is ready and schedulable."),
            Column("Roles", "string", "Roles taken from the node's role labels."),
            AGE,
            Column("Version", "string", "The kubelet version the node reports."),
            Column("Internal-IP", "string", "The node's first internal address.", 1),
            Column("External-IP", "string", "The node's first external address.", 1),
            Column("OS-Image", "string", "The operating system image the node reports.", 1),
            Column("Kernel-Version", "string", "The kernel version the node reports.", 1),
            Column("Container-Runtime", "string", "The container runtime and its version.", 1),
        ),
        _node_cells,
    ),
    ("", "Event"): Printer(_EVENT_COLUMNS, _event_cells),
    ("events.k8s.io", "Event"): Printer(_EVENT_COLUMNS, _event_cells),
    ("", "Namespace"): Printer(
        (NAME, Column("Status", "string", "The lifecycle phase of the namespace."), AGE),
        _namespace_cells,
    ),
    ("", "Secret"): Printer(
        (
            NAME,
            Column("Type", "string", "The kind of secret, which fixes the keys it holds."),
            Column("Data", "string", "Number of keys the secret holds."),
            AGE,
        ),
        _secret_cells,
    ),
    ("", "ConfigMap"): Printer(
        (NAME, Column("Data", "string", "Number of keys, text and binary."), AGE),
        _config_map_cells,
    ),
    ("", "ServiceAccount"): Printer(
        (NAME, Column("Secrets", "string", "Number of secrets listed by the account."), AGE),
        _service_account_cells,
    ),
    ("", "PersistentVolume"): Printer(
        (
            NAME,
            Column("Capacity", "string", "The storage capacity of the volume."),
            Column("Access Modes", "string", "How the volume can be mounted."),
            Column("Reclaim Policy", "string", "What happens to the volume once released."),
            Column("Status", "string", "The phase of the volume."),
            Column("Claim", "string", "The claim bound to the volume, as namespace/name."),
            Column("StorageClass", "string", "The storage class of the volume."),
            Column("VolumeAttributesClass", "string", "The volume attributes class."),
            Column("Reason", "string", "Why the volume is in its phase."),
            AGE,
            Column("VolumeMode", "string", "Whether the volume is a filesystem or a block.", 1),
        ),
        _persistent_volume_cells,
    ),
    ("", "PersistentVolumeClaim"): Printer(
        (
            NAME,
            Column("Status", "string", "The phase of the claim."),
            Column("Volume", "string", "The volume bound to the claim."),
            Column("Capacity", "string", "The capacity of the bound volume."),
            Column("Access Modes", "string", "How the bound volume can be mounted."),
            Column("StorageClass", "string", "The storage class of the claim."),
            Column("VolumeAttributesClass", "string", "The volume attributes class."),
            AGE,
            Column("VolumeMode", "string", "Whether the claim is a filesystem or a block.", 1),
        ),
        _persistent_volume_claim_cells,
    ),
    ("", "ResourceQuota"): Printer(
        (
            NAME,
            Column("Request", "string", "Used and hard amounts of each requested resource."),
            Column("Limit", "string", "Used and hard amounts of each resource limit."),
            AGE,
        ),
        _resource_quota_cells,
    ),
    ("apps", "Deployment"): Printer(
        (
            NAME,
            Column("Ready", "string", "Ready replicas out of desired replicas."),
            Column("Up-to-date", "string", "Replicas running the latest pod template."),
            Column("Available", "string", "Replicas available to serve."),
            AGE,
            CONTAINERS,
            IMAGES,
            _selector_column("the deployment manages"),
        ),
        _deployment_cells,
    ),
    ("apps", "ReplicaSet"): Printer(
        (NAME, *_REPLICA_COLUMNS, AGE, CONTAINERS, IMAGES, _selector_column("it manages")),
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
            _selector_column("the daemon set manages"),
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
            _selector_column("of the job"),
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
            _selector_column("of the jobs"),
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
    ("networking.k8s.io", "Ingress"): Printer(
        (
            NAME,
            Column("Class", "string", "The ingress class handling this ingress."),
            Column("Hosts", "string", "Host names the rules match."),
            Column("Address", "string", "Addresses of the load balancer."),
            Column("Ports", "string", "Ports served, 443 when TLS is configured."),
            AGE,
        ),
        _ingress_cells,
    ),
    ("networking.k8s.io", "IngressClass"): Printer(
        (
            NAME,
            Column("Controller", "string", "The controller implementing the class."),
            Column("Parameters", "string", "The object holding extra parameters."),
            AGE,
        ),
        _ingress_class_cells,
    ),
    ("networking.k8s.io", "NetworkPolicy"): Printer(
        (NAME, Column("Pod-Selector", "string", "The pods the policy applies to."), AGE),
        _network_policy_cells,
    ),
    ("discovery.k8s.io", "EndpointSlice"): Printer(
        (
            NAME,
            Column("AddressType", "string", "The kind of addresses in the slice."),
            Column("Ports", "string", "Ports of the endpoints."),
            Column("Endpoints", "string", "Addresses of the endpoints."),
            AGE,
        ),
        _endpoint_slice_cells,
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
    ("scheduling.k8s.io", "PriorityClass"): Printer(
        (
            NAME,
            Column("Value", "integer", "The priority pods of this class receive."),
            Column("Global-Default", "boolean", "Whether pods without a class get this one."),
            AGE,
            Column("PreemptionPolicy", "string", "Whether pods of the class may preempt."),
        ),
        _priority_class_cells,
    ),
    ("storage.k8s.io", "StorageClass"): Printer(
        (
            NAME,
            Column("Provisioner", "string", "The volume plugin provisioning volumes."),
            Column("ReclaimPolicy", "string", "What happens to released volumes."),
            Column("VolumeBindingMode", "string", "When volumes are bound and provisioned."),
            Column("AllowVolumeExpansion", "string", "Whether volumes may grow."),
            AGE,
        ),
        _storage_class_cells,
    ),
    ("coordination.k8s.io", "Lease"): Printer(
        (NAME, Column("Holder", "string", "The identity currently holding the lease."), AGE),
        _lease_cells,
    ),
    ("rbac.authorization.k8s.io", "RoleBinding"): Printer(
        _binding_columns("role binding"), _binding_cells
    ),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): Printer(
        _binding_columns("cluster role binding"), _binding_cells
    ),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): Printer(
        _WEBHOOK_COLUMNS, _webhook_configuration_cells
    ),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): Printer(
        _WEBHOOK_COLUMNS, _webhook_configuration_cells
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): Printer(
        (
            NAME,
            Column("Validations", "integer", "Number of validation rules the policy defines."),
            Column("ParamKind", "string", "The kind of resource that parameterizes the policy."),
            AGE,
        ),
        _admission_policy_cells,
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): Printer(
        (
            NAME,
            Column("PolicyName", "string", "The policy the binding binds."),
            Column("ParamRef", "string", "The param resource the binding uses."),
            AGE,
        ),
        _admission_policy_binding_cells,
    ),
    ("", "ComponentStatus"): Printer(
        (
            NAME,
            Column("Status", "string", "Whether the component reports itself healthy."),
            Column("Message", "string", "What the component's health check said."),
            Column("Error", "string", "The error the health check met, if any."),
        ),
        _component_status_cells,
    ),
    ("apiregistration.k8s.io", "APIService"): Printer(
        (
            NAME,
            Column("Service", "string", "The Service serving the API, or Local."),
            Column("Available", "string", "Whether the API is available (and why not)."),
            AGE,
        ),
        _api_service_cells,
    ),
    ("certificates.k8s.io", "CertificateSigningRequest"): Printer(
        (
            NAME,
            AGE,
            Column("SignerName", "string", "The signer asked to sign the request."),
            Column("Requestor", "string", "The user who created the request."),
            Column("RequestedDuration", "string", "How long the certificate is asked to last."),
            Column("Condition", "string", "Approval, failure and issuance of the request."),
        ),
        _csr_cells,
    ),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): Printer(
        (
            NAME,
            Column("PriorityLevel", "string", "The priority level matching requests get."),
            Column("MatchingPrecedence", "string", "Lower values are matched first."),
            Column("DistinguisherMethod", "string", "How matching requests form flows."),
            AGE,
            Column("MissingPL", "string", "Whether the priority level is missing."),
        ),
        _flow_schema_cells,
    ),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): Printer(
        (
            NAME,
            Column("Type", "string", "Exempt, or Limited by concurrency."),
            Column("NominalConcurrencyShares", "string", "The level's share of concurrency."),
            Column("Queues", "string", "Number of queues of the level."),
            Column("HandSize", "string", "Queues each flow is dealt."),
            Column("QueueLengthLimit", "string", "Requests a queue may hold."),
            AGE,
        ),
        _priority_level_cells,
    ),
    ("storage.k8s.io", "CSIDriver"): Printer(
        (
            NAME,
            Column("AttachRequired", "boolean", "Whether volumes are attached before mounting."),
            Column("PodInfoOnMount", "boolean", "Whether mounts receive the pod's details."),
            Column("StorageCapacity", "boolean", "Whether scheduling checks capacity."),
            Column("TokenRequests", "string", "Audiences of the tokens mounts receive."),
            Column("RequiresRepublish", "boolean", "Whether volumes are mounted again."),
            Column("Modes", "string", "The volume lifecycle modes the driver supports."),
            AGE,
        ),
        _csi_driver_cells,
    ),
    ("storage.k8s.io", "CSINode"): Printer(
        (
            NAME,
            Column("Drivers", "integer", "Number of CSI drivers registered on the node."),
            AGE,
        ),
        _csi_node_cells,
    ),
    ("storage.k8s.io", "CSIStorageCapacity"): Printer(
        (
            NAME,
            Column("StorageClassName", "string", "The storage class the capacity is for."),
            Column("Capacity", "string", "Capacity available for new volumes."),
        ),
        _csi_storage_capacity_cells,
    ),
    ("storage.k8s.io", "VolumeAttachment"): Printer(
        (
            NAME,
            Column("Attacher", "string", "The driver attaching the volume.", format="name"),
            Column("PV", "string", "The persistent volume to attach."),
            Column("Node", "string", "The node the volume is attached to."),
            Column("Attached", "boolean", "Whether the volume is attached."),
            AGE,
        ),
        _volume_attachment_cells,
    ),
    ("node.k8s.io", "RuntimeClass"): Printer(
        (NAME, Column("Handler", "string", "The container runtime handler."), AGE),
        _runtime_class_cells,
    ),
    ("networking.k8s.io", "IPAddress"): Printer(
        (NAME, Column("ParentRef", "string", "The object the address is allocated to."), AGE),
        _ip_address_cells,
    ),
    ("networking.k8s.io", "ServiceCIDR"): Printer(
        (NAME, Column("CIDRs", "string", "The ranges Service addresses come from."), AGE),
        _service_cidr_cells,
    ),
}


def printer_for(group: str, kind: str) -> Printer | None:
    """The printer of a built-in kind; None for kinds printed with the default columns."""
    return _PRINTERS.get((group, kind))
