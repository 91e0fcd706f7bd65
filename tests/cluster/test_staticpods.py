"""The control plane's mirror pods on a development cluster's first node: what `kubectl get
pods -A` shows on a fresh cluster, their logs, their life as the kubelet keeps them, and how
the API server and the cluster's own controllers treat them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s, config as k8s_config

from kubeforge import Client
from kubeforge._client.errors import ApiError
from kubeforge._cluster.devcluster import DevCluster
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import Kubectl, eventually
from tests.support import kubectl_for

SYSTEM = "kube-system"
NODE = "kubeforge-node"
COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    async with DevCluster(ClusterOptions(pod_start_seconds=0.05)) as c:
        yield c


@pytest.fixture
async def kube(cluster: DevCluster) -> AsyncIterator[Client]:
    async with Client(cluster.cluster_config()) as client:
        yield client


def kubectl(cluster: DevCluster, tmp_path: Path) -> Kubectl:
    return kubectl_for(cluster.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path / "cache")


def running_and_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    ready = next((c for c in status.get("conditions") or () if c["type"] == "Ready"), None)
    return status.get("phase") == "Running" and ready is not None and ready["status"] == "True"


async def control_plane(kube: Client, node: str = NODE) -> dict[str, dict[str, Any]]:
    """The control plane's mirror pods once all three are Running and Ready."""

    async def ready() -> dict[str, dict[str, Any]] | None:
        pods = {p["metadata"]["name"]: p for p in await kube.list("v1/Pod", namespace=SYSTEM)}
        wanted = {f"{c}-{node}" for c in COMPONENTS}
        if set(pods) != wanted or not all(running_and_ready(p) for p in pods.values()):
            return None
        return pods

    return await eventually(ready, timeout=15)


async def test_a_fresh_cluster_lists_its_control_plane(
    cluster: DevCluster, kube: Client, tmp_path: Path
) -> None:
    pods = await control_plane(kube)
    rows = (await kubectl(cluster, tmp_path).run("get", "pods", "-A", "--no-headers")).out
    listed = sorted(line.split()[:4] for line in rows.splitlines())
    assert listed == [[SYSTEM, f"{c}-{NODE}", "1/1", "Running"] for c in COMPONENTS]
    node = await kube.get("v1/Node", NODE)
    for component in COMPONENTS:
        pod = pods[f"{component}-{NODE}"]
        meta, spec = pod["metadata"], pod["spec"]
        annotations = meta["annotations"]
        # As the kubelet makes a mirror pod of a static pod kubeadm wrote.
        assert annotations["kubernetes.io/config.source"] == "file"
        assert (
            annotations["kubernetes.io/config.mirror"] == annotations["kubernetes.io/config.hash"]
        )
        assert meta["labels"] == {"component": component, "tier": "control-plane"}
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "name": NODE,
                "uid": node["metadata"]["uid"],
                "controller": True,
            }
        ]
        assert spec["nodeName"] == NODE and spec["hostNetwork"] is True
        assert (spec["priorityClassName"], spec["priority"]) == ("system-node-critical", 2000001000)
        assert "serviceAccountName" not in spec
        assert {"operator": "Exists", "effect": "NoExecute"} in spec["tolerations"]
        assert pod["status"]["podIP"] == node["status"]["addresses"][0]["address"]
    assert "node-role.kubernetes.io/control-plane" in node["metadata"]["labels"]
    # No pod stands for a program that does not run: no etcd, DNS or kube-proxy.
    classes = await kube.list("scheduling.k8s.io/v1/PriorityClass")
    assert {(c["metadata"]["name"], c["value"]) for c in classes} == {
        ("system-node-critical", 2000001000),
        ("system-cluster-critical", 2000000000),
    }


async def test_logs_are_the_components_own(
    cluster: DevCluster, kube: Client, tmp_path: Path
) -> None:
    await control_plane(kube)
    kc = kubectl(cluster, tmp_path)
    await kc.run("run", "web", "--image=nginx")
    bound = 'Successfully bound pod to node pod="default/web" node="kubeforge-node"'

    async def scheduler_log() -> str | None:
        out = (await kc.run("logs", "-n", SYSTEM, f"kube-scheduler-{NODE}")).out
        return out if bound in out else None

    lines = (await eventually(scheduler_log, timeout=15)).splitlines()
    # klog's header: level, date, time, process id, source file and line.
    line = next(line for line in lines if bound in line)
    assert line.startswith("I") and "scheduler.py:" in line
    apiserver = (await kc.run("logs", "-n", SYSTEM, f"kube-apiserver-{NODE}")).out
    assert f"serving on {cluster.url}" in apiserver
    manager = (await kc.run("logs", "-n", SYSTEM, f"kube-controller-manager-{NODE}")).out
    assert 'controller started controller="replicaset"' in manager
    # Each record is in its own component's log only.
    assert bound not in manager and bound not in apiserver
    assert "controller started" not in apiserver


async def test_a_deleted_mirror_pod_comes_back(
    cluster: DevCluster, kube: Client, tmp_path: Path
) -> None:
    name = f"kube-scheduler-{NODE}"
    before = (await control_plane(kube))[name]
    kc = kubectl(cluster, tmp_path)
    # Not kubectl's wait for the deletion: it looks the name up again, and finding the new
    # mirror pod there already, would wait for a deletion it has missed.
    await kc.run("delete", "pod", "-n", SYSTEM, name, "--wait=false")

    async def replaced() -> dict[str, Any] | None:
        pod = (await control_plane(kube))[name]
        return pod if pod["metadata"]["uid"] != before["metadata"]["uid"] else None

    after = await eventually(replaced, timeout=30)
    # The static pod ran on: the same component, its log kept.
    assert after["metadata"]["annotations"] == {
        **before["metadata"]["annotations"],
        "kubernetes.io/config.seen": after["metadata"]["annotations"]["kubernetes.io/config.seen"],
    }
    log = (await kc.run("logs", "-n", SYSTEM, f"kube-apiserver-{NODE}")).out
    assert "serving on" in log


async def test_exec_into_a_mirror_pod_fails_clearly(
    cluster: DevCluster, kube: Client, tmp_path: Path
) -> None:
    await control_plane(kube)
    refused = await kubectl(cluster, tmp_path).run(
        "exec", "-n", SYSTEM, f"kube-apiserver-{NODE}", "--", "ls", check=False
    )
    assert refused.code != 0
    assert "runs inside the kubeforge process" in refused.err


async def test_mirror_pod_rules_of_the_api_server(cluster: DevCluster, kube: Client) -> None:
    await control_plane(kube)
    mirror = {"kubernetes.io/config.mirror": "abc"}
    container = {"name": "c", "image": "nginx"}
    unbound = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "unbound", "namespace": "default", "annotations": mirror},
        "spec": {"containers": [container]},
    }
    with pytest.raises(ApiError) as invalid:
        await kube.create(unbound)
    assert invalid.value.code == 422
    assert "must set spec.nodeName if mirror pod annotation is set" in invalid.value.message
    with pytest.raises(ApiError) as forbidden:
        await kube.create(
            {
                **unbound,
                "spec": {
                    "nodeName": "n",
                    "serviceAccountName": "default",
                    "containers": [container],
                },
            }
        )
    assert forbidden.value.code == 403
    assert "a mirror pod may not reference service accounts" in forbidden.value.message
    name = f"kube-apiserver-{NODE}"
    with pytest.raises(ApiError) as immutable:
        await kube.patch(
            "v1/Pod",
            name,
            {"metadata": {"annotations": {"kubernetes.io/config.mirror": None}}},
            namespace=SYSTEM,
        )
    assert immutable.value.code == 422
    assert "may not remove or update mirror pod annotation" in immutable.value.message
    # A mirror pod of no static pod of the node is removed by its kubelet.
    orphan = {
        **unbound,
        "metadata": {"name": "orphan", "namespace": "default", "annotations": mirror},
        "spec": {"nodeName": NODE, "containers": [container]},
    }
    await kube.create(orphan)

    async def gone() -> bool:
        return await kube.list("v1/Pod", namespace="default") == []

    await eventually(gone, timeout=10)


@pytest.fixture
async def two_nodes() -> AsyncIterator[tuple[DevCluster, Client]]:
    options = ClusterOptions(nodes=2, pod_start_seconds=0.05, node_monitor_grace_period=2.0)
    async with DevCluster(options) as cluster, Client(cluster.cluster_config()) as kube:
        yield cluster, kube


async def test_drain_skips_mirror_pods(
    two_nodes: tuple[DevCluster, Client], tmp_path: Path
) -> None:
    cluster, kube = two_nodes
    first = "kubeforge-node-0"
    before = await control_plane(kube, first)
    kc = kubectl(cluster, tmp_path)
    await kc.run("create", "deployment", "web", "--image=nginx", "--replicas=2")
    await kc.run("rollout", "status", "deployment/web", "--timeout=30s")
    drained = await kc.run("drain", first, "--timeout=30s")
    assert f"node/{first} drained" in drained.out
    evicted = [line for line in drained.out.splitlines() if line.endswith(" evicted")]
    assert evicted and not any("kube-" in line for line in evicted), drained.out
    after = await control_plane(kube, first)
    assert {n: p["metadata"]["uid"] for n, p in after.items()} == {
        n: p["metadata"]["uid"] for n, p in before.items()
    }


async def test_node_trouble_does_not_evict_them(two_nodes: tuple[DevCluster, Client]) -> None:
    cluster, kube = two_nodes
    first = "kubeforge-node-0"
    before = await control_plane(kube, first)
    # A workload that leaves a NotReady node at once, to know the taint acted.
    leaving = {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 0,
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "quick", "namespace": "default"},
        "spec": {
            "nodeName": first,
            "containers": [{"name": "c", "image": "nginx"}],
            "tolerations": [leaving],
        },
    }
    await kube.create(pod)
    await cluster.set_node_health(first, "not-ready")

    async def evicted() -> bool:
        pods = await kube.list("v1/Pod", namespace="default")
        return not pods or all(p["metadata"].get("deletionTimestamp") for p in pods)

    await eventually(evicted, timeout=20)
    mirrors = await kube.list("v1/Pod", namespace=SYSTEM)
    assert sorted(p["metadata"]["uid"] for p in mirrors) == sorted(
        p["metadata"]["uid"] for p in before.values()
    )
    assert not any(p["metadata"].get("deletionTimestamp") for p in mirrors)
    await cluster.set_node_health(first, "ready")
    await control_plane(kube, first)


async def test_no_nodes_no_control_plane_pods() -> None:
    for options in (ClusterOptions(nodes=0), ClusterOptions.bare()):
        async with DevCluster(options) as cluster, Client(cluster.cluster_config()) as kube:
            assert await kube.list("v1/Pod") == []


async def test_the_python_client_sees_them(
    cluster: DevCluster, kube: Client, tmp_path: Path
) -> None:
    await control_plane(kube)
    await kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
    )
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")

    def scenario() -> tuple[list[tuple[str, str, str]], str]:
        api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
        try:
            core = k8s.CoreV1Api(api)
            pods = core.list_pod_for_all_namespaces().items
            listed = [
                (p.metadata.namespace, p.metadata.name, p.status.phase)
                for p in pods
                if p.metadata.namespace == SYSTEM
            ]
            log = core.read_namespaced_pod_log(f"kube-scheduler-{NODE}", SYSTEM)
            return sorted(listed), log
        finally:
            api.close()

    async def bound() -> tuple[list[tuple[str, str, str]], str] | None:
        listed, log = await asyncio.to_thread(scenario)
        return (listed, log) if 'pod="default/web"' in log else None

    listed, log = await eventually(bound, timeout=15)
    assert listed == [(SYSTEM, f"{c}-{NODE}", "Running") for c in COMPONENTS]
    assert "Successfully bound pod to node" in log
