"""Patches of every type and status subresource semantics."""

from __future__ import annotations

from typing import Any

from tests.support import HTTPClient

CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
MERGE = "application/merge-patch+json"
JSONP = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"


def deployment(name: str = "web", image: str = "nginx") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "main", "image": image, "env": [{"name": "A", "value": "1"}]},
                        {"name": "side", "image": "busybox"},
                    ]
                },
            },
        },
    }


async def test_merge_patch(http: HTTPClient) -> None:
    await http.post(CMS, {"metadata": {"name": "x"}, "data": {"a": "1", "b": "2"}})
    reply = await http.patch(f"{CMS}/x", {"data": {"a": None, "c": "3"}}, MERGE)
    assert reply.status == 200
    assert reply.json()["data"] == {"b": "2", "c": "3"}


async def test_json_patch_and_failed_test_op(http: HTTPClient) -> None:
    created = (await http.post(CMS, {"metadata": {"name": "x"}, "data": {"a": "1"}})).json()
    rv = created["metadata"]["resourceVersion"]
    ok = await http.patch(
        f"{CMS}/x",
        [
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "add", "path": "/data/b", "value": "2"},
        ],
        JSONP,
    )
    assert ok.status == 200
    assert ok.json()["data"] == {"a": "1", "b": "2"}
    stale = await http.patch(
        f"{CMS}/x",
        [
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "remove", "path": "/data/a"},
        ],
        JSONP,
    )
    assert stale.status == 422
    assert (
        stale.json()["message"] == "the server rejected our request due to an error in our request"
    )


async def test_patch_with_stale_resource_version_is_409(http: HTTPClient) -> None:
    await http.post(CMS, {"metadata": {"name": "x"}, "data": {"a": "1"}})
    reply = await http.patch(
        f"{CMS}/x", {"metadata": {"resourceVersion": "1"}, "data": {"a": "2"}}, MERGE
    )
    assert reply.status == 409


async def test_strategic_merge_patch_merges_containers_by_name(http: HTTPClient) -> None:
    assert (await http.post(DEPLOYS, deployment())).status == 201
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "main", "image": "nginx:2", "env": [{"name": "B", "value": "2"}]}
                    ]
                }
            }
        }
    }
    reply = await http.patch(f"{DEPLOYS}/web", patch, SMP)
    assert reply.status == 200, reply.body
    containers = reply.json()["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["main", "side"]
    assert containers[0]["image"] == "nginx:2"
    # As upstream: items the patch adds come before the ones it keeps.
    assert containers[0]["env"] == [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]


async def test_patch_of_missing_object_is_404(http: HTTPClient) -> None:
    assert (await http.patch(f"{CMS}/nope", {"data": {}}, MERGE)).status == 404


async def test_unsupported_patch_type_is_415(http: HTTPClient) -> None:
    await http.post(CMS, {"metadata": {"name": "x"}})
    reply = await http.patch(f"{CMS}/x", {"data": {}}, "application/xml")
    assert reply.status == 415


async def test_status_subresource_semantics(http: HTTPClient) -> None:
    created = (await http.post(DEPLOYS, deployment())).json()
    assert created["metadata"]["generation"] == 1
    # Status in a main-resource write is ignored.
    with_status = dict(created, status={"replicas": 9})
    updated = (await http.put(f"{DEPLOYS}/web", with_status)).json()
    assert updated.get("status", {}).get("replicas") != 9
    assert updated["metadata"]["generation"] == 1
    # /status changes only status; generation stays.
    status_write = dict(
        updated,
        status={"replicas": 2, "observedGeneration": 1},
        spec=dict(updated["spec"], replicas=7),
    )
    status_reply = await http.put(f"{DEPLOYS}/web/status", status_write)
    assert status_reply.status == 200, status_reply.body
    after_status = status_reply.json()
    assert after_status["status"]["replicas"] == 2
    assert after_status["spec"]["replicas"] == 2
    assert after_status["metadata"]["generation"] == 1
    # A label change does not bump generation, a spec change does.
    labelled = await http.patch(f"{DEPLOYS}/web", {"metadata": {"labels": {"x": "y"}}}, MERGE)
    assert labelled.json()["metadata"]["generation"] == 1
    scaled = await http.patch(f"{DEPLOYS}/web", {"spec": {"replicas": 4}}, MERGE)
    assert scaled.json()["metadata"]["generation"] == 2
    # Status patch.
    patched = await http.patch(f"{DEPLOYS}/web/status", {"status": {"readyReplicas": 1}}, MERGE)
    assert patched.json()["status"]["readyReplicas"] == 1
    got = (await http.get(f"{DEPLOYS}/web/status")).json()
    assert got["status"]["readyReplicas"] == 1


async def test_a_status_merge_patch_decodes_what_it_brings(http: HTTPClient) -> None:
    await http.post(DEPLOYS, deployment())
    body = {
        "spec": {"bogus": 1},
        "status": {
            "replicas": 2,
            "extra": 1,
            "conditions": [{"type": "A", "status": "True", "x": 1}],
        },
    }
    reply = await http.patch(f"{DEPLOYS}/web/status", body, MERGE)
    assert reply.status == 200, reply.body
    assert sorted(reply.headers.getall("Warning")) == [
        '299 - "unknown field \\"spec.bogus\\""',
        '299 - "unknown field \\"status.conditions[0].x\\""',
        '299 - "unknown field \\"status.extra\\""',
    ]
    status = reply.json()["status"]
    assert status == {"replicas": 2, "conditions": [{"type": "A", "status": "True"}]}
    strict = await http.patch(
        f"{DEPLOYS}/web/status?fieldValidation=Strict", {"status": {"extra": 1}}, MERGE
    )
    assert strict.status == 400, strict.body
    assert 'unknown field "status.extra"' in strict.json()["message"]
    fraction = await http.patch(f"{DEPLOYS}/web/status", {"status": {"replicas": 1.5}}, MERGE)
    assert fraction.status == 400, fraction.body


async def test_scale_subresource(http: HTTPClient) -> None:
    await http.post(DEPLOYS, deployment())
    scale = (await http.get(f"{DEPLOYS}/web/scale")).json()
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"]["replicas"] == 2
    assert scale["status"]["selector"] == "app=web"
    reply = await http.patch(f"{DEPLOYS}/web/scale", {"spec": {"replicas": 5}}, MERGE)
    assert reply.status == 200
    assert reply.json()["spec"]["replicas"] == 5
    deploy = (await http.get(f"{DEPLOYS}/web")).json()
    assert deploy["spec"]["replicas"] == 5
    assert deploy["metadata"]["generation"] == 2


async def test_server_side_apply_creates_and_updates(http: HTTPClient) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa", "labels": {"a": "1"}},
        "data": {"k": "v"},
    }
    apply = "application/apply-patch+yaml"
    created = await http.patch(f"{CMS}/ssa?fieldManager=me", body, apply)
    assert created.status == 201, created.body
    managers = [(m["manager"], m["operation"]) for m in created.json()["metadata"]["managedFields"]]
    assert managers == [("me", "Apply")]
    # Re-applying without the label removes it; the data key changes.
    body2 = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa"},
        "data": {"k": "w"},
    }
    updated = (await http.patch(f"{CMS}/ssa?fieldManager=me", body2, apply)).json()
    assert "labels" not in updated["metadata"] or "a" not in updated["metadata"]["labels"]
    assert updated["data"] == {"k": "w"}
    # Another manager changing k conflicts unless forced.
    other = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa"},
        "data": {"k": "x"},
    }
    conflict = await http.patch(f"{CMS}/ssa?fieldManager=other", other, apply)
    assert conflict.status == 409
    assert conflict.json()["details"]["causes"][0]["type"] == "FieldManagerConflict"
    forced = await http.patch(f"{CMS}/ssa?fieldManager=other&force=true", other, apply)
    assert forced.status == 200 and forced.json()["data"] == {"k": "x"}
    missing_manager = await http.patch(f"{CMS}/ssa", other, apply)
    assert missing_manager.status == 422
