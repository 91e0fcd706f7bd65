"""Nodes going down and coming back on the development cluster: the simulated kubelet's
health (not ready, unreachable), the node lifecycle controller's conditions and taints, the
taint eviction controller's deletions, and a Deployment failing over to another node; seen
with kubectl (1.33 and 1.29), the official Python client and `kubeforge dev node`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s, config as k8s_config

from kubeforge._client.client import Client
from kubeforge._cluster.nodehealth import HEALTH_ANNOTATION
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import Kubectl, TestEnv, eventually
from tests.support import kubectl_for, kubeforge

NS = "default"
NODE0, NODE1 = "kubeforge-node-0", "kubeforge-node-1"
# Short, yet long enough that a healthy node's renewals (five a grace period) still land on a
# busy machine: a healthy node seen silent would turn the zone's disruption state.
GRACE = 2.5
OPTIONS = ClusterOptions(
    nodes=2, node_monitor_grace_period=GRACE, pod_start_seconds=0.05, command_run_seconds=0.05
)
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"


@pytest.fixture
async def env() -> AsyncIterator[TestEnv]:
    """A two-node cluster whose node monitor grace period is a few seconds."""
    async with TestEnv(crd_paths=(), options=OPTIONS) as started:
        yield started


# -- helpers -----------------------------------------------------------------------------------


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    found = [c for c in obj.get("status", {}).get("conditions") or [] if c["type"] == kind]
    assert found, f"no {kind} condition in {obj['metadata']['name']}"
    return found[0]


def taints(node: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node["spec"].get("taints") or []}


async def node_where(api: Client, name: str, check: Any) -> dict[str, Any]:
    """The node once `check(node)` holds."""

    async def read() -> dict[str, Any] | None:
        node: dict[str, Any] = await api.get("v1/Node", name)
        return node if check(node) else None

    # Taints follow a condition within the node monitor period and the eviction rate limit.
    found: dict[str, Any] = await eventually(read, timeout=30, message=f"node {name}")
    return found


def pod(name: str, node: str, tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": tolerations or [],
            "containers": [{"name": "main", "image": "nginx"}],
        },
    }


def tolerating_unreachable(seconds: int | None) -> list[dict[str, Any]]:
    toleration: dict[str, Any] = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return [toleration]


async def running(api: Client, name: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        found: dict[str, Any] = await api.get("v1/Pod", name, namespace=NS)
        ready = [c for c in found["status"].get("conditions") or [] if c["type"] == "Ready"]
        return found if ready and ready[0]["status"] == "True" else None

    found: dict[str, Any] = await eventually(check, message=f"pod {name} ready")
    return found


def deletion_started(pod: dict[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


# -- not ready ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.33", "1.29"])
async def test_a_node_reported_not_ready_is_tainted_until_ready_again(
    env: TestEnv, tmp_path: Path, version: str
) -> None:
    api = env.client
    kubectl = kubectl_for(env.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path / "kc", version)
    await env.set_node_health(NODE1, "not-ready")
    node = await api.get("v1/Node", NODE1)
    ready = condition(node, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")
    assert ready["message"] == "container runtime is down"
    assert node["metadata"]["annotations"][HEALTH_ANNOTATION] == "not-ready"
    # The kubelet still heartbeats: the node is NotReady, not Unknown, and it is tainted.
    node = await node_where(
        api, NODE1, lambda n: taints(n) == {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")}
    )
    assert all(t.get("timeAdded") for t in node["spec"]["taints"])
    rows = (await kubectl.run("get", "nodes")).rows()
    status = {row[0]: row[1] for row in rows[1:]}
    assert status == {NODE0: "Ready", NODE1: "NotReady"}
    described = (await kubectl.run("describe", "node", NODE1)).out
    assert f"{NOT_READY}:NoExecute" in described
    assert f"{NOT_READY}:NoSchedule" in described
    assert "KubeletNotReady" in described
    # The scheduler keeps new pods off it.
    await api.create(pod("pinned", NODE1))

    async def unschedulable() -> str | None:
        found = await api.get("v1/Pod", "pinned", namespace=NS)
        scheduled = [
            c for c in found["status"].get("conditions") or [] if c["type"] == "PodScheduled"
        ]
        return (
            scheduled[0].get("message") if scheduled and scheduled[0]["status"] == "False" else None
        )

    message = await eventually(unschedulable)
    assert f"untolerated taint {{{NOT_READY}: }}" in message

    await env.set_node_health(NODE1, "ready")
    node = await node_where(api, NODE1, lambda n: not taints(n))
    assert condition(node, "Ready")["status"] == "True"
    assert HEALTH_ANNOTATION not in (node["metadata"].get("annotations") or {})
    assert (await running(api, "pinned"))["spec"]["nodeName"] == NODE1
    rows = (await kubectl.run("get", "nodes")).rows()
    assert {row[0]: row[1] for row in rows[1:]} == {NODE0: "Ready", NODE1: "Ready"}


# -- unreachable -------------------------------------------------------------------------------


async def test_an_unreachable_node_goes_unknown_after_the_grace_period(
    env: TestEnv, tmp_path: Path
) -> None:
    api = env.client
    await api.create(pod("resident", NODE1))
    await running(api, "resident")
    lease = await api.get("coordination.k8s.io/v1/Lease", NODE1, namespace="kube-node-lease")
    before = await api.get("v1/Node", NODE1)
    await env.set_node_health(NODE1, "unreachable")
    loop = asyncio.get_running_loop()
    cut = loop.time()
    node = await node_where(api, NODE1, lambda n: condition(n, "Ready")["status"] == "Unknown")
    # Not before the grace period, counted from the last heartbeat.
    assert loop.time() - cut > GRACE * 0.5
    for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
        found = condition(node, kind)
        assert (found["status"], found["reason"]) == ("Unknown", "NodeStatusUnknown"), kind
        assert found["message"] == "Kubelet stopped posting node status."
    # The last heartbeat is the kubelet's, kept as it was.
    assert (
        condition(node, "Ready")["lastHeartbeatTime"]
        == condition(before, "Ready")["lastHeartbeatTime"]
    )
    node = await node_where(
        api,
        NODE1,
        lambda n: taints(n) == {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")},
    )
    renewed = await api.get("coordination.k8s.io/v1/Lease", NODE1, namespace="kube-node-lease")
    assert renewed["spec"]["renewTime"] >= lease["spec"]["renewTime"]

    # The pods of the node are marked not ready, with an event.
    async def marked() -> bool:
        found = await api.get("v1/Pod", "resident", namespace=NS)
        return condition(found, "Ready")["status"] == "False"

    await eventually(marked)
    events = await api.list("events.k8s.io/v1/Event", namespace=NS)
    assert any(
        e["reason"] == "NodeNotReady" and e["regarding"]["name"] == "resident" for e in events
    )

    # The official Python client reads the same.
    path = env.write_kubeconfig(tmp_path / "kubeconfig")

    def read() -> Any:
        with k8s_config.new_client_from_config(config_file=str(path)) as client:
            return k8s.CoreV1Api(client).read_node(NODE1)

    seen = await asyncio.to_thread(read)
    ready = next(c for c in seen.status.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("Unknown", "NodeStatusUnknown")
    assert {(t.key, t.effect) for t in seen.spec.taints} == taints(node)
    assert all(t.time_added is not None for t in seen.spec.taints)

    # Back: the kubelet posts Ready at once, the taints go, and its pods are ready again.
    await env.set_node_health(NODE1, "ready")
    node = await node_where(api, NODE1, lambda n: not taints(n))
    ready = condition(node, "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    await running(api, "resident")


async def test_kubectl_taint_no_execute_evicts_pods_that_do_not_tolerate_it(
    env: TestEnv, tmp_path: Path
) -> None:
    api = env.client
    kubectl = kubectl_for(env.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path / "kc")
    await api.create(pod("plain", NODE0))
    tolerant = [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoExecute"}]
    await api.create(pod("tolerant", NODE0, tolerant))
    await running(api, "plain")
    await running(api, "tolerant")
    await kubectl.run("taint", "nodes", NODE0, "dedicated=db:NoExecute")

    async def gone() -> bool:
        names = [p["metadata"]["name"] for p in await api.list("v1/Pod", namespace=NS)]
        return "plain" not in names

    await eventually(gone)
    assert await _evicted(api, "plain")
    still = await api.get("v1/Pod", "tolerant", namespace=NS)
    assert not deletion_started(still)


# -- failover ----------------------------------------------------------------------------------


async def test_a_deployment_fails_over_from_an_unreachable_node(env: TestEnv) -> None:
    api = env.client
    template_spec = {
        "tolerations": tolerating_unreachable(1),
        "containers": [{"name": "main", "image": "nginx"}],
    }
    await api.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NS},
            "spec": {
                "replicas": 4,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": template_spec},
            },
        }
    )
    # A pod tolerating the unreachable node for ever, and one for a while.
    await api.create(pod("forever", NODE1, tolerating_unreachable(None)))
    await api.create(pod("patient", NODE1, tolerating_unreachable(3)))

    async def web_pods() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = await api.list(
            "v1/Pod", namespace=NS, label_selector="app=web"
        )
        return found

    async def spread() -> list[dict[str, Any]] | None:
        pods = await web_pods()
        ready = [p for p in pods if condition(p, "Ready")["status"] == "True"] if pods else []
        return pods if len(ready) == 4 else None

    pods = await eventually(spread)
    on_node1 = {p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == NODE1}
    assert on_node1, "the scheduler spreads the replicas over both nodes"
    await running(api, "forever")
    await running(api, "patient")

    await env.set_node_health(NODE1, "unreachable")

    # The replicas on the lost node are deleted after their second of toleration...
    async def evicted() -> list[dict[str, Any]] | None:
        pods = await web_pods()
        gone = [p for p in pods if p["metadata"]["name"] in on_node1 and deletion_started(p)]
        return gone if len(gone) == len(on_node1) else None

    for victim in await eventually(evicted):
        target = condition(victim, "DisruptionTarget")
        assert (target["status"], target["reason"]) == ("True", "DeletionByTaintManager")
        assert target["message"] == "Taint manager: deleting due to NoExecute taint"

    # ... and replaced on the node that is left.
    async def failed_over() -> bool:
        pods = [p for p in await web_pods() if not deletion_started(p)]
        return len(pods) == 4 and all(
            p["spec"].get("nodeName") == NODE0 and condition(p, "Ready")["status"] == "True"
            for p in pods
        )

    await eventually(failed_over)

    async def available() -> bool:
        deployment = await api.get("apps/v1/Deployment", "web", namespace=NS)
        return deployment["status"].get("availableReplicas") == 4

    await eventually(available)
    # The patient pod goes after its three seconds; the one tolerating for ever outlives it.
    patient = await eventually(
        lambda: _deleting(api, "patient"), message="the patient pod's eviction"
    )
    assert condition(patient, "DisruptionTarget")["reason"] == "DeletionByTaintManager"
    assert not deletion_started(await api.get("v1/Pod", "forever", namespace=NS))

    # The node comes back: it finishes the deletions it missed, and keeps the other pod.
    await env.set_node_health(NODE1, "ready")

    async def settled() -> bool:
        names = {p["metadata"]["name"] for p in await api.list("v1/Pod", namespace=NS)}
        return not (names & (on_node1 | {"patient"})) and "forever" in names

    await eventually(settled)
    await running(api, "forever")


async def _deleting(api: Client, name: str) -> dict[str, Any] | None:
    found: dict[str, Any] = await api.get("v1/Pod", name, namespace=NS)
    return found if deletion_started(found) else None


async def test_evictions_stop_when_no_node_is_ready(env: TestEnv) -> None:
    """Every node unreachable: the controller blames itself, not the nodes, and takes the
    NoExecute taints off until a node is Ready again."""
    api = env.client
    both = {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
    await env.set_node_health(NODE1, "unreachable")
    await node_where(api, NODE1, lambda n: taints(n) == both)
    await env.set_node_health(NODE0, "unreachable")
    await node_where(api, NODE0, lambda n: condition(n, "Ready")["status"] == "Unknown")
    for name in (NODE0, NODE1):
        await node_where(api, name, lambda n: taints(n) == {(UNREACHABLE, "NoSchedule")})
    await env.set_node_health(NODE0, "ready")
    await node_where(api, NODE0, lambda n: not taints(n))
    await node_where(api, NODE1, lambda n: taints(n) == both)


async def test_a_pending_eviction_is_cancelled_when_the_node_is_ready_again(
    env: TestEnv,
) -> None:
    api = env.client
    await api.create(pod("survivor", NODE1))  # the default 300 s toleration
    brief = [{"key": NOT_READY, "operator": "Exists", "effect": "NoExecute"}]
    brief[0]["tolerationSeconds"] = 1
    await api.create(pod("brief", NODE1, brief))
    await running(api, "survivor")
    await running(api, "brief")
    await env.set_node_health(NODE1, "not-ready")
    await node_where(api, NODE1, lambda n: (NOT_READY, "NoExecute") in taints(n))
    # The brief pod goes after its second (its node's kubelet, still in contact, removes it);
    # the survivor's deletion, scheduled with it, waits for 300 s.
    await eventually(lambda: _evicted(api, "brief"), message="the brief pod's eviction")

    async def brief_gone() -> bool:
        names = [p["metadata"]["name"] for p in await api.list("v1/Pod", namespace=NS)]
        return "brief" not in names

    await eventually(brief_gone)
    survivor = await api.get("v1/Pod", "survivor", namespace=NS)
    assert not deletion_started(survivor)
    # A node its kubelet reports NotReady keeps its pods' readiness (upstream marks pods
    # not ready only when it finds the node silent).
    assert condition(survivor, "Ready")["status"] == "True"
    await env.set_node_health(NODE1, "ready")
    await eventually(lambda: _event(api, f"Cancelling deletion of Pod {NS}/survivor"))
    found = await running(api, "survivor")
    assert not deletion_started(found)
    tolerations = {(t.get("key"), t.get("tolerationSeconds")) for t in found["spec"]["tolerations"]}
    assert {(NOT_READY, 300), (UNREACHABLE, 300)} <= tolerations


async def _event(api: Client, note: str) -> bool:
    """Whether the taint eviction controller recorded an event with `note`."""
    events = await api.list("events.k8s.io/v1/Event", namespace=NS)
    return any(
        e["reason"] == "TaintManagerEviction"
        and e["note"] == note
        and e["reportingController"] == "taint-eviction-controller"
        for e in events
    )


async def _evicted(api: Client, name: str) -> bool:
    return await _event(api, f"Marking for deletion Pod {NS}/{name}")


# -- the command line --------------------------------------------------------------------------


async def test_kubeforge_dev_node_takes_a_node_down_and_back(env: TestEnv, tmp_path: Path) -> None:
    api = env.client
    path = str(env.write_kubeconfig(tmp_path / "kubeconfig"))
    down = await kubeforge("dev", "node", NODE1, "not-ready", "--kubeconfig", path)
    assert down.code == 0, down.err
    assert f"node {NODE1}: NotReady" in down.out
    assert condition(await api.get("v1/Node", NODE1), "Ready")["status"] == "False"

    cut = await kubeforge("dev", "node", NODE1, "unreachable", "--kubeconfig", path)
    assert cut.code == 0, cut.err
    assert "stopped renewing its Lease" in cut.out
    await node_where(api, NODE1, lambda n: condition(n, "Ready")["status"] == "Unknown")

    back = await kubeforge("dev", "node", NODE1, "ready", "--kubeconfig", path)
    assert back.code == 0, back.err
    assert f"node {NODE1}: Ready" in back.out
    assert condition(await api.get("v1/Node", NODE1), "Ready")["status"] == "True"

    missing = await kubeforge("dev", "node", "nowhere", "unreachable", "--kubeconfig", path)
    assert missing.code == 1
    assert "no node 'nowhere'" in missing.err
    wrong = await kubeforge("dev", "node", NODE1, "sleepy", "--kubeconfig", path)
    assert wrong.code == 2
    assert "sleepy" in wrong.err


async def test_kubectl_annotate_is_the_same_switch(env: TestEnv, tmp_path: Path) -> None:
    kubectl: Kubectl = kubectl_for(env.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path / "kc")
    await kubectl.run("annotate", "node", NODE0, f"{HEALTH_ANNOTATION}=not-ready")
    await node_where(env.client, NODE0, lambda n: condition(n, "Ready")["status"] == "False")
    await kubectl.run("annotate", "node", NODE0, f"{HEALTH_ANNOTATION}-")
    await node_where(env.client, NODE0, lambda n: condition(n, "Ready")["status"] == "True")
    assert env.cluster is not None
    with pytest.raises(KeyError):
        await env.cluster.set_node_health("nowhere", "not-ready")


async def test_a_cordoned_node_is_tainted_unschedulable(env: TestEnv, tmp_path: Path) -> None:
    kubectl = kubectl_for(env.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path / "kc")
    unschedulable = ("node.kubernetes.io/unschedulable", "NoSchedule")
    await kubectl.run("cordon", NODE0)
    await node_where(env.client, NODE0, lambda n: taints(n) == {unschedulable})
    rows = (await kubectl.run("get", "nodes")).rows()
    assert {row[0]: row[1] for row in rows[1:]}[NODE0] == "Ready,SchedulingDisabled"
    await kubectl.run("uncordon", NODE0)
    await node_where(env.client, NODE0, lambda n: not taints(n))
