"""The Endpoints and EndpointSlice controllers against a real embedded server; tests play
the kubelet (pod IPs and readiness) and the scheduler (bindings)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from kubeforge import Client, ClusterConfig
from kubeforge._client.auth import StaticToken
from kubeforge._client.errors import NotFound
from kubeforge._cluster.controllers import endpoints
from kubeforge._runtime.manager import Manager
from kubeforge.apiserver import APIServer
from kubeforge.testing import eventually

NS = "default"
POD = "v1/Pod"
SERVICE = "v1/Service"
ENDPOINTS = "v1/Endpoints"
SLICE = "discovery.k8s.io/v1/EndpointSlice"


@pytest.fixture
async def api(server: APIServer) -> AsyncIterator[Client]:
    """A client of a server running the Endpoints and EndpointSlice controllers."""
    cfg = ClusterConfig(
        server=server.url, ca_data=server.ca_pem, credentials=StaticToken(server.token)
    )
    manager = Manager(client=Client(cfg, field_manager="kube-controller-manager"))
    endpoints.setup(manager)
    task = asyncio.create_task(manager.start())
    async with Client(cfg) as client:
        yield client
    manager.stop()
    await task


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def service(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "selector": {"app": name},
        "ports": [
            {"name": "http", "port": 80, "targetPort": "web"},
            {"name": "metrics", "port": 9090, "targetPort": 9100},
        ],
    }
    body.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS, "labels": {"team": "a"}},
        "spec": body,
    }


async def make_pod(api: Client, name: str, app: str, web_port: int = 8080) -> dict[str, Any]:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": app}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "nginx",
                    "ports": [{"name": "web", "containerPort": web_port}],
                }
            ]
        },
    }
    created: dict[str, Any] = await api.create(pod)
    return created


async def bind(api: Client, name: str, node: str) -> None:
    """Do the scheduler's part."""
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"kind": "Node", "name": node},
    }
    await api.create_subresource(POD, name, "binding", binding, namespace=NS)


async def run(api: Client, name: str, ip: str, ready: bool) -> None:
    """Do the kubelet's part: the pod runs at `ip`, ready or not."""
    status = {
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": stamp()}
        ],
    }
    await api.patch_status(POD, name, {"status": status}, namespace=NS)


async def get_endpoints(api: Client, name: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = await api.get(ENDPOINTS, name, namespace=NS)
    except NotFound:
        return None
    return found


async def slices_of(api: Client, name: str) -> list[dict[str, Any]]:
    selector = f"kubernetes.io/service-name={name}"
    return (await api.list(SLICE, namespace=NS, label_selector=selector)).items


async def wait_for(check: Callable[[], Awaitable[bool]], timeout: float = 15.0) -> None:
    await eventually(check, timeout=timeout)


def target(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"kind": "Pod", "namespace": NS, "name": meta["name"], "uid": meta["uid"]}


async def test_endpoints_follow_pod_readiness(api: Client) -> None:
    await api.create(service("web"))

    async def empty_endpoints() -> bool:
        ep = await get_endpoints(api, "web")
        return ep is not None and "subsets" not in ep

    await wait_for(empty_endpoints)
    ep = await get_endpoints(api, "web")
    assert ep is not None and ep["metadata"]["labels"] == {"team": "a"}
    first = await make_pod(api, "web-1", "web")
    second = await make_pod(api, "web-2", "web", web_port=8081)
    await bind(api, "web-1", "node-a")
    await run(api, "web-1", "10.244.0.11", ready=False)

    async def not_ready_listed() -> bool:
        ep = await get_endpoints(api, "web")
        return bool(ep and ep.get("subsets"))

    await wait_for(not_ready_listed)
    ep = await get_endpoints(api, "web")
    assert ep is not None
    assert ep["subsets"] == [
        {
            "notReadyAddresses": [
                {"ip": "10.244.0.11", "nodeName": "node-a", "targetRef": target(first)}
            ],
            "ports": [
                {"name": "http", "port": 8080, "protocol": "TCP"},
                {"name": "metrics", "port": 9100, "protocol": "TCP"},
            ],
        }
    ]
    await run(api, "web-1", "10.244.0.11", ready=True)
    await run(api, "web-2", "10.244.0.12", ready=True)

    async def both_ready() -> bool:
        ep = await get_endpoints(api, "web")
        subsets = (ep or {}).get("subsets") or []
        ips = {a["ip"] for s in subsets for a in s.get("addresses") or ()}
        return ips == {"10.244.0.11", "10.244.0.12"} and not any(
            s.get("notReadyAddresses") for s in subsets
        )

    await wait_for(both_ready)
    ep = await get_endpoints(api, "web")
    assert ep is not None
    one = {"ip": "10.244.0.11", "nodeName": "node-a", "targetRef": target(first)}
    two = {"ip": "10.244.0.12", "targetRef": target(second)}
    metrics = {"name": "metrics", "port": 9100, "protocol": "TCP"}
    # The pods offer the named port on different numbers: subsets group pods by ports.
    assert ep["subsets"] == [
        {"addresses": [one], "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]},
        {"addresses": [one, two], "ports": [metrics]},
        {"addresses": [two], "ports": [{"name": "http", "port": 8081, "protocol": "TCP"}]},
    ]

    async def two_slices() -> bool:
        slices = await slices_of(api, "web")
        return sorted(len(s["endpoints"]) for s in slices) == [1, 1]

    # Endpoints with different ports go to different slices.
    await wait_for(two_slices)
    ports = sorted(s["ports"][0]["port"] for s in await slices_of(api, "web"))
    assert ports == [8080, 8081]
    await api.delete(POD, "web-2", namespace=NS)

    async def one_left() -> bool:
        ep = await get_endpoints(api, "web")
        subsets = (ep or {}).get("subsets") or []
        return [a["ip"] for s in subsets for a in s.get("addresses") or ()] == ["10.244.0.11"]

    await wait_for(one_left)
    await api.delete(SERVICE, "web", namespace=NS)

    async def endpoints_gone() -> bool:
        return await get_endpoints(api, "web") is None

    await wait_for(endpoints_gone)


async def test_endpoint_slices_carry_conditions_ports_and_owner(api: Client) -> None:
    svc = await api.create(service("api"))
    pod = await make_pod(api, "api-1", "api")

    async def placeholder() -> bool:
        slices = await slices_of(api, "api")
        return len(slices) == 1 and slices[0]["endpoints"] == []

    await wait_for(placeholder)
    (empty,) = await slices_of(api, "api")
    assert "ports" not in empty
    assert empty["metadata"]["name"].startswith("api-")
    assert empty["metadata"]["labels"] == {
        "team": "a",
        "kubernetes.io/service-name": "api",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    }
    assert empty["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "name": "api",
            "uid": svc["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    await bind(api, "api-1", "node-b")
    await run(api, "api-1", "10.244.1.5", ready=False)

    async def endpoint_listed() -> bool:
        slices = await slices_of(api, "api")
        return len(slices) == 1 and len(slices[0]["endpoints"]) == 1

    await wait_for(endpoint_listed)
    (listed,) = await slices_of(api, "api")
    assert listed["metadata"]["name"] == empty["metadata"]["name"]  # rewritten, not replaced
    assert listed["addressType"] == "IPv4"
    assert listed["ports"] == [
        {"name": "http", "port": 8080, "protocol": "TCP"},
        {"name": "metrics", "port": 9100, "protocol": "TCP"},
    ]
    assert listed["endpoints"] == [
        {
            "addresses": ["10.244.1.5"],
            "conditions": {"ready": False, "serving": False, "terminating": False},
            "targetRef": target(pod),
            "nodeName": "node-b",
        }
    ]
    await run(api, "api-1", "10.244.1.5", ready=True)

    async def ready() -> bool:
        (item,) = await slices_of(api, "api")
        return item["endpoints"][0]["conditions"] == {
            "ready": True,
            "serving": True,
            "terminating": False,
        }

    await wait_for(ready)
    # A pod that finished leaves both the Endpoints and the slices.
    await api.patch_status(POD, "api-1", {"status": {"phase": "Succeeded"}}, namespace=NS)

    async def emptied() -> bool:
        slices = await slices_of(api, "api")
        return len(slices) == 1 and slices[0]["endpoints"] == []

    await wait_for(emptied)


async def test_slices_hold_at_most_a_hundred_endpoints(api: Client) -> None:
    await api.create(service("many", ports=[{"name": "http", "port": 80, "targetPort": 80}]))
    for i in range(105):
        await make_pod(api, f"many-{i}", "many")
        await run(api, f"many-{i}", f"10.244.2.{i + 1}", ready=True)

    async def split() -> bool:
        sizes = sorted(len(s["endpoints"]) for s in await slices_of(api, "many"))
        return sizes == [5, 100]

    await wait_for(split, timeout=30)
    addresses = {e["addresses"][0] for s in await slices_of(api, "many") for e in s["endpoints"]}
    assert len(addresses) == 105


async def test_publish_not_ready_and_headless_services(api: Client) -> None:
    await api.create(service("db", clusterIP="None", publishNotReadyAddresses=True, ports=[]))
    await make_pod(api, "db-0", "db")
    await run(api, "db-0", "10.244.3.1", ready=False)

    async def published() -> bool:
        ep = await get_endpoints(api, "db")
        return bool(ep and ep.get("subsets"))

    await wait_for(published)
    ep = await get_endpoints(api, "db")
    assert ep is not None
    assert ep["metadata"]["labels"] == {"team": "a", "service.kubernetes.io/headless": ""}
    (subset,) = ep["subsets"]
    assert [a["ip"] for a in subset["addresses"]] == ["10.244.3.1"]
    assert "ports" not in subset and "notReadyAddresses" not in subset

    async def slice_ready() -> bool:
        slices = await slices_of(api, "db")
        return len(slices) == 1 and bool(slices[0]["endpoints"])

    await wait_for(slice_ready)
    (item,) = await slices_of(api, "db")
    assert item["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
    assert item["endpoints"][0]["conditions"] == {
        "ready": True,
        "serving": False,
        "terminating": False,
    }


async def test_services_without_selector_are_left_alone(api: Client) -> None:
    await api.create(service("external", selector=None))
    manual = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "external", "namespace": NS},
        "subsets": [{"addresses": [{"ip": "192.0.2.1"}], "ports": [{"port": 5432}]}],
    }
    await api.create(manual)
    # A selecting service in the same namespace gets its Endpoints; by then the other
    # service has been reconciled as well.
    await api.create(service("marker"))

    async def marker_done() -> bool:
        return await get_endpoints(api, "marker") is not None and bool(
            await slices_of(api, "marker")
        )

    await wait_for(marker_done)
    ep = await get_endpoints(api, "external")
    assert ep is not None
    assert ep["subsets"] == [
        {"addresses": [{"ip": "192.0.2.1"}], "ports": [{"port": 5432, "protocol": "TCP"}]}
    ]
    assert await slices_of(api, "external") == []


def test_named_target_ports_resolve_against_container_ports() -> None:
    pod = {
        "spec": {
            "containers": [
                {"name": "a", "ports": [{"name": "web", "containerPort": 8080, "protocol": "UDP"}]},
                {"name": "b", "ports": [{"name": "web", "containerPort": 9090}]},
            ],
            "initContainers": [
                {
                    "name": "side",
                    "restartPolicy": "Always",
                    "ports": [{"name": "proxy", "containerPort": 15001}],
                }
            ],
        }
    }
    assert endpoints.find_port(pod, {"port": 80, "targetPort": "web", "protocol": "TCP"}) == 9090
    assert endpoints.find_port(pod, {"port": 80, "targetPort": "web", "protocol": "UDP"}) == 8080
    assert endpoints.find_port(pod, {"port": 80, "targetPort": "proxy"}) == 15001
    assert endpoints.find_port(pod, {"port": 80, "targetPort": "missing"}) is None
    assert endpoints.find_port(pod, {"port": 80, "targetPort": 81}) == 81
    assert endpoints.find_port(pod, {"port": 80}) == 80
