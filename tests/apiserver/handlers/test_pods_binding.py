"""pods/binding as kube-apiserver's BindingREST answers it: a storage update of the pod that
sets its node, the Binding's annotations and PodScheduled=True, with no field ownership of
its own and no pod validation."""

from __future__ import annotations

from typing import Any

from tests.support import HTTPClient

PODS = "/api/v1/namespaces/default/pods"
MERGE = "application/merge-patch+json"


def pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


def binding(name: str = "p", node: str = "node-a", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, **meta},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or ()}


async def test_a_binding_sets_the_node_and_pod_scheduled_and_owns_nothing(
    http: HTTPClient,
) -> None:
    created = (await http.post(PODS, pod())).json()
    reply = await http.post(
        f"{PODS}/p/binding?fieldManager=a-scheduler", binding(annotations={"scheduled-by": "test"})
    )
    assert reply.status == 201, reply.body
    assert reply.json()["status"] == "Success"
    bound = (await http.get(f"{PODS}/p")).json()
    assert bound["spec"]["nodeName"] == "node-a"
    assert bound["metadata"]["annotations"] == {"scheduled-by": "test"}
    assert bound["metadata"]["managedFields"] == created["metadata"]["managedFields"]
    assert int(bound["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    scheduled = conditions(bound)["PodScheduled"]
    assert scheduled["status"] == "True"
    assert scheduled["lastProbeTime"] is None
    assert scheduled["lastTransitionTime"]
    assert "reason" not in scheduled
    # A status write that carries the condition as it is does not take it over.
    status = {"status": {"conditions": list(conditions(bound).values()), "hostIP": "10.0.0.1"}}
    patched = (await http.patch(f"{PODS}/p/status", status, MERGE)).json()
    owners = [e for e in patched["metadata"]["managedFields"] if e.get("subresource") == "status"]
    assert owners and all("PodScheduled" not in str(e["fieldsV1"]) for e in owners)


async def test_an_unschedulable_pod_becomes_scheduled(http: HTTPClient) -> None:
    await http.post(PODS, pod())
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": "2020-01-01T00:00:00Z",
        "reason": "Unschedulable",
        "message": "0/1 nodes are available",
    }
    await http.patch(f"{PODS}/p/status", {"status": {"conditions": [unschedulable]}}, MERGE)
    assert (await http.post(f"{PODS}/p/binding", binding())).status == 201
    scheduled = conditions((await http.get(f"{PODS}/p")).json())["PodScheduled"]
    assert scheduled["status"] == "True"
    assert scheduled["lastTransitionTime"] != "2020-01-01T00:00:00Z"
    assert "reason" not in scheduled and "message" not in scheduled


async def test_what_cannot_be_bound_is_a_conflict(http: HTTPClient) -> None:
    await http.post(PODS, pod("gated", schedulingGates=[{"name": "wait"}]))
    gated = await http.post(f"{PODS}/gated/binding", binding("gated"))
    assert gated.status == 409
    assert "has non-empty .spec.schedulingGates" in gated.json()["message"]
    await http.post(PODS, pod("once"))
    assert (await http.post(f"{PODS}/once/binding", binding("once"))).status == 201
    again = await http.post(f"{PODS}/once/binding", binding("once", "node-b"))
    assert again.status == 409
    assert 'is already assigned to node "node-a"' in again.json()["message"]


async def test_a_dry_run_binding_changes_nothing(http: HTTPClient) -> None:
    created = (await http.post(PODS, pod())).json()
    reply = await http.post(f"{PODS}/p/binding?dryRun=All", binding())
    assert reply.status == 201
    after = (await http.get(f"{PODS}/p")).json()
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert "nodeName" not in after["spec"]
