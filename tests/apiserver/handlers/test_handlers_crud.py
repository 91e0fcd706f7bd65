"""Create, read, update and delete over HTTP, with server-set metadata and exact errors."""

from __future__ import annotations

import re

from tests.support import HTTPClient

CMS = "/api/v1/namespaces/default/configmaps"


def cm(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_create_sets_server_fields(http: HTTPClient) -> None:
    reply = await http.post(CMS, cm("a", k="v"))
    assert reply.status == 201
    meta = reply.json()["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert meta["namespace"] == "default"
    assert int(meta["resourceVersion"]) > 0
    assert "generation" not in meta  # ConfigMaps have none
    assert meta["managedFields"][0]["operation"] == "Update"

    got = (await http.get(f"{CMS}/a")).json()
    assert got["data"] == {"k": "v"}
    assert got["metadata"]["resourceVersion"] == meta["resourceVersion"]


async def test_resource_versions_increase_across_types(http: HTTPClient) -> None:
    a = (await http.post(CMS, cm("a"))).json()
    s = (
        await http.post(
            "/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}, "stringData": {}}
        )
    ).json()
    b = (await http.post(CMS, cm("b"))).json()
    rvs = [int(o["metadata"]["resourceVersion"]) for o in (a, s, b)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


async def test_generation_is_set_for_workloads(http: HTTPClient) -> None:
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
    reply = await http.post("/apis/apps/v1/namespaces/default/deployments", deploy)
    assert reply.status == 201, reply.body
    assert reply.json()["metadata"]["generation"] == 1


async def test_generate_name(http: HTTPClient) -> None:
    body = {"metadata": {"generateName": "job-"}, "data": {}}
    names = {(await http.post(CMS, body)).json()["metadata"]["name"] for _ in range(5)}
    assert len(names) == 5
    assert all(re.fullmatch(r"job-[bcdfghjklmnpqrstvwxz2456789]{5}", n) for n in names)


async def test_name_required(http: HTTPClient) -> None:
    reply = await http.post(CMS, {"metadata": {}})
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


async def test_invalid_name_and_labels_are_422_with_causes(http: HTTPClient) -> None:
    reply = await http.post(
        CMS, {"metadata": {"name": "Bad_Name", "labels": {"-x": "ok", "k": "bad value"}}}
    )
    assert reply.status == 422
    body = reply.json()
    assert body["code"] == 422 and body["details"]["kind"] == "ConfigMap"
    fields = sorted(c["field"] for c in body["details"]["causes"])
    assert fields == ["metadata.labels", "metadata.labels", "metadata.name"]
    assert body["message"].startswith('ConfigMap "Bad_Name" is invalid: [')


async def test_missing_namespace_is_404(http: HTTPClient) -> None:
    reply = await http.post("/api/v1/namespaces/nope/configmaps", cm("a"))
    assert reply.status == 404
    assert reply.json()["message"] == 'namespaces "nope" not found'


async def test_default_namespaces_exist(http: HTTPClient) -> None:
    names = [n["metadata"]["name"] for n in (await http.get("/api/v1/namespaces")).json()["items"]]
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= set(names)
    ns = (await http.get("/api/v1/namespaces/default")).json()
    assert ns["status"]["phase"] == "Active"
    assert ns["spec"]["finalizers"] == ["kubernetes"]


async def test_not_found_and_already_exists_bodies(http: HTTPClient) -> None:
    missing = await http.get(f"{CMS}/x")
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
    await http.post(CMS, cm("x"))
    again = await http.post(CMS, cm("x"))
    assert again.status == 409
    assert again.json()["reason"] == "AlreadyExists"
    assert again.json()["message"] == 'configmaps "x" already exists'


async def test_update_with_stale_resource_version_is_409(http: HTTPClient) -> None:
    created = (await http.post(CMS, cm("x", v="1"))).json()
    first = dict(created, data={"v": "2"})
    ok = await http.put(f"{CMS}/x", first)
    assert ok.status == 200
    assert int(ok.json()["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )
    stale = await http.put(f"{CMS}/x", dict(created, data={"v": "3"}))
    assert stale.status == 409
    body = stale.json()
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on configmaps "x": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


async def test_update_that_changes_nothing_keeps_the_revision(http: HTTPClient) -> None:
    created = (await http.post(CMS, cm("x", v="1"))).json()
    same = (await http.put(f"{CMS}/x", created)).json()
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_update_of_missing_object_is_404(http: HTTPClient) -> None:
    reply = await http.put(f"{CMS}/ghost", cm("ghost"))
    assert reply.status == 404


async def test_name_mismatch_on_update_is_400(http: HTTPClient) -> None:
    await http.post(CMS, cm("x"))
    reply = await http.put(f"{CMS}/x", cm("y"))
    assert reply.status == 400


async def test_namespace_mismatch_is_400(http: HTTPClient) -> None:
    body = {"metadata": {"name": "a", "namespace": "kube-system"}}
    reply = await http.post(CMS, body)
    assert reply.status == 400
    assert "does not match the namespace" in reply.json()["message"]


async def test_cluster_scoped_and_all_namespaces_paths(http: HTTPClient) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "team"}})
    await http.post("/api/v1/namespaces/team/configmaps", cm("t"))
    await http.post(CMS, cm("d"))
    everything = (await http.get("/api/v1/configmaps")).json()
    keys = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everything["items"]}
    assert {("team", "t"), ("default", "d")} <= keys
    assert everything["kind"] == "ConfigMapList"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    created = await http.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", role)
    assert created.status == 201, created.body
    assert "namespace" not in created.json()["metadata"]
    assert (await http.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/reader")).status == 200


async def test_delete_returns_status_or_object(http: HTTPClient) -> None:
    await http.post(CMS, cm("x"))
    reply = await http.delete(f"{CMS}/x")
    assert reply.status == 200
    body = reply.json()
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["name"] == "x" and body["details"]["kind"] == "configmaps"
    assert (await http.get(f"{CMS}/x")).status == 404
    assert (await http.delete(f"{CMS}/x")).status == 404


async def test_delete_preconditions(http: HTTPClient) -> None:
    created = (await http.post(CMS, cm("x"))).json()
    bad = await http.delete(f"{CMS}/x", {"preconditions": {"uid": "not-it"}})
    assert bad.status == 409
    stale = await http.delete(f"{CMS}/x", {"preconditions": {"resourceVersion": "1"}})
    assert stale.status == 409
    ok = await http.delete(f"{CMS}/x", {"preconditions": {"uid": created["metadata"]["uid"]}})
    assert ok.status == 200


async def test_built_in_objects_are_validated_against_their_schema(http: HTTPClient) -> None:
    bad = {"metadata": {"name": "x"}, "data": {"k": 5}}
    reply = await http.post(CMS, bad)
    assert reply.status in (400, 422)
    assert "data" in reply.json()["message"]


async def test_system_fields_from_clients_are_replaced(http: HTTPClient) -> None:
    body = {
        "metadata": {
            "name": "x",
            "uid": "mine",
            "creationTimestamp": "2000-01-01T00:00:00Z",
        }
    }
    # (A resourceVersion is not replaced but refused: see storage/test_preconditions.py.)
    created = (await http.post(CMS, body)).json()["metadata"]
    assert created["uid"] != "mine"
    assert created["creationTimestamp"] != "2000-01-01T00:00:00Z"


async def test_each_problem_is_reported_once(http: HTTPClient) -> None:
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
    reply = await http.post("/apis/apps/v1/namespaces/default/deployments", deploy)
    assert reply.status == 422
    fields = [c["field"] for c in reply.json()["details"]["causes"]]
    assert fields.count("spec.selector") == 1
