"""Create, read, update and delete over HTTP, with server-set metadata and exact errors."""

from __future__ import annotations

import re

from tests.support import Client

CMS = "/api/v1/namespaces/default/configmaps"


def cm(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_create_sets_server_fields(client: Client) -> None:
    reply = await client.post(CMS, cm("a", k="v"))
    assert reply.status == 201
    meta = reply.json()["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert meta["namespace"] == "default"
    assert int(meta["resourceVersion"]) > 0
    assert "generation" not in meta  # ConfigMaps have none
    assert meta["managedFields"][0]["operation"] == "Update"

    got = (await client.get(f"{CMS}/a")).json()
    assert got["data"] == {"k": "v"}
    assert got["metadata"]["resourceVersion"] == meta["resourceVersion"]


async def test_resource_versions_increase_across_types(client: Client) -> None:
    a = (await client.post(CMS, cm("a"))).json()
    s = (
        await client.post(
            "/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}, "stringData": {}}
        )
    ).json()
    b = (await client.post(CMS, cm("b"))).json()
    rvs = [int(o["metadata"]["resourceVersion"]) for o in (a, s, b)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


async def test_generation_is_set_for_workloads(client: Client) -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    reply = await client.post("/apis/apps/v1/namespaces/default/deployments", deploy)
    assert reply.status == 201, reply.body
    assert reply.json()["metadata"]["generation"] == 1


async def test_generate_name(client: Client) -> None:
    body = {"metadata": {"generateName": "job-"}, "data": {}}
    names = {(await client.post(CMS, body)).json()["metadata"]["name"] for _ in range(5)}
    assert len(names) == 5
    assert all(re.fullmatch(r"job-[bcdfghjklmnpqrstvwxz2456789]{5}", n) for n in names)


async def test_name_required(client: Client) -> None:
    reply = await client.post(CMS, {"metadata": {}})
    assert reply.status == 422
    body = reply.json()
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"] == [
        {
            "type": "FieldValueRequired",
            "message": "Required value: name or generateName is required",
            "field": "metadata.name",
        }
    ]


async def test_invalid_name_and_labels_are_422_with_causes(client: Client) -> None:
    reply = await client.post(
        CMS, {"metadata": {"name": "Bad_Name", "labels": {"-x": "ok", "k": "bad value"}}}
    )
    assert reply.status == 422
    body = reply.json()
    assert body["code"] == 422 and body["details"]["kind"] == "ConfigMap"
    fields = sorted(c["field"] for c in body["details"]["causes"])
    assert fields == ["metadata.labels", "metadata.labels", "metadata.name"]
    assert body["message"].startswith('ConfigMap "Bad_Name" is invalid: [')


async def test_missing_namespace_is_404(client: Client) -> None:
    reply = await client.post("/api/v1/namespaces/nope/configmaps", cm("a"))
    assert reply.status == 404
    assert reply.json()["message"] == 'namespaces "nope" not found'


async def test_default_namespaces_exist(client: Client) -> None:
    names = [
        n["metadata"]["name"] for n in (await client.get("/api/v1/namespaces")).json()["items"]
    ]
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= set(names)
    ns = (await client.get("/api/v1/namespaces/default")).json()
    assert ns["status"]["phase"] == "Active"
    assert ns["spec"]["finalizers"] == ["kubernetes"]


async def test_not_found_and_already_exists_bodies(client: Client) -> None:
    missing = await client.get(f"{CMS}/x")
    assert missing.status == 404
    assert missing.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "x" not found',
        "reason": "NotFound",
        "details": {"name": "x", "kind": "configmaps"},
        "code": 404,
    }
    await client.post(CMS, cm("x"))
    again = await client.post(CMS, cm("x"))
    assert again.status == 409
    assert again.json()["reason"] == "AlreadyExists"
    assert again.json()["message"] == 'configmaps "x" already exists'


async def test_update_with_stale_resource_version_is_409(client: Client) -> None:
    created = (await client.post(CMS, cm("x", v="1"))).json()
    first = dict(created, data={"v": "2"})
    ok = await client.put(f"{CMS}/x", first)
    assert ok.status == 200
    assert int(ok.json()["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )
    stale = await client.put(f"{CMS}/x", dict(created, data={"v": "3"}))
    assert stale.status == 409
    body = stale.json()
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on configmaps "x": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


async def test_update_that_changes_nothing_keeps_the_revision(client: Client) -> None:
    created = (await client.post(CMS, cm("x", v="1"))).json()
    same = (await client.put(f"{CMS}/x", created)).json()
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_update_of_missing_object_is_404(client: Client) -> None:
    reply = await client.put(f"{CMS}/ghost", cm("ghost"))
    assert reply.status == 404


async def test_name_mismatch_on_update_is_400(client: Client) -> None:
    await client.post(CMS, cm("x"))
    reply = await client.put(f"{CMS}/x", cm("y"))
    assert reply.status == 400


async def test_namespace_mismatch_is_400(client: Client) -> None:
    body = {"metadata": {"name": "a", "namespace": "kube-system"}}
    reply = await client.post(CMS, body)
    assert reply.status == 400
    assert "does not match the namespace" in reply.json()["message"]


async def test_cluster_scoped_and_all_namespaces_paths(client: Client) -> None:
    await client.post("/api/v1/namespaces", {"metadata": {"name": "team"}})
    await client.post("/api/v1/namespaces/team/configmaps", cm("t"))
    await client.post(CMS, cm("d"))
    everything = (await client.get("/api/v1/configmaps")).json()
    keys = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everything["items"]}
    assert {("team", "t"), ("default", "d")} <= keys
    assert everything["kind"] == "ConfigMapList"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    created = await client.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", role)
    assert created.status == 201, created.body
    assert "namespace" not in created.json()["metadata"]
    assert (
        await client.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/reader")
    ).status == 200


async def test_delete_returns_status_or_object(client: Client) -> None:
    await client.post(CMS, cm("x"))
    reply = await client.delete(f"{CMS}/x")
    assert reply.status == 200
    body = reply.json()
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["name"] == "x" and body["details"]["kind"] == "configmaps"
    assert (await client.get(f"{CMS}/x")).status == 404
    assert (await client.delete(f"{CMS}/x")).status == 404


async def test_delete_preconditions(client: Client) -> None:
    created = (await client.post(CMS, cm("x"))).json()
    bad = await client.delete(f"{CMS}/x", {"preconditions": {"uid": "not-it"}})
    assert bad.status == 409
    stale = await client.delete(f"{CMS}/x", {"preconditions": {"resourceVersion": "1"}})
    assert stale.status == 409
    ok = await client.delete(f"{CMS}/x", {"preconditions": {"uid": created["metadata"]["uid"]}})
    assert ok.status == 200


async def test_built_in_objects_are_validated_against_their_schema(client: Client) -> None:
    bad = {"metadata": {"name": "x"}, "data": {"k": 5}}
    reply = await client.post(CMS, bad)
    assert reply.status in (400, 422)
    assert "data" in reply.json()["message"]


async def test_system_fields_from_clients_are_replaced(client: Client) -> None:
    body = {
        "metadata": {
            "name": "x",
            "uid": "mine",
            "creationTimestamp": "2000-01-01T00:00:00Z",
        }
    }
    # (A resourceVersion is not replaced but refused: see test_preconditions.py.)
    created = (await client.post(CMS, body)).json()["metadata"]
    assert created["uid"] != "mine"
    assert created["creationTimestamp"] != "2000-01-01T00:00:00Z"


async def test_each_problem_is_reported_once(client: Client) -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            }
        },
    }
    reply = await client.post("/apis/apps/v1/namespaces/default/deployments", deploy)
    assert reply.status == 422
    fields = [c["field"] for c in reply.json()["details"]["causes"]]
    assert fields.count("spec.selector") == 1
