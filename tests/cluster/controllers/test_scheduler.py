"""The scheduler against the embedded API server: spreading, node selectors and affinity,
unschedulable and tainted nodes, readiness, capacity, resources, and upstream's messages."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeforge._client.auth import StaticToken
from kubeforge._client.client import Client
from kubeforge._client.config import ClusterConfig
from kubeforge._cluster.controllers import scheduler
from kubeforge._cluster.controllers.scheduler import pod_requests, resource_amount, tolerates
from kubeforge._runtime.manager import Manager
from kubeforge.apiserver import APIServer
from kubeforge.testing import eventually

NS = "default"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


@pytest.fixture
async def manager(server: APIServer) -> AsyncIterator[Manager]:
    """A manager running only the scheduler."""
    config = ClusterConfig(
        server=server.url, ca_data=server.ca_pem, credentials=StaticToken(server.token)
    )
    mgr = Manager(client=Client(config))
    scheduler.setup(mgr)
    task = asyncio.create_task(mgr.start())
    yield mgr
    mgr.stop()
    await task


async def add_node(
    api: Client,
    name: str,
    *,
    labels: dict[str, str] | None = None,
    ready: str = "True",
    pods: str = "110",
    cpu: str = "4",
    **spec: Any,
) -> None:
    await api.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": spec,
        }
    )
    resources = {"cpu": cpu, "memory": "8Gi", "pods": pods}
    status = {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady"}],
    }
    await api.patch_status("v1/Node", name, {"status": status})


def pod(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx", **spec.pop("container", {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"containers": [container], **spec},
    }


async def node_of(api: Client, name: str) -> str | None:
    found = await api.get("v1/Pod", name, namespace=NS)
    node = found["spec"].get("nodeName")
    return None if node is None else str(node)


async def bound(api: Client, name: str) -> str:
    node: list[str] = []

    async def check() -> bool:
        found = await node_of(api, name)
        if found:
            node.append(found)
        return bool(found)

    await eventually(check)
    return node[0]


async def unschedulable_message(api: Client, name: str) -> str:
    message: list[str] = []

    async def check() -> bool:
        found = await api.get("v1/Pod", name, namespace=NS)
        for cond in (found.get("status") or {}).get("conditions") or []:
            if cond["type"] == "PodScheduled" and cond["status"] == "False":
                assert cond["reason"] == "Unschedulable"
                message[:] = [cond["message"]]
                return True
        return False

    await eventually(check)
    assert await node_of(api, name) is None
    return message[0]


async def test_pods_spread_over_equally_loaded_nodes(api: Client, manager: Manager) -> None:
    await add_node(api, "n1")
    await add_node(api, "n2")
    for i in range(4):
        await api.create(pod(f"p{i}"))
    placements = [await bound(api, f"p{i}") for i in range(4)]
    assert Counter(placements) == {"n1": 2, "n2": 2}


async def test_the_least_loaded_node_that_fits_wins_past_a_less_loaded_one_that_does_not(
    api: Client, manager: Manager
) -> None:
    # empty: no pods but tainted; one, two: a pod each; busy: two pods.
    taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    await add_node(api, "empty", taints=[taint])
    for name in ("one", "two", "busy"):
        await add_node(api, name)
    for i, node in enumerate(("one", "two", "busy", "busy")):
        await api.create(pod(f"placed-{i}", nodeName=node))
    for i in range(2):
        await api.create(pod(f"new-{i}"))
    assert sorted([await bound(api, "new-0"), await bound(api, "new-1")]) == ["one", "two"]
    # When none fits, every node is counted in the message.
    await api.create(pod("picky", nodeSelector={"disk": "tape"}))
    message = await unschedulable_message(api, "picky")
    assert message.startswith("0/4 nodes are available: 1 node(s) had untolerated taint")
    assert "3 node(s) didn't match Pod's node affinity/selector" in message


async def test_node_selector_and_required_affinity_choose_the_node(
    api: Client, manager: Manager
) -> None:
    await add_node(api, "plain")
    await add_node(api, "fast", labels={"disk": "ssd", "zone": "b"})
    await api.create(pod("selected", nodeSelector={"disk": "ssd"}))
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
                ]
            }
        }
    }
    await api.create(pod("affine", affinity=affinity))
    assert await bound(api, "selected") == "fast"
    assert await bound(api, "affine") == "fast"
    await api.create(pod("nowhere", nodeSelector={"disk": "tape"}))
    assert await unschedulable_message(api, "nowhere") == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        f"preemption: 0/2 nodes are available: 2 {NOT_HELPFUL}."
    )


async def test_unschedulable_nodes_are_skipped_until_uncordoned(
    api: Client, manager: Manager
) -> None:
    await add_node(api, "cordoned", unschedulable=True)
    await add_node(api, "open")
    await api.create(pod("first"))
    assert await bound(api, "first") == "open"
    await api.patch("v1/Node", "open", {"spec": {"unschedulable": True}})
    await api.create(pod("waiting"))
    assert await unschedulable_message(api, "waiting") == (
        "0/2 nodes are available: 2 node(s) were unschedulable. "
        f"preemption: 0/2 nodes are available: 2 {NOT_HELPFUL}."
    )
    # A node change brings the pending pod back to the scheduler.
    await api.patch("v1/Node", "cordoned", {"spec": {"unschedulable": False}})
    assert await bound(api, "waiting") == "cordoned"


async def test_taints_need_tolerations_and_not_ready_nodes_are_avoided(
    api: Client, manager: Manager
) -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    await add_node(api, "gpu", taints=[taint])
    await add_node(api, "starting", ready="False")
    await api.create(pod("plain"))
    assert await unschedulable_message(api, "plain") == (
        "0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, "
        "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. "
        f"preemption: 0/2 nodes are available: 2 {NOT_HELPFUL}."
    )
    toleration = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    await api.create(pod("tolerant", tolerations=[toleration]))
    assert await bound(api, "tolerant") == "gpu"


async def test_node_pod_capacity_and_freed_room(api: Client, manager: Manager) -> None:
    await add_node(api, "tiny", pods="1")
    await api.create(pod("one"))
    assert await bound(api, "one") == "tiny"
    await api.create(pod("two"))
    assert await unschedulable_message(api, "two") == (
        "0/1 nodes are available: 1 Too many pods. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    await api.delete("v1/Pod", "one", namespace=NS, grace_period_seconds=0)
    assert await bound(api, "two") == "tiny"


async def test_cpu_requests_must_fit(api: Client, manager: Manager) -> None:
    await add_node(api, "small", cpu="1")
    await api.create(pod("hungry", container={"resources": {"requests": {"cpu": "1500m"}}}))
    message = await unschedulable_message(api, "hungry")
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu. ")
    await api.create(pod("modest", container={"resources": {"requests": {"cpu": "500m"}}}))
    assert await bound(api, "modest") == "small"


async def test_no_nodes_and_pods_left_to_others(api: Client, manager: Manager) -> None:
    await api.create(pod("alone"))
    assert await unschedulable_message(api, "alone") == "no nodes available to schedule pods"
    await api.create(pod("custom", schedulerName="my-scheduler"))
    await api.create(pod("preset", nodeName="elsewhere"))
    await add_node(api, "late")
    assert await bound(api, "alone") == "late"
    # The scheduler handled the other two before binding the last pod it was asked about.
    await api.create(pod("after"))
    assert await bound(api, "after") == "late"
    assert await node_of(api, "custom") is None
    assert await node_of(api, "preset") == "elsewhere"
    preset = await api.get("v1/Pod", "preset", namespace=NS)
    assert not (preset.get("status") or {}).get("conditions")


async def test_scheduling_is_recorded_as_events(api: Client, manager: Manager) -> None:
    await add_node(api, "n1")
    await api.create(pod("noted"))
    await bound(api, "noted")

    async def recorded() -> bool:
        events = await api.list("events.k8s.io/v1/Event", namespace=NS)
        return any(
            e.get("reason") == "Scheduled"
            and e.get("note") == "Successfully assigned default/noted to n1"
            and e.get("reportingController") == "default-scheduler"
            for e in events
        )

    await eventually(recorded)


def test_quantities_requests_and_tolerations() -> None:
    assert resource_amount("100m") == resource_amount("0.1")
    assert resource_amount("1Gi") == 1024**3
    assert resource_amount("1e3") == 1000
    assert resource_amount("bogus") == 0
    spec = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m"}}},
            {"name": "b", "resources": {"limits": {"cpu": "250m", "memory": "1Gi"}}},
        ],
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
    }
    requests = pod_requests({"spec": spec})
    assert requests["cpu"] == 2
    assert requests["memory"] == 1024**3
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    assert tolerates([{"operator": "Exists"}], taint)
    assert tolerates([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}], taint)
    assert not tolerates([{"key": "k", "value": "w"}], taint)
    assert not tolerates([{"key": "k", "value": "v", "effect": "NoExecute"}], taint)
