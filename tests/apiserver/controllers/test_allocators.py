"""Cluster IPs and node ports for Services, and the `kubernetes` Service."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from kubeforge._apiserver.config import ServerConfig
from kubeforge._apiserver.storage.persistence import SQLiteBackend
from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl
from tests.support import HTTPClient, connect

SVCS = "/api/v1/namespaces/default/services"
MERGE = "application/merge-patch+json"
CIDR = ipaddress.ip_network("10.96.0.0/12")


def service(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    return {"metadata": {"name": name}, "spec": spec}


async def create(http: HTTPClient, body: dict[str, Any]) -> dict[str, Any]:
    reply = await http.post(SVCS, body)
    assert reply.status == 201, reply.body
    obj: dict[str, Any] = reply.json()
    return obj


def node_ports(svc: dict[str, Any]) -> list[int]:
    return [p["nodePort"] for p in svc["spec"]["ports"] if "nodePort" in p]


async def test_the_kubernetes_service_points_at_the_server(
    server: APIServer, http: HTTPClient
) -> None:
    svc = (await http.get(f"{SVCS}/kubernetes")).json()
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["clusterIPs"] == ["10.96.0.1"]
    assert svc["spec"]["type"] == "ClusterIP"
    port = svc["spec"]["ports"][0]
    assert (port["name"], port["port"], port["protocol"]) == ("https", 443, "TCP")
    assert port["targetPort"] == server.port
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    endpoints = (await http.get("/api/v1/namespaces/default/endpoints/kubernetes")).json()
    subset = endpoints["subsets"][0]
    assert subset["addresses"] == [{"ip": "127.0.0.1"}]
    assert subset["ports"] == [{"name": "https", "port": server.port, "protocol": "TCP"}]
    slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes"
    endpoint_slice = (await http.get(slices)).json()
    assert endpoint_slice["endpoints"][0]["addresses"] == ["127.0.0.1"]
    assert endpoint_slice["ports"][0]["port"] == server.port


async def test_cluster_ips_are_allocated_from_the_service_cidr(http: HTTPClient) -> None:
    seen = {"10.96.0.1"}
    for i in range(20):
        svc = await create(http, service(f"s{i}"))
        ip = svc["spec"]["clusterIP"]
        assert ipaddress.ip_address(ip) in CIDR
        assert svc["spec"]["clusterIPs"] == [ip]
        assert ip not in seen
        seen.add(ip)
    # Reading it back shows the same address; an update without it keeps it.
    svc = (await http.get(f"{SVCS}/s0")).json()
    ip = svc["spec"]["clusterIP"]
    del svc["spec"]["clusterIP"], svc["spec"]["clusterIPs"]
    svc["metadata"]["labels"] = {"changed": "yes"}
    updated = await http.put(f"{SVCS}/s0", svc)
    assert updated.status == 200, updated.body
    assert updated.json()["spec"]["clusterIP"] == ip


async def test_a_requested_cluster_ip_is_honoured_once(http: HTTPClient) -> None:
    svc = await create(http, service("fixed", clusterIP="10.96.0.10"))
    assert svc["spec"]["clusterIPs"] == ["10.96.0.10"]
    taken = await http.post(SVCS, service("clash", clusterIP="10.96.0.10"))
    assert taken.status == 422
    assert taken.json()["message"] == (
        'Service "clash" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.10"}: '
        "failed to allocate IP 10.96.0.10: provided IP is already allocated"
    )
    outside = await http.post(SVCS, service("outside", clusterIP="192.168.0.1"))
    assert outside.status == 422
    assert outside.json()["message"].endswith(
        "failed to allocate IP 192.168.0.1: provided IP is not in the valid range. "
        "The range of valid IPs is 10.96.0.0/12"
    )
    assert outside.json()["details"]["causes"][0]["field"] == "spec.clusterIPs"
    # The kubernetes Service holds the first address.
    first = await http.post(SVCS, service("first", clusterIP="10.96.0.1"))
    assert first.status == 422
    # An allocated address cannot change.
    patch = {"spec": {"clusterIP": "10.96.0.11", "clusterIPs": ["10.96.0.11"]}}
    changed = await http.patch(f"{SVCS}/fixed", patch, MERGE)
    assert changed.status == 422


async def test_deletion_frees_the_address_and_dry_runs_hold_nothing(http: HTTPClient) -> None:
    dry = await http.post(f"{SVCS}?dryRun=All", service("dry", clusterIP="10.96.0.20"))
    assert dry.status == 201
    assert dry.json()["spec"]["clusterIP"] == "10.96.0.20"
    await create(http, service("real", clusterIP="10.96.0.20"))
    assert (await http.delete(f"{SVCS}/real")).status == 200
    again = await create(http, service("again", clusterIP="10.96.0.20"))
    assert again["spec"]["clusterIP"] == "10.96.0.20"


async def test_headless_and_external_name_services_get_no_address(http: HTTPClient) -> None:
    headless = await create(http, service("headless", clusterIP="None", selector={"a": "b"}))
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["clusterIPs"] == ["None"]
    external = await create(
        http,
        {"metadata": {"name": "ext"}, "spec": {"type": "ExternalName", "externalName": "a.b"}},
    )
    assert "clusterIP" not in external["spec"]
    assert "clusterIPs" not in external["spec"]


async def test_node_ports_are_allocated_for_each_port(http: HTTPClient) -> None:
    ports = [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
    svc = await create(http, service("np", type="NodePort", ports=ports))
    allocated = node_ports(svc)
    assert len(allocated) == 2 and len(set(allocated)) == 2
    assert all(30000 <= p <= 32767 for p in allocated)
    assert ipaddress.ip_address(svc["spec"]["clusterIP"]) in CIDR
    lb = await create(http, service("lb", type="LoadBalancer"))
    assert len(node_ports(lb)) == 1 and node_ports(lb)[0] not in allocated
    # Without node ports when the load balancer does not want them.
    bare = await create(
        http, service("lb-bare", type="LoadBalancer", allocateLoadBalancerNodePorts=False)
    )
    assert node_ports(bare) == []
    # A ClusterIP service gets none.
    assert node_ports(await create(http, service("plain"))) == []


async def test_requested_node_ports_and_conflicts(http: HTTPClient) -> None:
    ports = [{"port": 80, "nodePort": 30080}]
    svc = await create(http, service("mine", type="NodePort", ports=ports))
    assert node_ports(svc) == [30080]
    clash = await http.post(SVCS, service("clash", type="NodePort", ports=ports))
    assert clash.status == 422
    assert clash.json()["message"] == (
        'Service "clash" is invalid: spec.ports[0].nodePort: Invalid value: 30080: '
        "provided port is already allocated"
    )
    low = [{"port": 80, "nodePort": 8080}]
    outside = await http.post(SVCS, service("outside", type="NodePort", ports=low))
    assert outside.status == 422
    assert outside.json()["message"].endswith(
        "spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. "
        "The range of valid ports is 30000-32767"
    )
    # TCP and UDP on the same port number share one node port.
    dns = [
        {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
    ]
    shared = await create(http, service("dns", type="NodePort", ports=dns))
    first, second = node_ports(shared)
    assert first == second
    # Also when only the second names it.
    dns[1]["nodePort"] = 30053
    named = await create(http, service("dns-named", type="NodePort", ports=dns))
    assert node_ports(named) == [30053, 30053]


async def test_type_changes_allocate_and_free_node_ports(http: HTTPClient) -> None:
    svc = await create(http, service("switch"))
    ip = svc["spec"]["clusterIP"]
    to_np = await http.patch(f"{SVCS}/switch", {"spec": {"type": "NodePort"}}, MERGE)
    assert to_np.status == 200, to_np.body
    [port] = node_ports(to_np.json())
    assert to_np.json()["spec"]["clusterIP"] == ip
    # A port this service holds cannot be taken by another one.
    taken = [{"port": 80, "nodePort": port}]
    assert (await http.post(SVCS, service("thief", type="NodePort", ports=taken))).status == 422
    # Back to ClusterIP: the node ports the server chose go, and are free again.
    back = await http.patch(f"{SVCS}/switch", {"spec": {"type": "ClusterIP"}}, MERGE)
    assert back.status == 200, back.body
    assert node_ports(back.json()) == []
    assert back.json()["spec"]["clusterIP"] == ip
    await create(http, service("thief", type="NodePort", ports=taken))


async def test_external_name_changes_release_and_allocate_addresses(http: HTTPClient) -> None:
    svc = await create(http, service("ext", clusterIP="10.96.0.30"))
    body = {"spec": {"type": "ExternalName", "externalName": "example.com"}}
    external = await http.patch(f"{SVCS}/ext", body, MERGE)
    assert external.status == 200, external.body
    assert "clusterIP" not in external.json()["spec"]
    await create(http, service("reuse", clusterIP="10.96.0.30"))
    back = {"spec": {"type": "ClusterIP", "externalName": None}}
    cluster = await http.patch(f"{SVCS}/ext", back, MERGE)
    assert cluster.status == 200, cluster.body
    ip = cluster.json()["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in CIDR and ip != "10.96.0.30"
    assert svc["metadata"]["uid"] == cluster.json()["metadata"]["uid"]


async def test_local_load_balancers_get_a_health_check_port(http: HTTPClient) -> None:
    svc = await create(http, service("local", type="LoadBalancer", externalTrafficPolicy="Local"))
    health = svc["spec"]["healthCheckNodePort"]
    assert 30000 <= health <= 32767 and health not in node_ports(svc)


async def test_a_small_range_fills_up() -> None:
    # 10.0.0.0/29: six usable addresses, the first being the kubernetes Service's.
    async with APIServer(service_cidr="10.0.0.0/29") as srv, connect(srv) as http:
        kube = (await http.get(f"{SVCS}/kubernetes")).json()
        assert kube["spec"]["clusterIP"] == "10.0.0.1"
        ips = {(await create(http, service(f"s{i}")))["spec"]["clusterIP"] for i in range(5)}
        assert ips == {f"10.0.0.{i}" for i in range(2, 7)}
        full = await http.post(SVCS, service("one-too-many"))
        assert full.status == 500
        assert full.json()["message"] == (
            "Internal error occurred: failed to allocate a serviceIP: range is full"
        )


async def test_allocations_survive_a_restart(tmp_path: Path) -> None:
    backend = SQLiteBackend(tmp_path / "data")
    async with APIServer(ServerConfig(backend=backend)) as first, connect(first) as http:
        ports = [{"port": 80, "nodePort": 30100}]
        await create(http, service("kept", type="NodePort", clusterIP="10.96.0.50", ports=ports))
        kube = (await http.get(f"{SVCS}/kubernetes")).json()
    backend.close()
    backend = SQLiteBackend(tmp_path / "data")
    config = ServerConfig(backend=backend, port=first.port)
    async with APIServer(config) as second, connect(second) as http:
        ip_taken = await http.post(SVCS, service("ip", clusterIP="10.96.0.50"))
        assert ip_taken.status == 422
        ports = [{"port": 80, "nodePort": 30100}]
        port_taken = await http.post(SVCS, service("port", type="NodePort", ports=ports))
        assert port_taken.status == 422
        # Same port, same kubernetes Service: a restart does not rewrite it.
        again = (await http.get(f"{SVCS}/kubernetes")).json()
        assert again["metadata"]["resourceVersion"] == kube["metadata"]["resourceVersion"]
    backend.close()


async def test_kubectl_get_svc_shows_the_cluster_ip(http: HTTPClient, kubectl: Kubectl) -> None:
    svc = await create(http, service("web", type="NodePort"))
    out = (await kubectl.run("get", "svc")).out
    lines = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert lines["kubernetes"][1:5] == ["ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
    assert lines["web"][1:5] == [
        "NodePort",
        svc["spec"]["clusterIP"],
        "<none>",
        f"80:{node_ports(svc)[0]}/TCP",
    ]
