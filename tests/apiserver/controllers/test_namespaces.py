"""Namespace deletion: content goes (finalizers honoured), then the namespace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeforge._apiserver.config import ServerConfig
from kubeforge._apiserver.storage.persistence import SQLiteBackend
from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl, eventually
from tests.support import HTTPClient, connect
from tests.support.crds import CRDS, widget, widget_crd

NAMESPACES = "/api/v1/namespaces"
TEAM = "/api/v1/namespaces/team"
JSONP = "application/json-patch+json"
HOLD = "example.com/hold"


async def create(http: HTTPClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = await http.post(path, body)
    assert reply.status == 201, reply.body
    obj: dict[str, Any] = reply.json()
    return obj


async def namespace_gone(http: HTTPClient, name: str = "team") -> None:
    async def gone() -> bool:
        return (await http.get(f"{NAMESPACES}/{name}")).status == 404

    await eventually(gone)


async def conditions(http: HTTPClient) -> dict[str, dict[str, Any]]:
    ns = (await http.get(TEAM)).json()
    return {c["type"]: c for c in (ns.get("status") or {}).get("conditions") or []}


async def test_deleting_a_namespace_removes_its_content_and_then_itself(
    gc_http: HTTPClient,
) -> None:
    await create(gc_http, NAMESPACES, {"metadata": {"name": "team"}})
    await create(gc_http, f"{TEAM}/configmaps", {"metadata": {"name": "cm"}})
    await create(gc_http, f"{TEAM}/secrets", {"metadata": {"name": "s"}, "stringData": {"a": "b"}})
    service = {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}
    ip = (await create(gc_http, f"{TEAM}/services", service))["spec"]["clusterIP"]
    await create(gc_http, CRDS, widget_crd())
    await create(gc_http, "/apis/example.com/v1/namespaces/team/widgets", widget("w"))
    # A neighbour is left alone.
    await create(gc_http, "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "keep"}})

    reply = await gc_http.delete(TEAM)
    assert reply.status == 200
    assert reply.json()["status"]["phase"] == "Terminating"
    await namespace_gone(gc_http)
    selector = "fieldSelector=metadata.namespace%3Dteam"
    for path in ("/api/v1/configmaps", "/api/v1/secrets", "/api/v1/services"):
        assert (await gc_http.get(f"{path}?{selector}")).json()["items"] == []
    assert (await gc_http.get(f"/apis/example.com/v1/widgets?{selector}")).json()["items"] == []
    assert (await gc_http.get("/api/v1/namespaces/default/configmaps/keep")).status == 200
    # The Service's cluster IP went with it.
    again = {"metadata": {"name": "again"}, "spec": {"clusterIP": ip, "ports": [{"port": 80}]}}
    await create(gc_http, "/api/v1/namespaces/default/services", again)


async def test_finalizers_hold_the_namespace_until_released(gc_http: HTTPClient) -> None:
    await create(gc_http, NAMESPACES, {"metadata": {"name": "team"}})
    await create(
        gc_http, f"{TEAM}/configmaps", {"metadata": {"name": "held", "finalizers": [HOLD]}}
    )
    await create(gc_http, f"{TEAM}/configmaps", {"metadata": {"name": "free"}})
    await gc_http.delete(TEAM)

    async def reported() -> bool:
        found = await conditions(gc_http)
        return found.get("NamespaceContentRemaining", {}).get("status") == "True"

    await eventually(reported)
    found = await conditions(gc_http)
    remaining = found["NamespaceContentRemaining"]
    assert remaining["reason"] == "SomeResourcesRemain"
    assert (
        remaining["message"] == "Some resources are remaining: configmaps has 1 resource instances"
    )
    held = found["NamespaceFinalizersRemaining"]
    assert held["status"] == "True"
    assert held["message"] == (
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 "
        "resource instances"
    )
    assert found["NamespaceDeletionContentFailure"]["status"] == "False"
    assert found["NamespaceDeletionDiscoveryFailure"]["reason"] == "ResourcesDiscovered"
    assert (await gc_http.get(f"{TEAM}/configmaps/free")).status == 404
    cm = (await gc_http.get(f"{TEAM}/configmaps/held")).json()
    assert cm["metadata"]["deletionTimestamp"]
    ns = (await gc_http.get(TEAM)).json()
    assert ns["spec"]["finalizers"] == ["kubernetes"]

    patch = [{"op": "remove", "path": "/metadata/finalizers"}]
    assert (await gc_http.patch(f"{TEAM}/configmaps/held", patch, JSONP)).status == 200
    await namespace_gone(gc_http)


async def test_terminating_pods_hold_the_namespace_until_they_stop(gc_http: HTTPClient) -> None:
    await create(gc_http, NAMESPACES, {"metadata": {"name": "team"}})
    pod = {
        "metadata": {"name": "runner"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]},
    }
    await create(gc_http, f"{TEAM}/pods", pod)
    await gc_http.delete(TEAM)

    async def pod_terminating() -> bool:
        reply = await gc_http.get(f"{TEAM}/pods/runner")
        return bool(reply.json()["metadata"].get("deletionTimestamp"))

    await eventually(pod_terminating)
    assert (await gc_http.get(TEAM)).status == 200
    # What a kubelet does once the containers stopped.
    assert (await gc_http.delete(f"{TEAM}/pods/runner", {"gracePeriodSeconds": 0})).status == 200
    await namespace_gone(gc_http)


async def test_other_spec_finalizers_keep_the_namespace(gc_http: HTTPClient) -> None:
    body = {"metadata": {"name": "team"}, "spec": {"finalizers": ["example.com/ns"]}}
    await create(gc_http, NAMESPACES, body)
    await create(gc_http, f"{TEAM}/configmaps", {"metadata": {"name": "cm"}})
    await gc_http.delete(TEAM)

    async def ours_done() -> bool:
        ns = (await gc_http.get(TEAM)).json()
        return bool(ns["spec"].get("finalizers") == ["example.com/ns"])

    await eventually(ours_done)
    assert (await gc_http.get(f"{TEAM}/configmaps/cm")).status == 404
    finalize = {"metadata": {"name": "team"}, "spec": {"finalizers": []}}
    assert (await gc_http.put(f"{TEAM}/finalize", finalize)).status == 200
    await namespace_gone(gc_http)


async def test_kubectl_delete_namespace_returns_once_it_is_gone(
    gc_http: HTTPClient, gc_kubectl: Kubectl
) -> None:
    await gc_kubectl.run("create", "namespace", "team")
    await gc_kubectl.run("create", "configmap", "cm", "-n", "team", "--from-literal=a=b")
    await gc_kubectl.run("create", "deployment", "web", "-n", "team", "--image=nginx")
    result = await gc_kubectl.run("delete", "namespace", "team")
    assert 'namespace "team" deleted' in result.out
    assert (await gc_http.get(TEAM)).status == 404
    missing = await gc_kubectl.run("get", "namespace", "team", check=False)
    assert missing.code != 0 and "NotFound" in missing.err


async def test_a_bare_server_leaves_terminating_namespaces_alone(
    server: APIServer, http: HTTPClient
) -> None:
    assert server.namespaces is None
    await create(http, NAMESPACES, {"metadata": {"name": "team"}})
    await create(http, f"{TEAM}/configmaps", {"metadata": {"name": "cm"}})
    await http.delete(TEAM)
    assert (await http.get(f"{TEAM}/configmaps/cm")).status == 200
    assert (await http.get(TEAM)).json()["status"]["phase"] == "Terminating"


async def test_a_namespace_left_terminating_is_finished_later(tmp_path: Path) -> None:
    backend = SQLiteBackend(tmp_path / "data")
    async with APIServer(ServerConfig(backend=backend)) as first, connect(first) as http:
        await create(http, NAMESPACES, {"metadata": {"name": "team"}})
        await create(http, f"{TEAM}/configmaps", {"metadata": {"name": "cm"}})
        await http.delete(TEAM)
    backend.close()
    backend = SQLiteBackend(tmp_path / "data")
    config = ServerConfig(backend=backend, garbage_collection=True)
    async with APIServer(config) as second, connect(second) as http:
        await namespace_gone(http)
        assert (
            await http.get("/api/v1/configmaps?fieldSelector=metadata.namespace%3Dteam")
        ).json()["items"] == []
    backend.close()
