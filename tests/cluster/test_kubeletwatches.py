"""The simulated nodes of a development cluster share one watch of their pods and one of their
Nodes (_cluster/kubeletwatches.py): the watches do not grow with the nodes, and a node added
later, or cut off and back, still learns of every pod bound to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import TestEnv, eventually, metric_sum

NS = "default"
OPTIONS = ClusterOptions(nodes=3, pod_start_seconds=0.05, command_run_seconds=0.05)


@pytest.fixture
async def env() -> AsyncIterator[TestEnv]:
    async with TestEnv(crd_paths=(), options=OPTIONS) as started:
        yield started


def bound_pod(name: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx"}]},
    }


async def test_nodes_share_their_watches_and_a_late_node_runs_pods_bound_before_it(
    env: TestEnv,
) -> None:
    cluster = env.cluster
    assert cluster is not None
    server = cluster.server

    def watches(resource: str) -> float:
        return metric_sum(server, "apiserver_longrunning_requests", verb="WATCH", resource=resource)

    pods, nodes = watches("pods"), watches("nodes")
    # A pod bound to a node that does not run yet: its kubelet takes it up once it comes.
    await env.client.create(bound_pod("early", "late-node"))
    await cluster.add_node("late-node")

    async def running(name: str) -> bool:
        pod = await env.client.get("v1/Pod", name, namespace=NS)
        return (pod.get("status") or {}).get("phase") == "Running"

    await eventually(lambda: running("early"), timeout=20)
    assert (watches("pods"), watches("nodes")) == (pods, nodes)
    # ... and a pod bound to it afterwards too; each of the first nodes runs its own.
    await env.client.create(bound_pod("later", "late-node"))
    for i in range(3):
        await env.client.create(bound_pod(f"on-{i}", f"kubeforge-node-{i}"))
    for name in ("later", "on-0", "on-1", "on-2"):
        await eventually(lambda name=name: running(name), timeout=20)  # type: ignore[misc]
    pod = await env.client.get("v1/Pod", "on-1", namespace=NS)
    assert pod["status"]["hostIP"] == "10.0.0.3"  # kubeforge-node-1's address

    # Deleting a pod stops it on its node only; the others keep running.
    await env.client.delete("v1/Pod", "on-1", namespace=NS, grace_period_seconds=0)
    node = next(n for n in cluster.nodes if n.name == "kubeforge-node-1")

    async def stopped() -> bool:
        return not any(w.name == "on-1" for w in node._workers.values())

    await eventually(stopped, timeout=20)
    assert await running("on-0") and await running("later")


async def test_the_nodes_read_the_controllers_informers_rather_than_watching_again(
    env: TestEnv,
) -> None:
    cluster = env.cluster
    assert cluster is not None and cluster.manager is not None

    def watches(resource: str) -> float:
        return metric_sum(
            cluster.server, "apiserver_longrunning_requests", verb="WATCH", resource=resource
        )

    # One watch of pods and one of Nodes in the whole cluster: the controllers' informers,
    # which the three nodes read too.
    assert (watches("pods"), watches("nodes")) == (1, 1)
    cache = cluster.manager.cache
    pods = cache.informer_for("v1/Pod").store
    # A pod created unbound reaches its node once the scheduler binds it.
    await env.client.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "scheduled", "namespace": NS},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
        }
    )

    async def running() -> bool:
        pod = await env.client.get("v1/Pod", "scheduled", namespace=NS)
        return (pod.get("status") or {}).get("phase") == "Running"

    await eventually(running, timeout=20)
    assert "default/scheduled" in pods


async def test_a_pods_config_map_comes_from_the_controllers_informer_not_a_get(
    env: TestEnv,
) -> None:
    cluster = env.cluster
    assert cluster is not None and cluster.manager is not None
    config_maps = cluster.manager.cache.informer_for("v1/ConfigMap").store
    await env.client.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": NS},
            "data": {"mode": "fast"},
        }
    )
    await eventually(lambda: "default/settings" in config_maps, timeout=10)

    def gets() -> float:
        return metric_sum(
            cluster.server, "apiserver_request_total", verb="GET", resource="configmaps"
        )

    before = gets()
    pod = bound_pod("configured", "kubeforge-node-0")
    pod["spec"]["volumes"] = [{"name": "cfg", "configMap": {"name": "settings"}}]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "cfg", "mountPath": "/etc/cfg"}]
    await env.client.create(pod)

    async def running() -> bool:
        found = await env.client.get("v1/Pod", "configured", namespace=NS)
        return (found.get("status") or {}).get("phase") == "Running"

    await eventually(running, timeout=20)
    node = next(n for n in cluster.nodes if n.name == "kubeforge-node-0")
    assert node.volume_files(NS, "configured")["cfg"] == {"mode": b"fast"}
    # Neither this ConfigMap nor the namespace's kube-root-ca.crt was read with a GET.
    assert gets() == before
