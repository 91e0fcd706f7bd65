"""`kubectl get` columns of core/v1 kinds (and events.k8s.io Events), as
pkg/printers/internalversion/printers.go prints them: pods (their status column is
kubectl's own reading of the pod's phase, conditions and container states), services,
endpoints, nodes, events, volumes, quotas and the rest.
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
    NAME_DESCRIPTION,
    REPLICA_COLUMNS,
    Cells,
    Column,
    Obj,
    Printer,
    container_cells,
    first_condition_true,
    format_labels,
    lb_ingress,
    object_age,
    quantity,
    selector_column,
    since,
    template_spec,
)

__all__ = ["PRINTERS", "pod_status"]


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

    if not initializing or first_condition_true(conditions, "Initialized"):
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
            reason = "Running" if first_condition_true(conditions, "Ready") else "NotReady"

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
        object_age(pod, now),
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


def _pod_template_cells(obj: Obj, now: datetime) -> Cells:
    template = as_dict(obj.get("template"))
    names, images = container_cells(template.get("spec"))
    return [
        name_of(obj),
        names,
        images,
        format_labels(as_dict(template.get("metadata")).get("labels")),
    ]


def _replication_controller_cells(obj: Obj, now: datetime) -> Cells:
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
        lb = lb_ingress(status)
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
        object_age(obj, now),
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
    return [name_of(obj), _endpoints_text(as_list(obj.get("subsets"))), object_age(obj, now)]


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
        object_age(obj, now),
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
    first = since(first_ts, now) if first_ts else since(obj.get("eventTime"), now)
    last_ts = _first(obj, "lastTimestamp", "deprecatedLastTimestamp")
    last = since(last_ts, now) if last_ts else first
    series = obj.get("series")
    if isinstance(series, Mapping):
        last = since(series.get("lastObservedTime"), now)
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
    return [name_of(obj), str(as_dict(obj.get("status")).get("phase") or ""), object_age(obj, now)]


def _secret_cells(obj: Obj, now: datetime) -> Cells:
    return [
        name_of(obj),
        str(obj.get("type") or ""),
        len(as_dict(obj.get("data"))),
        object_age(obj, now),
    ]


def _config_map_cells(obj: Obj, now: datetime) -> Cells:
    return [
        name_of(obj),
        len(as_dict(obj.get("data"))) + len(as_dict(obj.get("binaryData"))),
        object_age(obj, now),
    ]


def _service_account_cells(obj: Obj, now: datetime) -> Cells:
    return [name_of(obj), len(as_list(obj.get("secrets"))), object_age(obj, now)]


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
        quantity(as_dict(spec.get("capacity")).get("storage")),
        _access_modes(spec.get("accessModes")),
        str(spec.get("persistentVolumeReclaimPolicy") or ""),
        phase,
        claim_text,
        _volume_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        str(status.get("reason") or ""),
        object_age(obj, now),
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
        capacity = quantity(as_dict(status.get("capacity")).get("storage"))
    return [
        name_of(obj),
        phase,
        volume,
        capacity,
        access,
        _volume_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        object_age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _resource_quota_cells(obj: Obj, now: datetime) -> Cells:
    status = as_dict(obj.get("status"))
    hard, used = as_dict(status.get("hard")), as_dict(status.get("used"))
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        target = limits if resource.split(".")[0] == "limits" and "." in resource else requests
        target.append(f"{resource}: {quantity(used.get(resource))}/{quantity(hard[resource])}")
    return [name_of(obj), ", ".join(requests), ", ".join(limits), object_age(obj, now)]


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


PRINTERS: dict[tuple[str, str], Printer] = {
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
        (NAME, *REPLICA_COLUMNS, AGE, CONTAINERS, IMAGES, selector_column("it manages")),
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
            selector_column("that back the service"),
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
    ("", "ComponentStatus"): Printer(
        (
            NAME,
            Column("Status", "string", "Whether the component reports itself healthy."),
            Column("Message", "string", "What the component's health check said."),
            Column("Error", "string", "The error the health check met, if any."),
        ),
        _component_status_cells,
    ),
}
