"""Built-in printers: the cells each kind's table row shows, as kubectl prints them."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._apiserver.printing.columns import format_label_selector
from kubeforge._apiserver.printing.core import pod_status
from kubeforge._apiserver.printing.printers import printer_for
from kubeforge._apiserver.printing.tables import to_table
from tests.support.tables import NOW, meta, rt, ts


def cells(group: str, kind: str, obj: dict[str, Any]) -> list[Any]:
    printer = printer_for(group, kind)
    assert printer is not None
    row = printer.cells(obj, NOW)
    assert len(row) == len(printer.columns)
    return row


# ---------------------------------------------------------------------------------------------
# Pods


def container_status(
    name: str = "app",
    *,
    ready: bool = False,
    state: dict[str, Any] | None = None,
    restarts: int = 0,
    last_finished: float | None = None,
    started: bool | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "state": state if state is not None else {"running": {"startedAt": ts(60)}},
    }
    if last_finished is not None:
        status["lastState"] = {"terminated": {"exitCode": 1, "finishedAt": ts(last_finished)}}
    if started is not None:
        status["started"] = started
    return status


def pod(
    containers: int = 1,
    statuses: list[dict[str, Any]] | None = None,
    *,
    phase: str = "Running",
    init: list[dict[str, Any]] | None = None,
    init_statuses: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "image": "img"} for i in range(containers)]
    }
    if init:
        spec["initContainers"] = init
    status: dict[str, Any] = {"phase": phase, "containerStatuses": statuses or []}
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    if conditions:
        status["conditions"] = conditions
    return {"metadata": meta("p", **metadata), "spec": spec, "status": status}


WAIT_CREATE = {"waiting": {"reason": "ContainerCreating"}}


@pytest.mark.parametrize(
    ("obj", "ready", "status", "restarts"),
    [
        (pod(2, [container_status(ready=True), container_status("b")]), "1/2", "Running", "0"),
        (pod(1, [], phase="Pending"), "0/1", "Pending", "0"),
        (
            pod(1, [container_status(state=WAIT_CREATE)], phase="Pending"),
            "0/1",
            "ContainerCreating",
            "0",
        ),
        (
            pod(
                1,
                [
                    container_status(
                        state={"waiting": {"reason": "CrashLoopBackOff"}},
                        restarts=3,
                        last_finished=300,
                    )
                ],
            ),
            "0/1",
            "CrashLoopBackOff",
            "3 (5m ago)",
        ),
        (
            pod(
                1,
                [container_status(state={"terminated": {"exitCode": 0, "reason": "Completed"}})],
                phase="Succeeded",
            ),
            "0/1",
            "Completed",
            "0",
        ),
        (
            pod(
                1,
                [container_status(state={"terminated": {"exitCode": 137, "signal": 9}})],
                phase="Failed",
            ),
            "0/1",
            "Signal:9",
            "0",
        ),
        (
            pod(1, [container_status(state={"terminated": {"exitCode": 2}})], phase="Failed"),
            "0/1",
            "ExitCode:2",
            "0",
        ),
        (
            pod(1, [container_status(ready=True)], deletionTimestamp=ts(5)),
            "1/1",
            "Terminating",
            "0",
        ),
        (
            pod(1, [], phase="Running", deletionTimestamp=ts(5))
            | {"status": {"phase": "Running", "reason": "NodeLost"}},
            "0/1",
            "Unknown",
            "0",
        ),
        (
            pod(
                1,
                [],
                phase="Pending",
                conditions=[
                    {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
                ],
            ),
            "0/1",
            "SchedulingGated",
            "0",
        ),
    ],
)
def test_pod_status(obj: dict[str, Any], ready: str, status: str, restarts: str) -> None:
    assert pod_status(obj, NOW) == (ready, status, restarts)


def test_pod_init_containers() -> None:
    init = [{"name": "i1", "image": "x"}, {"name": "i2", "image": "y"}]
    waiting = {"waiting": {"reason": "PodInitializing"}}
    done = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    running = pod(
        1,
        [container_status(state=waiting)],
        phase="Pending",
        init=init,
        init_statuses=[container_status("i1", state=done), container_status("i2")],
    )
    assert pod_status(running, NOW)[1] == "Init:1/2"
    crashing = pod(
        1,
        [],
        phase="Pending",
        init=init,
        init_statuses=[
            container_status(
                "i1",
                state={"waiting": {"reason": "CrashLoopBackOff"}},
                restarts=4,
                last_finished=30,
            )
        ],
    )
    assert pod_status(crashing, NOW) == ("0/1", "Init:CrashLoopBackOff", "4 (30s ago)")
    failed = pod(
        1,
        [],
        phase="Pending",
        init=init,
        init_statuses=[
            container_status("i1", state={"terminated": {"exitCode": 1, "reason": "Error"}})
        ],
    )
    assert pod_status(failed, NOW)[1] == "Init:Error"


def test_pod_sidecar_counts_as_container() -> None:
    init = [{"name": "side", "image": "x", "restartPolicy": "Always"}]
    obj = pod(
        1,
        [container_status("c0", ready=True, restarts=1, last_finished=3 * 3600)],
        init=init,
        init_statuses=[
            container_status("side", ready=True, started=True, restarts=2, last_finished=60)
        ],
        conditions=[{"type": "Initialized", "status": "True"}],
    )
    assert pod_status(obj, NOW) == ("2/2", "Running", "3 (60s ago)")


def test_pod_completed_container_with_running_one() -> None:
    statuses = [
        container_status("a", ready=True),
        container_status("b", state={"terminated": {"exitCode": 0, "reason": "Completed"}}),
    ]
    ready_cond = [{"type": "Ready", "status": "True"}]
    assert pod_status(pod(2, statuses, conditions=ready_cond), NOW)[1] == "Running"
    assert pod_status(pod(2, statuses), NOW)[1] == "NotReady"


def test_pod_row_cells_and_conditions() -> None:
    obj = pod(1, [container_status(ready=True)])
    obj["spec"]["nodeName"] = "node-1"
    obj["spec"]["readinessGates"] = [{"conditionType": "a"}, {"conditionType": "b"}]
    obj["status"]["podIPs"] = [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}]
    obj["status"]["conditions"] = [
        {"type": "a", "status": "True"},
        {"type": "b", "status": "False"},
    ]
    assert cells("", "Pod", obj) == [
        "p", "1/1", "Running", "0", "5m", "10.0.0.5", "node-1", "<none>", "1/2",
    ]  # fmt: skip
    assert cells("", "Pod", pod(1, []))[5:] == ["<none>", "<none>", "<none>", "<none>"]
    done = to_table(rt("", "Pod"), [pod(1, [], phase="Succeeded")], now=NOW)["rows"][0]
    assert done["conditions"] == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]
    running = to_table(rt("", "Pod"), [obj], now=NOW)["rows"][0]
    assert "conditions" not in running


# ---------------------------------------------------------------------------------------------
# Workloads and services


def test_deployment_cells() -> None:
    obj = {
        "metadata": meta("web", created=3 * 86400 + 7200),
        "spec": {
            "replicas": 3,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}],
            },
            "template": {
                "spec": {
                    "containers": [
                        {"name": "app", "image": "web:1"},
                        {"name": "log", "image": "l:2"},
                    ]
                }
            },
        },
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    }
    assert cells("apps", "Deployment", obj) == [
        "web", "2/3", 3, 2, "3d2h", "app,log", "web:1,l:2", "app=web,env in (dev,prod)",
    ]  # fmt: skip
    empty = {"metadata": meta("idle"), "spec": {"replicas": 0, "template": {}}}
    assert cells("apps", "Deployment", empty)[1:4] == ["0/0", 0, 0]


def test_label_selector_formatting() -> None:
    assert format_label_selector(None) == "<none>"
    assert format_label_selector({}) == "<none>"
    assert (
        format_label_selector(
            {
                "matchExpressions": [
                    {"key": "b", "operator": "DoesNotExist"},
                    {"key": "a", "operator": "Exists"},
                ]
            }
        )
        == "a,!b"
    )
    assert (
        format_label_selector({"matchExpressions": [{"key": "a", "operator": "Near"}]}) == "<error>"
    )


def test_replica_set_stateful_set_daemon_set_cells() -> None:
    template = {
        "spec": {"containers": [{"name": "c", "image": "i"}], "nodeSelector": {"os": "linux"}}
    }
    rs = {
        "metadata": meta("rs"),
        "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}}, "template": template},
        "status": {"replicas": 2, "readyReplicas": 1},
    }
    assert cells("apps", "ReplicaSet", rs) == ["rs", 2, 2, 1, "5m", "c", "i", "a=b"]
    sts = {"metadata": meta("db"), "spec": {"replicas": 3, "template": template}, "status": {}}
    assert cells("apps", "StatefulSet", sts) == ["db", "0/3", "5m", "c", "i"]
    ds = {
        "metadata": meta("agent"),
        "spec": {"selector": {"matchLabels": {"k": "v"}}, "template": template},
        "status": {
            "desiredNumberScheduled": 3,
            "currentNumberScheduled": 3,
            "numberReady": 2,
            "updatedNumberScheduled": 3,
            "numberAvailable": 2,
        },
    }
    assert cells("apps", "DaemonSet", ds) == [
        "agent", 3, 3, 2, 3, 2, "os=linux", "5m", "c", "i", "k=v",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        (
            {"type": "ClusterIP", "clusterIPs": ["10.96.0.10"], "selector": {"app": "dns"},
             "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]},
            {},
            ["10.96.0.10", "<none>", "53/UDP,53/TCP", "app=dns"],
        ),
        (
            {"type": "NodePort", "clusterIPs": ["10.0.0.1"], "externalIPs": ["1.2.3.4"],
             "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]},
            {},
            ["10.0.0.1", "1.2.3.4", "80:30080/TCP", "<none>"],
        ),
        (
            {"type": "LoadBalancer", "clusterIPs": ["10.0.0.2"], "ports": []},
            {},
            ["10.0.0.2", "<pending>", "<none>", "<none>"],
        ),
        (
            {"type": "LoadBalancer", "clusterIPs": ["10.0.0.2"], "externalIPs": ["9.9.9.9"],
             "ports": [{"port": 443, "protocol": "TCP"}]},
            {"loadBalancer": {"ingress": [{"hostname": "lb.example"}, {"ip": "5.5.5.5"}]}},
            ["10.0.0.2", "5.5.5.5,lb.example,9.9.9.9", "443/TCP", "<none>"],
        ),
        (
            {"type": "ExternalName", "externalName": "db.example.com"},
            {},
            ["<none>", "db.example.com", "<none>", "<none>"],
        ),
    ],
)  # fmt: skip
def test_service_cells(spec: dict[str, Any], status: dict[str, Any], expected: list[str]) -> None:
    row = cells("", "Service", {"metadata": meta("svc"), "spec": spec, "status": status})
    assert row[0:2] == ["svc", spec["type"]]
    assert [row[2], row[3], row[4], row[6]] == expected
    assert row[5] == "5m"


@pytest.mark.parametrize(
    ("spec", "status", "metadata", "expected"),
    [
        (
            {"completions": 3},
            {"succeeded": 3, "startTime": ts(600), "completionTime": ts(490),
             "conditions": [{"type": "Complete", "status": "True"}]},
            {},
            ["Complete", "3/3", "110s"],
        ),
        ({"parallelism": 4}, {"startTime": ts(130)}, {}, ["Running", "0/1 of 4", "2m10s"]),
        ({"parallelism": 1}, {}, {}, ["Running", "0/1", ""]),
        (
            {"completions": 1},
            {"conditions": [{"type": "Failed", "status": "True"}]},
            {},
            ["Failed", "0/1", ""],
        ),
        ({"completions": 1}, {}, {"deletionTimestamp": ts(1)}, ["Terminating", "0/1", ""]),
        (
            {"completions": 1},
            {"conditions": [{"type": "Suspended", "status": "True"}]},
            {},
            ["Suspended", "0/1", ""],
        ),
    ],
)  # fmt: skip
def test_job_cells(
    spec: dict[str, Any], status: dict[str, Any], metadata: dict[str, Any], expected: list[str]
) -> None:
    obj = {"metadata": meta("job", **metadata), "spec": spec, "status": status}
    assert cells("batch", "Job", obj)[1:4] == expected


def test_cron_job_cells() -> None:
    obj = {
        "metadata": meta("nightly"),
        "spec": {
            "schedule": "0 3 * * *",
            "suspend": False,
            "jobTemplate": {
                "spec": {"template": {"spec": {"containers": [{"name": "j", "image": "i"}]}}}
            },
        },
        "status": {"active": [{"name": "a"}], "lastScheduleTime": ts(45)},
    }
    assert cells("batch", "CronJob", obj) == [
        "nightly", "0 3 * * *", "<none>", "False", 1, "45s", "5m", "j", "i", "<none>",
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Other kinds


def test_simple_core_kinds() -> None:
    assert (
        cells(
            "", "ConfigMap", {"metadata": meta("c"), "data": {"a": "1"}, "binaryData": {"b": ""}}
        )[1]
        == 2
    )
    assert cells("", "Secret", {"metadata": meta("s"), "type": "Opaque", "data": {"k": "dg=="}})[
        1:3
    ] == [
        "Opaque",
        1,
    ]
    assert cells("", "Namespace", {"metadata": meta("ns"), "status": {"phase": "Active"}}) == [
        "ns",
        "Active",
        "5m",
    ]
    assert cells("", "ServiceAccount", {"metadata": meta("default")}) == ["default", 0, "5m"]


def test_node_cells() -> None:
    obj = {
        "metadata": meta(
            "n1",
            labels={"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge"},
        ),
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True"},
            ],
            "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}],
            "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Debian"},
        },
    }
    assert cells("", "Node", obj) == [
        "n1", "Ready,SchedulingDisabled", "control-plane,edge", "5m", "v1.33.0",
        "172.18.0.2", "<none>", "Debian", "<unknown>", "<unknown>",
    ]  # fmt: skip
    assert cells("", "Node", {"metadata": meta("n2")})[1:3] == ["Unknown", "<none>"]


def test_event_cells_for_both_api_versions() -> None:
    core = {
        "metadata": meta("e1"),
        "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{app}"},
        "reason": "Pulled",
        "type": "Normal",
        "message": " pulled image \n",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": ts(600),
        "lastTimestamp": ts(30),
        "count": 4,
    }
    assert cells("", "Event", core) == [
        "30s", "Normal", "Pulled", "pod/web-1", "spec.containers{app}", "kubelet, node-1",
        "pulled image", "10m", 4, "e1",
    ]  # fmt: skip
    new = {
        "metadata": meta("e2"),
        "regarding": {"kind": "Deployment", "name": "web"},
        "reason": "ScalingReplicaSet",
        "type": "Normal",
        "note": "Scaled up",
        "reportingController": "deployment-controller",
        "eventTime": "2024-05-01T11:59:00.000000Z",
    }
    assert cells("events.k8s.io", "Event", new) == [
        "60s", "Normal", "ScalingReplicaSet", "deployment/web", "", "deployment-controller",
        "Scaled up", "60s", 1, "e2",
    ]  # fmt: skip


def test_endpoints_and_slices() -> None:
    eps = {
        "metadata": meta("svc"),
        "subsets": [
            {
                "addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "fd00::3"}],
                "ports": [{"port": 80}, {"port": 443}],
            }
        ],
    }
    assert cells("", "Endpoints", eps)[1] == "10.0.0.1:80,10.0.0.2:80,[fd00::3]:80 + 3 more..."
    assert cells("", "Endpoints", {"metadata": meta("none")})[1] == "<none>"
    slice_ = {
        "metadata": meta("svc-abc"),
        "addressType": "IPv4",
        "ports": [{"port": 80}, {"name": "metrics"}, {}],
        "endpoints": [{"addresses": ["10.0.0.1"]}],
    }
    assert cells("discovery.k8s.io", "EndpointSlice", slice_)[1:4] == [
        "IPv4",
        "80,metrics,*",
        "10.0.0.1",
    ]
    assert cells("discovery.k8s.io", "EndpointSlice", {"metadata": meta()})[2:4] == [
        "<unset>",
        "<unset>",
    ]


def test_rbac_and_admission_kinds() -> None:
    binding = {
        "metadata": meta("rb"),
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"},
            {"kind": "User", "name": "bob"},
        ],
    }
    assert cells("rbac.authorization.k8s.io", "RoleBinding", binding) == [
        "rb", "ClusterRole/view", "5m", "alice, bob", "devs", "ci/bot",
    ]  # fmt: skip
    hooks = {"metadata": meta("hooks"), "webhooks": [{}, {}]}
    assert cells("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", hooks)[1] == 2
    assert printer_for("rbac.authorization.k8s.io", "Role") is None
    assert printer_for("apiextensions.k8s.io", "CustomResourceDefinition") is None


def test_storage_scheduling_coordination_kinds() -> None:
    sc = {
        "metadata": meta(
            "std", annotations={"storageclass.kubernetes.io/is-default-class": "true"}
        ),
        "provisioner": "rancher.io/local-path",
    }
    assert cells("storage.k8s.io", "StorageClass", sc) == [
        "std (default)", "rancher.io/local-path", "Delete", "Immediate", False, "5m",
    ]  # fmt: skip
    pc = {"metadata": meta("high"), "value": 1000, "preemptionPolicy": "Never"}
    assert cells("scheduling.k8s.io", "PriorityClass", pc) == ["high", 1000, False, "5m", "Never"]
    lease = {"metadata": meta("leader"), "spec": {"holderIdentity": "pod-a"}}
    assert cells("coordination.k8s.io", "Lease", lease) == ["leader", "pod-a", "5m"]
    pvc = {
        "metadata": meta("data"),
        "spec": {"volumeName": "pv-1", "storageClassName": "std"},
        "status": {
            "phase": "Bound",
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
        },
    }
    assert cells("", "PersistentVolumeClaim", pvc) == [
        "data", "Bound", "pv-1", "1Gi", "RWO", "std", "<unset>", "5m", "<unset>",
    ]  # fmt: skip


def test_controller_revision_quota_pdb_hpa() -> None:
    rev = {
        "metadata": meta(
            "ds-abc",
            ownerReferences=[
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "controller": True}
            ],
        ),
        "revision": 3,
    }
    assert cells("apps", "ControllerRevision", rev) == ["ds-abc", "daemonset.apps/agent", 3, "5m"]
    quota = {
        "metadata": meta("q"),
        "status": {
            "hard": {"pods": "10", "limits.cpu": "4", "requests.cpu": "2"},
            "used": {"pods": "3", "requests.cpu": "500m"},
        },
    }
    assert cells("", "ResourceQuota", quota)[1:3] == [
        "pods: 3/10, requests.cpu: 500m/2",
        "limits.cpu: 0/4",
    ]
    pdb = {
        "metadata": meta("pdb"),
        "spec": {"minAvailable": "50%"},
        "status": {"disruptionsAllowed": 1},
    }
    assert cells("policy", "PodDisruptionBudget", pdb)[1:4] == ["50%", "N/A", 1]
    cpu_target = {"type": "Utilization", "averageUtilization": 80}
    hpa = {
        "metadata": meta("hpa"),
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": cpu_target}},
                {"type": "Pods", "pods": {"target": {"averageValue": "100"}}},
                {"type": "External", "external": {"target": {"value": "1"}}},
            ],
        },
        "status": {
            "currentReplicas": 2,
            "currentMetrics": [
                {"type": "Resource", "resource": {"current": {"averageUtilization": 35}}},
            ],
        },
    }
    assert cells("autoscaling", "HorizontalPodAutoscaler", hpa)[1:6] == [
        "Deployment/web", "cpu: 35%/80%, <unknown>/100 + 1 more...", "<unset>", 5, 2,
    ]  # fmt: skip
