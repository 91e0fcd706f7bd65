"""Disruptions: the eviction subresource honouring PodDisruptionBudgets, the disruption
controller keeping budgets' status, and `kubectl cordon/uncordon/drain` on a cluster of two
simulated nodes.

The first tests talk to an API server alone and play the disruption controller themselves,
writing a budget's status through `poddisruptionbudgets/status`, so each answer of the
eviction subresource is reached on purpose.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s, config as k8s_config
from kubernetes.client.rest import ApiException

from kubeforge import Client, ClusterConfig
from kubeforge._client.auth import StaticToken
from kubeforge._cluster.controllers import disruption
from kubeforge._cluster.devcluster import DevCluster
from kubeforge._cluster.options import ClusterOptions
from kubeforge._runtime.manager import Manager
from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl, eventually
from tests.support import HTTPClient, kubectl_for
from tests.support.crds import widget, widget_crd

NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
PDBS = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"
NOW = "2024-01-01T00:00:00Z"
GADGET = {"name": "gadget", "namespace": NS}


# -- playing the kubelet and the disruption controller ---------------------------------------


def a_pod(name: str, labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {"app": "web"}, **meta},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
    }


async def run_pod(http: HTTPClient, name: str, *, ready: bool = True, **meta: Any) -> None:
    """A pod the kubelet runs: Running, and Ready unless told otherwise. A finalizer keeps
    it visible once deleted, so a test can see how the deletion left it."""
    created = await http.post(PODS, a_pod(name, finalizers=["test/keep"], **meta))
    assert created.status == 201, created.body
    status = {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": NOW}
        ],
    }
    reply = await http.patch(
        f"{PODS}/{name}/status", {"status": status}, "application/merge-patch+json"
    )
    assert reply.status == 200, reply.body


async def budget(
    http: HTTPClient,
    name: str = "web",
    *,
    allowed: int,
    healthy: int = 2,
    desired: int = 2,
    observed: int = 1,
    selector: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A PodDisruptionBudget whose status says what the disruption controller would."""
    body = {
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}} if selector is None else selector,
            **(spec or {"minAvailable": desired}),
        },
    }
    created = await http.post(PDBS, body)
    assert created.status == 201, created.body
    status = {
        "observedGeneration": observed,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": healthy,
    }
    reply = await http.patch(
        f"{PDBS}/{name}/status", {"status": status}, "application/merge-patch+json"
    )
    assert reply.status == 200, reply.body
    result: dict[str, Any] = reply.json()
    return result


def eviction(name: str, version: str = "policy/v1", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": version, "kind": "Eviction", "metadata": {"name": name}, **fields}


async def evict(http: HTTPClient, name: str, query: str = "", **fields: Any) -> Any:
    return await http.post(f"{PODS}/{name}/eviction{query}", eviction(name, **fields))


async def pod(http: HTTPClient, name: str) -> dict[str, Any]:
    reply = await http.get(f"{PODS}/{name}")
    assert reply.status == 200, reply.body
    result: dict[str, Any] = reply.json()
    return result


async def pdb_status(http: HTTPClient, name: str = "web") -> dict[str, Any]:
    result: dict[str, Any] = (await http.get(f"{PDBS}/{name}")).json()["status"]
    return result


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for item in (obj.get("status") or {}).get("conditions") or ():
        if item["type"] == kind:
            return dict(item)
    return None


# -- the eviction subresource ----------------------------------------------------------------


async def test_an_eviction_takes_one_disruption_and_marks_the_pod(http: HTTPClient) -> None:
    await run_pod(http, "a")
    await run_pod(http, "b")
    await budget(http, allowed=1, healthy=3)
    reply = await evict(http, "a")
    assert reply.status == 201, reply.body
    assert reply.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    evicted = await pod(http, "a")
    assert evicted["metadata"]["deletionTimestamp"]
    target = condition(evicted, "DisruptionTarget")
    assert target is not None
    assert (target["status"], target["reason"], target["message"]) == (
        "True",
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
    )
    status = await pdb_status(http)
    assert status["disruptionsAllowed"] == 0
    assert list(status["disruptedPods"]) == ["a"]
    allowed = condition({"status": status}, "DisruptionAllowed")
    assert allowed is not None
    assert (allowed["status"], allowed["reason"]) == ("False", "InsufficientPods")

    # The budget has nothing left: the next eviction is refused, naming the budget.
    refused = await evict(http, "b")
    assert refused.status == 429, refused.body
    body = refused.json()
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"] == {
        "causes": [
            {
                "reason": "DisruptionBudget",
                "message": "The disruption budget web needs 2 healthy pods and has 3 currently",
            }
        ]
    }
    assert "Retry-After" not in refused.headers
    assert not (await pod(http, "b"))["metadata"].get("deletionTimestamp")


async def test_a_budget_not_yet_observed_asks_to_retry_later(http: HTTPClient) -> None:
    await run_pod(http, "a")
    await budget(http, allowed=1, observed=0)
    refused = await evict(http, "a")
    assert refused.status == 429, refused.body
    assert refused.headers["Retry-After"] == "10"
    details = refused.json()["details"]
    assert details["retryAfterSeconds"] == 10
    assert details["causes"][0]["message"] == (
        "The disruption budget web is still being processed by the server."
    )


async def test_dry_run_evictions_change_nothing(http: HTTPClient) -> None:
    await run_pod(http, "a")
    await budget(http, allowed=1)
    before = await pod(http, "a")
    by_query = await evict(http, "a", "?dryRun=All")
    by_body = await evict(http, "a", deleteOptions={"dryRun": ["All"]})
    assert (by_query.status, by_body.status) == (201, 201), (by_query.body, by_body.body)
    assert await pod(http, "a") == before
    status = await pdb_status(http)
    assert status["disruptionsAllowed"] == 1 and "disruptedPods" not in status


async def test_pods_already_disrupted_are_deleted_whatever_the_budget(http: HTTPClient) -> None:
    await run_pod(http, "done")
    finished = {"status": {"phase": "Succeeded"}}
    reply = await http.patch(f"{PODS}/done/status", finished, "application/merge-patch+json")
    assert reply.status == 200
    created = await http.post(PODS, a_pod("waiting", finalizers=["test/keep"]))
    assert created.status == 201
    await budget(http, allowed=0)
    for name in ("done", "waiting"):
        reply = await evict(http, name)
        assert reply.status == 201, reply.body
        assert (await pod(http, name))["metadata"]["deletionTimestamp"]
    assert (await pdb_status(http))["disruptionsAllowed"] == 0


@pytest.mark.parametrize(
    ("policy", "healthy", "evicted"),
    [
        (None, 2, True),  # the budget is met without it: it may go
        (None, 1, False),  # the budget is not met: it is needed to become healthy
        ("IfHealthyBudget", 1, False),
        ("AlwaysAllow", 1, True),
    ],
)
async def test_unhealthy_pods_and_the_unhealthy_pod_eviction_policy(
    http: HTTPClient, policy: str | None, healthy: int, evicted: bool
) -> None:
    await run_pod(http, "sick", ready=False)
    spec: dict[str, Any] = {"minAvailable": 2}
    if policy is not None:
        spec["unhealthyPodEvictionPolicy"] = policy
    await budget(http, allowed=0, healthy=healthy, **spec)
    reply = await evict(http, "sick")
    assert reply.status == (201 if evicted else 429), reply.body
    assert bool((await pod(http, "sick"))["metadata"].get("deletionTimestamp")) == evicted
    # An unhealthy pod never takes from the budget.
    assert "disruptedPods" not in await pdb_status(http)


async def test_two_budgets_for_one_pod_fail_with_kube_apiserver_s_message(
    http: HTTPClient,
) -> None:
    await run_pod(http, "a")
    await budget(http, "first", allowed=1)
    await budget(http, "second", allowed=1)
    reply = await evict(http, "a")
    # kube-apiserver calls it an internal error (500); nothing fails inside the server, so
    # here it is a 400, with the same message.
    assert reply.status == 400, reply.body
    assert reply.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction "
        "subresource does not support.",
        "reason": "BadRequest",
        "code": 400,
    }


async def test_budgets_that_select_no_pod_are_not_consulted(http: HTTPClient) -> None:
    await run_pod(http, "a")
    await budget(http, "empty", allowed=0, selector={})
    await budget(http, "other", allowed=0, selector={"matchLabels": {"app": "db"}})
    assert (await evict(http, "a")).status == 201


async def test_eviction_bodies_and_options(http: HTTPClient) -> None:
    await run_pod(http, "a")
    await run_pod(http, "b")
    mismatch = await http.post(f"{PODS}/a/eviction", eviction("b"))
    assert mismatch.status == 400
    assert mismatch.json()["message"] == "name in URL does not match name in Eviction object"
    other = await http.post(f"{PODS}/a/eviction", eviction("a", version="apps/v1"))
    assert other.status == 400, other.body
    stale = await evict(http, "a", deleteOptions={"preconditions": {"resourceVersion": "1"}})
    assert stale.status == 409, stale.body
    assert not (await pod(http, "a"))["metadata"].get("deletionTimestamp")
    # policy/v1beta1 Evictions are read as policy/v1's, with their options.
    old = await evict(http, "a", version="policy/v1beta1", deleteOptions={"gracePeriodSeconds": 7})
    assert old.status == 201, old.body
    assert (await pod(http, "a"))["metadata"]["deletionGracePeriodSeconds"] == 7
    missing = await evict(http, "nobody")
    assert missing.status == 404


async def test_admission_sees_the_eviction_and_a_refusal_changes_nothing(
    http: HTTPClient,
) -> None:
    await run_pod(http, "a")
    await run_pod(http, "protected")
    await budget(http, allowed=2, healthy=4)
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "keep"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods/eviction"],
                    }
                ]
            },
            "validations": [
                {"expression": "object.kind == 'Eviction' && object.metadata.name != 'protected'"}
            ],
        },
    }
    bind = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "keep"},
        "spec": {"policyName": "keep", "validationActions": ["Deny"]},
    }
    for path, obj in (
        ("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", policy),
        ("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", bind),
    ):
        assert (await http.post(path, obj)).status == 201

    refused = await evict(http, "protected")
    assert refused.status == 422, refused.body
    assert "ValidatingAdmissionPolicy 'keep'" in refused.json()["message"]
    assert not (await pod(http, "protected"))["metadata"].get("deletionTimestamp")
    assert (await pdb_status(http))["disruptionsAllowed"] == 2
    assert (await evict(http, "a")).status == 201


async def test_the_python_client_evicts_and_is_refused(http: HTTPClient, kubeconfig: Path) -> None:
    await run_pod(http, "a")
    await run_pod(http, "b")
    await budget(http, allowed=1)
    api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    core = k8s.CoreV1Api(api)

    def scenario() -> None:
        body = k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="a", namespace=NS))
        core.create_namespaced_pod_eviction("a", NS, body)
        with pytest.raises(ApiException) as refused:
            core.create_namespaced_pod_eviction(
                "b", NS, k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="b", namespace=NS))
            )
        assert refused.value.status == 429
        assert "disruption budget web" in str(refused.value.body)

    try:
        await asyncio.to_thread(scenario)
    finally:
        api.close()
    assert (await pod(http, "a"))["metadata"]["deletionTimestamp"]


# -- counting pods by their controllers' scale -------------------------------------------------


async def test_expected_pods_are_the_scales_of_the_pods_controllers(server: APIServer) -> None:
    """StatefulSets, ReplicationControllers and any kind with a scale subresource count
    with their replicas (here on a bare server, with the disruption controller alone)."""
    cfg = ClusterConfig(
        server=server.url, ca_data=server.ca_pem, credentials=StaticToken(server.token)
    )
    manager = Manager(client=Client(cfg, field_manager="kube-controller-manager"))
    disruption.setup(manager)
    task = asyncio.create_task(manager.start())
    try:
        async with Client(cfg) as kube:
            await kube.create({**widget_crd(), "metadata": {"name": "widgets.example.com"}})
            await kube.wait_established(["widgets.example.com"])
            template = {
                "metadata": {"labels": {"app": "mixed"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            }
            selector = {"matchLabels": {"app": "mixed"}}
            owners = [
                await kube.create(
                    {
                        "apiVersion": "apps/v1",
                        "kind": "StatefulSet",
                        "metadata": {"name": "db", "namespace": NS},
                        "spec": {
                            "replicas": 4,
                            "serviceName": "db",
                            "selector": selector,
                            "template": template,
                        },
                    }
                ),
                await kube.create(
                    {
                        "apiVersion": "v1",
                        "kind": "ReplicationController",
                        "metadata": {"name": "old", "namespace": NS},
                        "spec": {"replicas": 2, "selector": {"app": "mixed"}, "template": template},
                    }
                ),
                await kube.create({**widget("gadget", replicas=3), "metadata": GADGET}),
            ]
            for owner in owners:
                ref = {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
                pod = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{owner['metadata']['name']}-0",
                        "namespace": NS,
                        "labels": {"app": "mixed"},
                        "ownerReferences": [ref],
                    },
                    "spec": template["spec"],
                }
                await kube.create(pod)
            await kube.create(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": "mixed", "namespace": NS},
                    "spec": {"maxUnavailable": 1, "selector": selector},
                }
            )
            await status_when(kube, "mixed", expectedPods=9, desiredHealthy=8, disruptionsAllowed=0)
    finally:
        manager.stop()
        await task


# -- the disruption controller and kubectl drain on two nodes ------------------------------------


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    async with DevCluster(ClusterOptions(nodes=2)) as c:
        yield c


@pytest.fixture
async def kube(cluster: DevCluster) -> AsyncIterator[Client]:
    async with Client(cluster.cluster_config()) as client:
        yield client


def kubectl(cluster: DevCluster, tmp_path: Path, version: str = "1.33") -> Kubectl:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    return kubectl_for(kubeconfig, tmp_path / f"cache-{version}", version)


async def status_when(kube: Client, name: str, **expected: int) -> dict[str, Any]:
    """The budget's status once its counts are `expected` (and it is observed)."""

    async def current() -> dict[str, Any] | None:
        pdb = await kube.get("policy/v1/PodDisruptionBudget", name, namespace=NS)
        status: dict[str, Any] = pdb.get("status") or {}
        if status.get("observedGeneration") != pdb["metadata"]["generation"]:
            return None
        counts = {key: status.get(key) for key in expected}
        assert counts == expected, counts
        return status

    result: dict[str, Any] = await eventually(current, timeout=20)
    return result


async def test_the_controller_keeps_budgets_status(
    cluster: DevCluster, kube: Client, tmp_path: Path
) -> None:
    kc = kubectl(cluster, tmp_path)
    await kc.run("create", "deployment", "web", "--image=nginx", "--replicas=3")
    await kc.run("create", "pdb", "web", "--selector=app=web", "--min-available=2")
    await kc.run("create", "pdb", "half", "--selector=app=web", "--max-unavailable=50%")
    status = await status_when(
        kube, "web", currentHealthy=3, desiredHealthy=2, expectedPods=3, disruptionsAllowed=1
    )
    allowed = condition({"status": status}, "DisruptionAllowed")
    assert allowed is not None
    assert (allowed["status"], allowed["reason"]) == ("True", "SufficientPods")
    # A percentage counts from the Deployment's scale: 3 less half of 3 rounded up.
    await status_when(kube, "half", expectedPods=3, desiredHealthy=1, disruptionsAllowed=2)

    await kc.run("scale", "deployment/web", "--replicas=1")
    await status_when(kube, "half", expectedPods=1, desiredHealthy=0, disruptionsAllowed=1)
    status = await status_when(
        kube, "web", currentHealthy=1, desiredHealthy=2, disruptionsAllowed=0
    )
    allowed = condition({"status": status}, "DisruptionAllowed")
    assert allowed is not None
    assert (allowed["status"], allowed["reason"]) == ("False", "InsufficientPods")
    table = (await kc.run("get", "pdb", "web")).out
    assert table.split("\n")[1].split()[:4] == ["web", "2", "N/A", "0"]


async def test_budgets_whose_pods_cannot_be_counted(
    cluster: DevCluster, kube: Client, tmp_path: Path
) -> None:
    kc = kubectl(cluster, tmp_path)
    # A percentage or maxUnavailable counts the pods' controllers; a bare pod has none.
    await kc.run("run", "lone", "--image=nginx", "--labels=app=lone")
    await kc.run("create", "pdb", "lone", "--selector=app=lone", "--max-unavailable=1")
    await status_when(kube, "lone", expectedPods=0, disruptionsAllowed=0)

    async def warned() -> bool:
        events = (await kc.run("get", "events", "--field-selector=involvedObject.name=lone")).out
        return "UnmanagedPods" in events

    await eventually(warned, timeout=20)

    # A DaemonSet has no scale: the status cannot be computed, so it allows nothing.
    await _daemon_pod(kube, "kubeforge-node-0")
    await kc.run("create", "pdb", "agent", "--selector=app=agent", "--max-unavailable=1")

    async def failed_safe() -> dict[str, Any] | None:
        pdb = await kube.get("policy/v1/PodDisruptionBudget", "agent", namespace=NS)
        return condition(pdb, "DisruptionAllowed")

    allowed = await eventually(failed_safe, timeout=20)
    assert (allowed["status"], allowed["reason"], allowed["message"]) == (
        "False",
        "SyncFailed",
        "daemonsets.apps does not implement the scale subresource",
    )


@pytest.mark.parametrize("version", ["1.33", "1.29"])
async def test_drain_evicts_within_the_budget_and_skips_daemon_pods(
    cluster: DevCluster, kube: Client, tmp_path: Path, version: str
) -> None:
    kc = kubectl(cluster, tmp_path, version)
    await kc.run("create", "deployment", "web", "--image=nginx", "--replicas=3")
    await kc.run("rollout", "status", "deployment/web", "--timeout=30s")
    await kc.run("create", "pdb", "web", "--selector=app=web", "--min-available=2")
    await status_when(kube, "web", currentHealthy=3, disruptionsAllowed=1)
    web = await kube.list("v1/Pod", namespace=NS, label_selector="app=web")
    per_node: dict[str, list[str]] = {}
    for item in web:
        per_node.setdefault(item["spec"]["nodeName"], []).append(item["metadata"]["name"])
    # Spread over the two nodes: the busier one has two pods, which one budget of one
    # disruption cannot let go at once.
    node = max(per_node, key=lambda n: len(per_node[n]))
    assert len(per_node[node]) == 2, per_node
    await _daemon_pod(kube, node)

    refused = await kc.run("drain", node, "--timeout=30s", check=False)
    assert refused.code != 0
    assert "cannot delete DaemonSet-managed Pods" in refused.err
    assert (await kube.get("v1/Node", node))["spec"].get("unschedulable") is True

    drained = await kc.run("drain", node, "--ignore-daemonsets", "--timeout=60s", timeout=90)
    assert f"node/{node} drained" in drained.out
    for name in per_node[node]:
        assert f"pod/{name} evicted" in drained.out
    # The second eviction waited for the first pod's replacement.
    assert "(will retry after 5s): Cannot evict pod as it would violate the pod's " in (drained.err)
    assert "ignoring DaemonSet-managed Pods" in drained.err

    async def moved() -> bool:
        pods = await kube.list("v1/Pod", namespace=NS, label_selector="app=web")
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        return len(running) == 3 and all(p["spec"]["nodeName"] != node for p in running)

    await eventually(moved, timeout=30)
    # Only the DaemonSet's pod is left on the node.
    left = await kube.list("v1/Pod", namespace=NS, field_selector=f"spec.nodeName={node}")
    assert left and all(p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet" for p in left), [
        p["metadata"]["name"] for p in left
    ]

    await kc.run("uncordon", node)
    assert not (await kube.get("v1/Node", node))["spec"].get("unschedulable")


async def test_drain_needs_leave_for_local_data(
    cluster: DevCluster, kube: Client, tmp_path: Path
) -> None:
    kc = kubectl(cluster, tmp_path)
    scratch = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "scratch"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "scratch"}},
            "template": {
                "metadata": {"labels": {"app": "scratch"}},
                "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": "kubeforge-node-1"},
                    "containers": [
                        {
                            "name": "c",
                            "image": "nginx",
                            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                        }
                    ],
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    }
    await kc.apply(orjson_dumps(scratch))
    await kc.run("rollout", "status", "deployment/scratch", "--timeout=30s")
    refused = await kc.run("drain", "kubeforge-node-1", "--timeout=30s", check=False)
    assert refused.code != 0
    assert "cannot delete Pods with local storage" in refused.err
    drained = await kc.run("drain", "kubeforge-node-1", "--delete-emptydir-data", "--timeout=60s")
    assert "node/kubeforge-node-1 drained" in drained.out
    left = await kube.list("v1/Pod", namespace=NS, field_selector="spec.nodeName=kubeforge-node-1")
    assert left == []


async def _daemon_pod(kube: Client, node: str) -> str:
    """The pod a DaemonSet runs on `node` (drain must leave it be), once it runs there."""
    await kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": NS},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "agent", "image": "busybox"}]},
                },
            },
        }
    )

    async def running_there() -> str | None:
        pods = await kube.list("v1/Pod", namespace=NS, field_selector=f"spec.nodeName={node}")
        for item in pods:
            owner = (item["metadata"].get("ownerReferences") or [{}])[0]
            if owner.get("kind") == "DaemonSet" and item["status"].get("phase") == "Running":
                return str(item["metadata"]["name"])
        return None

    name: str = await eventually(running_there, timeout=30, message=f"a DaemonSet pod on {node}")
    return name


def orjson_dumps(obj: Any) -> str:
    return orjson.dumps(obj).decode()
