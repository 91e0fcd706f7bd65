"""Defaulting of built-in objects: what a Kubernetes 1.33 server fills in when a field is unset.

Each `default_*` function works in place on a JSON-shaped dict and is idempotent, because the
server applies defaults on every decode (requests and objects read back from storage). Values
follow `pkg/apis/*/v1/defaults.go` and the declarative `+default` markers of the API types;
a few fields that Go always serialises (empty structs such as `resources: {}`) are added too,
so objects look as a real server returns them.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from kubeforge._api.rbac import RBAC_GROUP

__all__ = [
    "DEFAULTERS",
    "apply_defaults",
    "default_admission_policy",
    "default_admission_policy_binding",
    "default_container",
    "default_crd",
    "default_cronjob",
    "default_daemonset",
    "default_deployment",
    "default_job",
    "default_namespace",
    "default_pod",
    "default_pod_spec",
    "default_pod_template_spec",
    "default_pvc",
    "default_replicaset",
    "default_secret",
    "default_service",
    "default_statefulset",
    "default_webhook_configuration",
    "image_pull_policy",
]

Obj = dict[str, Any]
Defaulter = Callable[[Obj], None]

DEFAULT_TERMINATION_GRACE_PERIOD = 30
VOLUME_DEFAULT_MODE = 0o644  # 420: secret, configMap, downwardAPI and projected volumes


def _child(parent: Obj, key: str) -> Obj:
    """parent[key] as a dict, created when missing or null (Go structs always exist)."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _opt(parent: Any, key: str) -> Obj | None:
    """parent[key] if it is a dict (Go pointers: only defaulted when present)."""
    if not isinstance(parent, dict):
        return None
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def _items(parent: Any, key: str) -> list[Obj]:
    """The dict entries of the list parent[key] (anything else yields nothing)."""
    if not isinstance(parent, dict):
        return []
    value = parent.get(key)
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, dict)]


def _set(obj: Obj, key: str, value: Any) -> None:
    """Set obj[key] when it is absent, null or empty ("" and Go zero values count as unset)."""
    if obj.get(key) in (None, ""):
        obj[key] = value


# -- containers and pod specs ---------------------------------------------------------------


def image_pull_policy(image: Any) -> str:
    """Always for `:latest` or an untagged, undigested image; IfNotPresent otherwise."""
    if not isinstance(image, str) or not image:
        return "IfNotPresent"
    name, at, _digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = name[colon + 1 :] if colon > slash else ""
    repo = name[:colon] if colon > slash else name
    if repo != repo.lower():
        # Not a valid reference; the server's parser fails and the tag stays unknown.
        return "IfNotPresent"
    if not tag and not at:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _default_http_get(action: Obj | None) -> None:
    if action is not None:
        _set(action, "path", "/")
        _set(action, "scheme", "HTTP")


def _default_handler(handler: Obj | None) -> None:
    if handler is None:
        return
    _default_http_get(_opt(handler, "httpGet"))
    grpc = _opt(handler, "grpc")
    if grpc is not None and grpc.get("service") is None:
        grpc["service"] = ""


def _default_probe(probe: Obj | None) -> None:
    if probe is None:
        return
    for key, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        if not probe.get(key):
            probe[key] = value
    _default_handler(probe)


def _default_field_ref(ref: Obj | None) -> None:
    if ref is not None:
        _set(ref, "apiVersion", "v1")


def default_container(container: Obj) -> None:
    """SetDefaults_Container plus the nested port, env, probe and lifecycle defaults."""
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = image_pull_policy(container.get("image"))
    _set(container, "terminationMessagePath", "/dev/termination-log")
    _set(container, "terminationMessagePolicy", "File")
    _child(container, "resources")
    for port in _items(container, "ports"):
        _set(port, "protocol", "TCP")
    for env in _items(container, "env"):
        _default_field_ref(_opt(_opt(env, "valueFrom"), "fieldRef"))
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(_opt(container, probe))
    lifecycle = _opt(container, "lifecycle")
    if lifecycle is not None:
        _default_handler(_opt(lifecycle, "postStart"))
        _default_handler(_opt(lifecycle, "preStop"))


# Every volume source a Volume may carry; a volume naming none of them is an emptyDir.
VOLUME_SOURCES = frozenset(
    {
        "awsElasticBlockStore",
        "azureDisk",
        "azureFile",
        "cephfs",
        "cinder",
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "fc",
        "flexVolume",
        "flocker",
        "gcePersistentDisk",
        "gitRepo",
        "glusterfs",
        "hostPath",
        "image",
        "iscsi",
        "nfs",
        "persistentVolumeClaim",
        "photonPersistentDisk",
        "portworxVolume",
        "projected",
        "quobyte",
        "rbd",
        "scaleIO",
        "secret",
        "storageos",
        "vsphereVolume",
    }
)


def _default_items_field_refs(source: Obj | None) -> None:
    for item in _items(source, "items"):
        _default_field_ref(_opt(item, "fieldRef"))


def _default_volume_source(volume: Obj) -> None:
    """Per-source defaults shared by pod volumes and persistent volumes."""
    host_path = _opt(volume, "hostPath")
    if host_path is not None and host_path.get("type") is None:
        host_path["type"] = ""
    iscsi = _opt(volume, "iscsi")
    if iscsi is not None:
        _set(iscsi, "iscsiInterface", "default")
    rbd = _opt(volume, "rbd")
    if rbd is not None:
        _set(rbd, "pool", "rbd")
        _set(rbd, "user", "admin")
        _set(rbd, "keyring", "/etc/ceph/keyring")
    azure = _opt(volume, "azureDisk")
    if azure is not None:
        _set(azure, "cachingMode", "ReadWrite")
        _set(azure, "kind", "Shared")
        _set(azure, "fsType", "ext4")
        if azure.get("readOnly") is None:
            azure["readOnly"] = False
    scale_io = _opt(volume, "scaleIO")
    if scale_io is not None:
        _set(scale_io, "storageMode", "ThinProvisioned")
        _set(scale_io, "fsType", "xfs")


def _default_volume(volume: Obj) -> None:
    if not any(volume.get(k) is not None for k in VOLUME_SOURCES):
        volume["emptyDir"] = {}
    _default_volume_source(volume)
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        source = _opt(volume, key)
        if source is not None and source.get("defaultMode") is None:
            source["defaultMode"] = VOLUME_DEFAULT_MODE
    _default_items_field_refs(_opt(volume, "downwardAPI"))
    for source in _items(_opt(volume, "projected"), "sources"):
        _default_items_field_refs(_opt(source, "downwardAPI"))
        token = _opt(source, "serviceAccountToken")
        if token is not None and token.get("expirationSeconds") is None:
            token["expirationSeconds"] = 3600
    template = _opt(_opt(volume, "ephemeral"), "volumeClaimTemplate")
    if template is not None:
        _default_pvc_spec(_child(template, "spec"))
    image = _opt(volume, "image")
    if image is not None and not image.get("pullPolicy"):
        image["pullPolicy"] = image_pull_policy(image.get("reference"))


def default_pod_spec(spec: Obj, *, pod: bool = False) -> None:
    """SetDefaults_PodSpec and everything nested; `pod` adds the Pod-only defaults."""
    _set(spec, "dnsPolicy", "ClusterFirst")
    _set(spec, "restartPolicy", "Always")
    _child(spec, "securityContext")
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD
    _set(spec, "schedulerName", "default-scheduler")
    # v1 keeps the deprecated serviceAccount field as a mirror of serviceAccountName.
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if account:
        spec["serviceAccountName"] = account
        spec["serviceAccount"] = account
    for volume in _items(spec, "volumes"):
        _default_volume(volume)
    containers = _items(spec, "initContainers") + _items(spec, "containers")
    if pod:
        containers += _items(spec, "ephemeralContainers")
    for container in containers:
        default_container(container)
    if pod:
        _default_pod_only(spec)


def _default_pod_only(spec: Obj) -> None:
    # SetDefaults_Pod: requests default to limits, service links on, host ports mirror
    # container ports on the host network (ephemeral containers have no ports to mirror).
    containers = _items(spec, "initContainers") + _items(spec, "containers")
    for container in containers:
        resources = _opt(container, "resources")
        limits = _opt(resources, "limits")
        if resources is not None and limits:
            requests = _child(resources, "requests")
            for name, quantity in limits.items():
                requests.setdefault(name, quantity)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork") is True:
        for container in containers:
            for port in _items(container, "ports"):
                if not port.get("hostPort"):
                    port["hostPort"] = port.get("containerPort")


def default_pod_template_spec(template: Obj) -> None:
    """Defaults of a PodTemplateSpec embedded in a workload (no Pod-only defaults)."""
    default_pod_spec(_child(template, "spec"))


def _mirror_ips(status: Obj, single: str, plural: str) -> None:
    # v1 carries both `podIP` and `podIPs` (likewise hostIP); the list wins when present.
    entries = status.get(plural)
    if isinstance(entries, list) and entries:
        first = entries[0]
        if isinstance(first, dict) and first.get("ip"):
            status[single] = first["ip"]
    elif status.get(single):
        status[plural] = [{"ip": status[single]}]


def default_pod(obj: Obj) -> None:
    """SetObjectDefaults_Pod."""
    default_pod_spec(_child(obj, "spec"), pod=True)
    status = _opt(obj, "status")
    if status is not None:
        _mirror_ips(status, "podIP", "podIPs")
        _mirror_ips(status, "hostIP", "hostIPs")


def default_pod_template(obj: Obj) -> None:
    """PodTemplate objects."""
    default_pod_template_spec(_child(obj, "template"))


# -- apps -----------------------------------------------------------------------------------


def default_deployment(obj: Obj) -> None:
    """SetDefaults_Deployment: 1 replica, RollingUpdate 25%/25%, history 10, deadline 600s."""
    spec = _child(obj, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = _child(spec, "strategy")
    _set(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _child(strategy, "rollingUpdate")
        if rolling.get("maxUnavailable") is None:
            rolling["maxUnavailable"] = "25%"
        if rolling.get("maxSurge") is None:
            rolling["maxSurge"] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    default_pod_template_spec(_child(spec, "template"))


def default_replicaset(obj: Obj) -> None:
    """SetDefaults_ReplicaSet: 1 replica."""
    spec = _child(obj, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    default_pod_template_spec(_child(spec, "template"))


def default_replication_controller(obj: Obj) -> None:
    """Selector and object labels come from the template; 1 replica."""
    spec = _child(obj, "spec")
    template = _opt(spec, "template")
    if template is not None:
        labels = _opt(_opt(template, "metadata"), "labels")
        if labels is not None:
            if not spec.get("selector"):
                spec["selector"] = dict(labels)
            meta = _child(obj, "metadata")
            if not meta.get("labels"):
                meta["labels"] = dict(labels)
        default_pod_template_spec(template)
    if spec.get("replicas") is None:
        spec["replicas"] = 1


def default_statefulset(obj: Obj) -> None:
    """SetDefaults_StatefulSet: OrderedReady, RollingUpdate partition 0, Retain PVCs."""
    spec = _child(obj, "spec")
    _set(spec, "podManagementPolicy", "OrderedReady")
    strategy = _child(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        _child(strategy, "rollingUpdate")
    rolling = _opt(strategy, "rollingUpdate")
    if (
        strategy["type"] == "RollingUpdate"
        and rolling is not None
        and rolling.get("partition") is None
    ):
        rolling["partition"] = 0
    retention = _child(spec, "persistentVolumeClaimRetentionPolicy")
    _set(retention, "whenDeleted", "Retain")
    _set(retention, "whenScaled", "Retain")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    default_pod_template_spec(_child(spec, "template"))
    for claim in _items(spec, "volumeClaimTemplates"):
        default_pvc(claim)


def default_daemonset(obj: Obj) -> None:
    """SetDefaults_DaemonSet: RollingUpdate maxUnavailable 1 maxSurge 0, history 10."""
    spec = _child(obj, "spec")
    strategy = _child(spec, "updateStrategy")
    _set(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _child(strategy, "rollingUpdate")
        if rolling.get("maxUnavailable") is None:
            rolling["maxUnavailable"] = 1
        if rolling.get("maxSurge") is None:
            rolling["maxSurge"] = 0
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    default_pod_template_spec(_child(spec, "template"))


# -- batch ----------------------------------------------------------------------------------

INT32_MAX = 2**31 - 1


def default_job(obj: Obj) -> None:
    """SetDefaults_Job: completions/parallelism 1, backoffLimit 6, NonIndexed, not suspended,
    manualSelector false; object labels copied from the template when it has none."""
    spec = _child(obj, "spec")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = INT32_MAX if spec.get("backoffLimitPerIndex") is not None else 6
    template = _child(spec, "template")
    labels = _opt(_opt(template, "metadata"), "labels")
    meta = _child(obj, "metadata")
    if labels is not None and not meta.get("labels"):
        meta["labels"] = dict(labels)
    _set(spec, "completionMode", "NonIndexed")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    failure_policy = _opt(spec, "podFailurePolicy")
    for rule in _items(failure_policy, "rules"):
        for pattern in _items(rule, "onPodConditions"):
            _set(pattern, "status", "True")
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = (
            "Failed" if failure_policy is not None else "TerminatingOrFailed"
        )
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    default_pod_template_spec(template)


def default_cronjob(obj: Obj) -> None:
    """SetDefaults_CronJob: Allow, not suspended, keep 3 successful and 1 failed job.

    The job template gets pod template defaults only, as on a real server.
    """
    spec = _child(obj, "spec")
    _set(spec, "concurrencyPolicy", "Allow")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    job_spec = _child(_child(spec, "jobTemplate"), "spec")
    default_pod_template_spec(_child(job_spec, "template"))


# -- core -----------------------------------------------------------------------------------


def default_service(obj: Obj) -> None:
    """SetDefaults_Service, plus the single-stack IP family fields the registry fills in."""
    spec = _child(obj, "spec")
    _set(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = _child(_child(spec, "sessionAffinityConfig"), "clientIP")
        if client_ip.get("timeoutSeconds") is None:
            client_ip["timeoutSeconds"] = 10800
    _set(spec, "type", "ClusterIP")
    kind = spec["type"]
    for port in _items(spec, "ports"):
        _set(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    # Externally reachable services: node ports, load balancers and external IPs.
    if kind in ("NodePort", "LoadBalancer") or (kind == "ClusterIP" and spec.get("externalIPs")):
        _set(spec, "externalTrafficPolicy", "Cluster")
    if kind in ("ClusterIP", "NodePort", "LoadBalancer"):
        _set(spec, "internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    if kind != "ExternalName":
        cluster_ips = spec.get("clusterIPs")
        if isinstance(cluster_ips, list) and cluster_ips:
            spec["clusterIP"] = cluster_ips[0]
        elif spec.get("clusterIP"):
            spec["clusterIPs"] = [spec["clusterIP"]]
        # A single-stack IPv4 cluster, as the service registry records it; headless services
        # without a selector may take every family the cluster has.
        if spec.get("clusterIP") == "None" and not spec.get("selector"):
            _set(spec, "ipFamilyPolicy", "RequireDualStack")
        else:
            _set(spec, "ipFamilyPolicy", "SingleStack")
        if not spec.get("ipFamilies"):
            spec["ipFamilies"] = ["IPv4"]
    if kind == "LoadBalancer":
        for ingress in _items(_opt(_opt(obj, "status"), "loadBalancer"), "ingress"):
            if ingress.get("ip") and ingress.get("ipMode") is None:
                ingress["ipMode"] = "VIP"


def default_secret(obj: Obj) -> None:
    """Secrets are Opaque unless typed; `stringData` is merged into `data` (base64) and
    dropped, as decoding a v1 Secret does."""
    _set(obj, "type", "Opaque")
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = _child(obj, "data")
        for key, value in string_data.items():
            if isinstance(value, str):
                data[key] = base64.b64encode(value.encode()).decode()


def default_namespace(obj: Obj) -> None:
    """The `kubernetes.io/metadata.name` label and phase Active."""
    meta = _child(obj, "metadata")
    name = meta.get("name")
    if name:
        _child(meta, "labels")["kubernetes.io/metadata.name"] = name
    _set(_child(obj, "status"), "phase", "Active")


def _default_pvc_spec(spec: Obj) -> None:
    _set(spec, "volumeMode", "Filesystem")


def default_pvc(obj: Obj) -> None:
    """PersistentVolumeClaim: Filesystem volume mode, phase Pending."""
    _default_pvc_spec(_child(obj, "spec"))
    _set(_child(obj, "status"), "phase", "Pending")


def default_pv(obj: Obj) -> None:
    """PersistentVolume: Retain, Filesystem, phase Pending."""
    spec = _child(obj, "spec")
    _set(spec, "persistentVolumeReclaimPolicy", "Retain")
    _set(spec, "volumeMode", "Filesystem")
    _default_volume_source(spec)
    _set(_child(obj, "status"), "phase", "Pending")


def default_node(obj: Obj) -> None:
    """Allocatable defaults to capacity."""
    status = _opt(obj, "status")
    capacity = _opt(status, "capacity")
    if status is not None and capacity is not None and status.get("allocatable") is None:
        status["allocatable"] = dict(capacity)


def default_endpoints(obj: Obj) -> None:
    """Endpoints ports are TCP unless told otherwise."""
    for subset in _items(obj, "subsets"):
        for port in _items(subset, "ports"):
            _set(port, "protocol", "TCP")


def default_limit_range(obj: Obj) -> None:
    """Container limit items: default limit from max, default request from limit or min."""
    for item in _items(_opt(obj, "spec"), "limits"):
        if item.get("type") != "Container":
            continue
        default = _child(item, "default")
        request = _child(item, "defaultRequest")
        for name, quantity in (_opt(item, "max") or {}).items():
            default.setdefault(name, quantity)
        for name, quantity in default.items():
            request.setdefault(name, quantity)
        for name, quantity in (_opt(item, "min") or {}).items():
            request.setdefault(name, quantity)
        # Empty resource lists are omitted when written out.
        for key in ("default", "defaultRequest"):
            if not item[key]:
                del item[key]


# -- other groups ---------------------------------------------------------------------------


def default_endpoint_slice(obj: Obj) -> None:
    """EndpointSlice ports: name "" and protocol TCP."""
    for port in _items(obj, "ports"):
        if port.get("name") is None:
            port["name"] = ""
        _set(port, "protocol", "TCP")


def default_network_policy(obj: Obj) -> None:
    """Ports are TCP; policyTypes is Ingress, plus Egress when egress rules exist."""
    spec = _child(obj, "spec")
    for direction in ("ingress", "egress"):
        for rule in _items(spec, direction):
            for port in _items(rule, "ports"):
                _set(port, "protocol", "TCP")
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


def _default_hpa_rules(rules: Obj, stabilization: int, policies: list[Obj]) -> None:
    if rules.get("stabilizationWindowSeconds") is None:
        rules["stabilizationWindowSeconds"] = stabilization
    _set(rules, "selectPolicy", "Max")
    # Only absent policies are defaulted: an empty list stays, for validation to refuse
    # (copyHPAScalingRules in pkg/apis/autoscaling/v2/defaults.go checks for nil).
    if rules.get("policies") is None:
        rules["policies"] = policies


def default_hpa(obj: Obj) -> None:
    """autoscaling/v2: minReplicas 1, 80% CPU when no metric, behavior rule defaults."""
    spec = _child(obj, "spec")
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ]
    behavior = _opt(spec, "behavior")
    if behavior is not None:
        _default_hpa_rules(
            _child(behavior, "scaleUp"),
            0,
            [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        )
        _default_hpa_rules(
            _child(behavior, "scaleDown"),
            300,
            [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        )


def default_hpa_v1(obj: Obj) -> None:
    """autoscaling/v1: minReplicas 1 (the CPU target is the conversion's to default)."""
    spec = _child(obj, "spec")
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1


def _default_unset(obj: Obj, values: dict[str, Any]) -> None:
    """Pointer fields: set only when absent or null (false and 0 are values)."""
    for key, value in values.items():
        if obj.get(key) is None:
            obj[key] = value


def default_csi_driver(obj: Obj) -> None:
    """storage/v1 CSIDriver (SetDefaults_CSIDriver, with 1.33's default feature gates)."""
    spec = _child(obj, "spec")
    _default_unset(
        spec,
        {
            "attachRequired": True,
            "podInfoOnMount": False,
            "storageCapacity": False,
            "fsGroupPolicy": "ReadWriteOnceWithFSType",
            "requiresRepublish": False,
            "seLinuxMount": False,
        },
    )
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


def default_api_service(obj: Obj) -> None:
    """apiregistration/v1 APIService: a Service is reached on port 443."""
    service = _opt(_opt(obj, "spec"), "service")
    if service is not None and service.get("port") is None:
        service["port"] = 443


def default_flow_schema(obj: Obj) -> None:
    """flowcontrol/v1 FlowSchema: matchingPrecedence 1000."""
    spec = _child(obj, "spec")
    if not spec.get("matchingPrecedence"):
        spec["matchingPrecedence"] = 1000


def default_priority_level(obj: Obj) -> None:
    """flowcontrol/v1 PriorityLevelConfiguration: 30 shares for a limited level (0 for the
    exempt one), nothing lent, and 64 queues of 50 dealt hands of 8."""
    spec = _opt(obj, "spec")
    exempt = _opt(spec, "exempt")
    if exempt is not None:
        _default_unset(exempt, {"nominalConcurrencyShares": 0, "lendablePercent": 0})
    limited = _opt(spec, "limited")
    if limited is not None:
        _default_unset(limited, {"nominalConcurrencyShares": 30, "lendablePercent": 0})
        queuing = _opt(_opt(limited, "limitResponse"), "queuing")
        if queuing is not None:
            for key, value in (("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)):
                if not queuing.get(key):
                    queuing[key] = value


def default_priority_class(obj: Obj) -> None:
    """PriorityClass preempts lower priorities by default."""
    _set(obj, "preemptionPolicy", "PreemptLowerPriority")


def default_storage_class(obj: Obj) -> None:
    """StorageClass: Delete, Immediate binding."""
    _set(obj, "reclaimPolicy", "Delete")
    _set(obj, "volumeBindingMode", "Immediate")


def default_role_binding(obj: Obj) -> None:
    """roleRef and User/Group subjects default to the RBAC API group."""
    role_ref = _opt(obj, "roleRef")
    if role_ref is not None:
        _set(role_ref, "apiGroup", RBAC_GROUP)
    for subject in _items(obj, "subjects"):
        # A ServiceAccount's group is the core group "", which is never written out.
        if not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = RBAC_GROUP


def _default_service_reference(client_config: Obj | None) -> None:
    service = _opt(client_config, "service")
    if service is not None and service.get("port") is None:
        service["port"] = 443


def default_crd(obj: Obj) -> None:
    """CRD names (singular, listKind), conversion None, storedVersions from the storage one."""
    spec = _child(obj, "spec")
    names = _child(spec, "names")
    kind = names.get("kind")
    if not names.get("singular") and isinstance(kind, str):
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = f"{kind}List"
    conversion = _opt(spec, "conversion")
    if conversion is None:
        spec["conversion"] = {"strategy": "None"}
    else:
        _default_service_reference(_opt(_opt(conversion, "webhook"), "clientConfig"))
    for version in _items(spec, "versions"):
        # Plain booleans in Go: absent means false, and false is serialised.
        for flag in ("served", "storage"):
            if version.get(flag) is None:
                version[flag] = False
    status = _opt(obj, "status")
    if status is not None and not status.get("storedVersions"):
        storage = next((v.get("name") for v in _items(spec, "versions") if v.get("storage")), None)
        if storage:
            status["storedVersions"] = [storage]


def default_webhook_configuration(obj: Obj, *, mutating: bool) -> None:
    """Webhooks: Fail, Equivalent, empty selectors, 10s, rule scope "*", service port 443."""
    for hook in _items(obj, "webhooks"):
        _set(hook, "failurePolicy", "Fail")
        _set(hook, "matchPolicy", "Equivalent")
        if hook.get("namespaceSelector") is None:
            hook["namespaceSelector"] = {}
        if hook.get("objectSelector") is None:
            hook["objectSelector"] = {}
        if hook.get("timeoutSeconds") is None:
            hook["timeoutSeconds"] = 10
        if mutating:
            _set(hook, "reinvocationPolicy", "Never")
        for rule in _items(hook, "rules"):
            _set(rule, "scope", "*")
        _default_service_reference(_opt(hook, "clientConfig"))


def _default_match_resources(resources: Obj | None) -> None:
    if resources is None:
        return
    _set(resources, "matchPolicy", "Equivalent")
    for key in ("namespaceSelector", "objectSelector"):
        if resources.get(key) is None:
            resources[key] = {}
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in _items(resources, key):
            _set(rule, "scope", "*")


def default_admission_policy(obj: Obj) -> None:
    """ValidatingAdmissionPolicy: failurePolicy Fail, matchConstraints as MatchResources."""
    spec = _opt(obj, "spec")
    if spec is None:
        return
    _set(spec, "failurePolicy", "Fail")
    _default_match_resources(_opt(spec, "matchConstraints"))


def default_admission_policy_binding(obj: Obj) -> None:
    """ValidatingAdmissionPolicyBinding: matchResources as MatchResources."""
    _default_match_resources(_opt(_opt(obj, "spec"), "matchResources"))


def _default_mutating(obj: Obj) -> None:
    default_webhook_configuration(obj, mutating=True)


def _default_validating(obj: Obj) -> None:
    default_webhook_configuration(obj, mutating=False)


DEFAULTERS: dict[tuple[str, str], Defaulter] = {
    ("", "Pod"): default_pod,
    ("", "PodTemplate"): default_pod_template,
    ("", "ReplicationController"): default_replication_controller,
    ("", "Service"): default_service,
    ("", "Secret"): default_secret,
    ("", "Namespace"): default_namespace,
    ("", "PersistentVolumeClaim"): default_pvc,
    ("", "PersistentVolume"): default_pv,
    ("", "Node"): default_node,
    ("", "Endpoints"): default_endpoints,
    ("", "LimitRange"): default_limit_range,
    ("apps", "Deployment"): default_deployment,
    ("apps", "ReplicaSet"): default_replicaset,
    ("apps", "StatefulSet"): default_statefulset,
    ("apps", "DaemonSet"): default_daemonset,
    ("batch", "Job"): default_job,
    ("batch", "CronJob"): default_cronjob,
    ("autoscaling", "HorizontalPodAutoscaler"): default_hpa,
    ("discovery.k8s.io", "EndpointSlice"): default_endpoint_slice,
    ("networking.k8s.io", "NetworkPolicy"): default_network_policy,
    ("scheduling.k8s.io", "PriorityClass"): default_priority_class,
    ("storage.k8s.io", "StorageClass"): default_storage_class,
    ("storage.k8s.io", "CSIDriver"): default_csi_driver,
    ("apiregistration.k8s.io", "APIService"): default_api_service,
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): default_flow_schema,
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): default_priority_level,
    (RBAC_GROUP, "RoleBinding"): default_role_binding,
    (RBAC_GROUP, "ClusterRoleBinding"): default_role_binding,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): default_crd,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): _default_mutating,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _default_validating,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): default_admission_policy,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): (
        default_admission_policy_binding
    ),
}


def apply_defaults(group: str, kind: str, obj: Obj) -> None:
    """Default `obj` in place if the kind has defaults; other kinds are left alone."""
    defaulter = DEFAULTERS.get((group, kind))
    if defaulter is not None:
        defaulter(obj)
