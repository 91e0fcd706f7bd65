"""A resourceVersion in any write body is a precondition: every verb, every subresource."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeforge.testing import eventually
from tests.support import HTTPClient, Reply
from tests.support.crds import CRDS, WIDGETS, widget, widget_crd

CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

STALE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def assert_stale(reply: Reply, resource: str, name: str) -> None:
    assert reply.status == 409, reply.body
    status = reply.json()
    assert status["reason"] == "Conflict"
    assert status["message"] == f'Operation cannot be fulfilled on {resource} "{name}": {STALE}'


async def stale_version(http: HTTPClient, path: str) -> str:
    """The object's resourceVersion, made stale by a write after it was read."""
    rv = (await http.get(path)).json()["metadata"]["resourceVersion"]
    touched = await http.patch(path, {"metadata": {"annotations": {"touch": rv}}}, MERGE)
    assert touched.status == 200, touched.body
    return str(rv)


async def install_widgets(http: HTTPClient) -> None:
    reply = await http.post(CRDS, widget_crd())
    assert reply.status == 201, reply.body


async def test_every_write_to_a_configmap_holds_a_stale_version_to_409(http: HTTPClient) -> None:
    path = f"{CMS}/cm"
    assert (await http.post(CMS, {"metadata": {"name": "cm"}, "data": {"n": "0"}})).status == 201
    rv = await stale_version(http, path)
    meta = {"name": "cm", "resourceVersion": rv}
    writes = [
        http.put(path, {"metadata": meta, "data": {"n": "1"}}),
        http.patch(path, {"metadata": {"resourceVersion": rv}, "data": {"n": "1"}}, MERGE),
        http.patch(path, {"metadata": {"resourceVersion": rv}, "data": {"n": "1"}}, STRATEGIC),
        http.patch(
            path,
            [
                {"op": "replace", "path": "/metadata/resourceVersion", "value": rv},
                {"op": "replace", "path": "/data/n", "value": "1"},
            ],
            JSON_PATCH,
        ),
        # (Without force, an apply of a field another manager owns would conflict first.)
        http.patch(
            f"{path}?fieldManager=m",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"m": "1"}},
            APPLY,
        ),
        http.patch(
            f"{path}?fieldManager=m&force=true",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"n": "1"}},
            APPLY,
        ),
    ]
    for write in writes:
        assert_stale(await write, "configmaps", "cm")
    assert (await http.get(path)).json()["data"] == {"n": "0"}  # nothing got through


async def test_subresource_writes_hold_a_stale_version_to_409(http: HTTPClient) -> None:
    await install_widgets(http)
    path = f"{WIDGETS}/w"
    created = await http.post(WIDGETS, widget("w", replicas=1))
    assert created.status == 201, created.body
    rv = await stale_version(http, path)
    current = (await http.get(path)).json()
    stale_body = {**current, "metadata": {**current["metadata"], "resourceVersion": rv}}
    scale = (await http.get(f"{path}/scale")).json()
    writes = [
        http.put(f"{path}/status", {**stale_body, "status": {"phase": "Up"}}),
        http.patch(
            f"{path}/status",
            {"metadata": {"resourceVersion": rv}, "status": {"phase": "Up"}},
            MERGE,
        ),
        http.patch(
            f"{path}/status?fieldManager=m",
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "w", "resourceVersion": rv},
                "status": {"phase": "Up"},
            },
            APPLY,
        ),
        http.put(
            f"{path}/scale",
            {
                **scale,
                "metadata": {**scale["metadata"], "resourceVersion": rv},
                "spec": {"replicas": 5},
            },
        ),
        http.patch(
            f"{path}/scale", {"metadata": {"resourceVersion": rv}, "spec": {"replicas": 5}}, MERGE
        ),
        http.patch(
            f"{path}?fieldManager=m",
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "w", "resourceVersion": rv},
                "spec": {"name": "abc"},
            },
            APPLY,
        ),
        http.put(path, {**stale_body, "spec": {"size": 4}}),
    ]
    for write in writes:
        assert_stale(await write, "widgets.example.com", "w")
    after = (await http.get(path)).json()
    assert after["spec"] == current["spec"] and "status" not in after


async def test_built_in_scale_moves_its_resource_version_onto_the_parent(http: HTTPClient) -> None:
    assert (await http.post(DEPLOYS, deployment("d"))).status == 201
    rv = await stale_version(http, f"{DEPLOYS}/d")
    scale = (await http.get(f"{DEPLOYS}/d/scale")).json()
    stale = {**scale, "metadata": {**scale["metadata"], "resourceVersion": rv}}
    assert_stale(
        await http.put(f"{DEPLOYS}/d/scale", {**stale, "spec": {"replicas": 3}}),
        "deployments.apps",
        "d",
    )
    fresh = await http.put(f"{DEPLOYS}/d/scale", {**scale, "spec": {"replicas": 3}})
    assert fresh.status == 200, fresh.body
    assert (await http.get(f"{DEPLOYS}/d")).json()["spec"]["replicas"] == 3


async def test_a_binding_and_a_namespace_finalize_hold_their_version_to_409(
    http: HTTPClient,
) -> None:
    pods = "/api/v1/namespaces/default/pods"
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    assert (await http.post(pods, pod)).status == 201
    rv = await stale_version(http, f"{pods}/p")
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "resourceVersion": rv},
        "target": {"kind": "Node", "name": "n1"},
    }
    assert_stale(await http.post(f"{pods}/p/binding", binding), "pods", "p")
    assert "nodeName" not in (await http.get(f"{pods}/p")).json()["spec"]
    del binding["metadata"]["resourceVersion"]
    assert (await http.post(f"{pods}/p/binding", binding)).status == 201

    namespaces = "/api/v1/namespaces"
    assert (await http.post(namespaces, {"metadata": {"name": "ns"}})).status == 201
    rv = await stale_version(http, f"{namespaces}/ns")
    current = (await http.get(f"{namespaces}/ns")).json()
    stale = {**current, "metadata": {**current["metadata"], "resourceVersion": rv}}
    assert_stale(
        await http.put(f"{namespaces}/ns/finalize", {**stale, "spec": {"finalizers": []}}),
        "namespaces",
        "ns",
    )
    assert (await http.get(f"{namespaces}/ns")).json()["spec"]["finalizers"] == ["kubernetes"]


async def test_the_current_version_or_none_lets_a_write_through(http: HTTPClient) -> None:
    path = f"{CMS}/cm"
    assert (await http.post(CMS, {"metadata": {"name": "cm"}})).status == 201
    rv = (await http.get(path)).json()["metadata"]["resourceVersion"]
    applied = await http.patch(
        f"{path}?fieldManager=m",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm", "resourceVersion": rv},
            "data": {"a": "1"},
        },
        APPLY,
    )
    assert applied.status == 200, applied.body
    # "0" means no version at all, as upstream reads it; a ConfigMap may be replaced so.
    unconditional = await http.put(
        path, {"metadata": {"name": "cm", "resourceVersion": "0"}, "data": {"a": "2"}}
    )
    assert unconditional.status == 200, unconditional.body
    assert unconditional.json()["data"] == {"a": "2"}


async def test_custom_objects_need_a_version_on_every_update(http: HTTPClient) -> None:
    await install_widgets(http)
    assert (await http.post(WIDGETS, widget("w"))).status == 201
    removed = await http.patch(
        f"{WIDGETS}/w", [{"op": "remove", "path": "/metadata/resourceVersion"}], JSON_PATCH
    )
    assert removed.status == 422, removed.body
    assert removed.json()["message"] == (
        'Widget.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0x0: '
        "must be specified for an update"
    )


async def test_a_version_on_a_new_object_is_refused(http: HTTPClient) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "new", "resourceVersion": "7"},
    }
    reply = await http.post(CMS, body)
    assert reply.status == 400, reply.body
    assert reply.json()["message"] == "resourceVersion should not be set on objects to be created"
    assert (await http.get(f"{CMS}/new")).status == 404
    # Validation comes first: storage is the last to look at the version.
    invalid = await http.post(CMS, {"metadata": {"name": "Bad_Name", "resourceVersion": "7"}})
    assert invalid.status == 422, invalid.body


@pytest.mark.parametrize(
    "version",
    ["abc", "-1", "+7", "1.5", " 7", "7 ", "0x10", "1_000", "18446744073709551616", "0", "00"],
)
async def test_a_create_ignores_a_version_that_is_no_version(
    http: HTTPClient, version: str
) -> None:
    # Storage parses it with strconv.ParseUint and refuses only a version other than 0.
    await install_widgets(http)
    for path, body in (
        (CMS, {"metadata": {"name": "new", "resourceVersion": version}}),
        (WIDGETS, {**widget("new"), "metadata": {"name": "new", "resourceVersion": version}}),
    ):
        created = await http.post(path, body)
        assert created.status == 201, created.body
        stored = (await http.get(f"{path}/new")).json()["metadata"]["resourceVersion"]
        assert created.json()["metadata"]["resourceVersion"] == stored
        assert stored.isdigit() and int(stored) > 0


async def test_a_dry_run_create_answers_with_the_version_given(http: HTTPClient) -> None:
    # A dry run never reaches storage (registry/generic/registry/dryrun.go): the object
    # comes back as it would be created, with whatever version the request carried.
    for version in ("7", "abc"):
        body = {"metadata": {"name": "dry", "resourceVersion": version}}
        reply = await http.post(f"{CMS}?dryRun=All", body)
        assert reply.status == 201, reply.body
        assert reply.json()["metadata"]["resourceVersion"] == version
    reply = await http.post(f"{CMS}?dryRun=All", {"metadata": {"name": "dry"}})
    assert reply.status == 201
    assert "resourceVersion" not in reply.json()["metadata"]
    assert (await http.get(f"{CMS}/dry")).status == 404


async def test_an_apply_that_creates_ignores_a_version(http: HTTPClient) -> None:
    # The registry's update creates the object when there is none, and storage then
    # replaces the version; one that does not parse is the parser's error.
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "new", "resourceVersion": "7"},
        "data": {"k": "v"},
    }
    reply = await http.patch(f"{CMS}/new?fieldManager=m", body, APPLY)
    assert reply.status == 201, reply.body
    rv = reply.json()["metadata"]["resourceVersion"]
    assert rv != "7"
    assert (await http.get(f"{CMS}/new")).json()["metadata"]["resourceVersion"] == rv
    body["metadata"] = {"name": "other", "resourceVersion": "abc"}
    bad = await http.patch(f"{CMS}/other?fieldManager=m", body, APPLY)
    assert bad.status == 400, bad.body
    assert bad.json()["message"] == 'strconv.ParseUint: parsing "abc": invalid syntax'
    body["metadata"] = {"name": "other", "resourceVersion": "99999999999999999999"}
    bad = await http.patch(f"{CMS}/other?fieldManager=m", body, APPLY)
    assert bad.status == 400, bad.body
    assert bad.json()["message"].endswith(": value out of range")
    assert (await http.get(f"{CMS}/other")).status == 404


async def test_subresource_creates_ignore_a_version_that_is_no_version(
    http: HTTPClient,
) -> None:
    pods = "/api/v1/namespaces/default/pods"
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    assert (await http.post(pods, pod)).status == 201
    assert (
        await http.post(
            "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "robot"}}
        )
    ).status == 201
    token = await http.post(
        "/api/v1/namespaces/default/serviceaccounts/robot/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"resourceVersion": "abc"},
            "spec": {},
        },
    )
    assert token.status == 201, token.body
    eviction = await http.post(
        f"{pods}/p/eviction",
        {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "p", "resourceVersion": "abc"},
        },
    )
    assert eviction.status == 201, eviction.body
    await eventually(lambda: _gone(http, f"{pods}/p"))


async def _gone(http: HTTPClient, path: str) -> bool:
    return (await http.get(path)).status == 404


async def read_modify_write(http: HTTPClient, path: str, by_apply: bool) -> tuple[int, int]:
    """Add one to the counter, retrying on conflict; returns (conflicts seen, writes made)."""
    conflicts = 0
    while True:
        current = (await http.get(path)).json()
        rv = current["metadata"]["resourceVersion"]
        value = str(int(current["data"]["n"]) + 1)
        if by_apply:
            reply = await http.patch(
                f"{path}?fieldManager=counter&force=true",
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "counter", "resourceVersion": rv},
                    "data": {"n": value},
                },
                APPLY,
            )
        else:
            body = {**current, "data": {"n": value}}
            reply = await http.put(path, body)
        if reply.status == 409:
            conflicts += 1
            continue
        assert reply.status == 200, reply.body
        return conflicts, 1


@pytest.mark.parametrize("by_apply", [False, True], ids=["update", "apply"])
async def test_twenty_concurrent_read_modify_writers_lose_no_increment(
    http: HTTPClient, by_apply: bool
) -> None:
    path = f"{CMS}/counter"
    created = await http.post(CMS, {"metadata": {"name": "counter"}, "data": {"n": "0"}})
    assert created.status == 201

    async def writer() -> tuple[int, int]:
        conflicts = writes = 0
        for _ in range(5):
            c, w = await read_modify_write(http, path, by_apply)
            conflicts += c
            writes += w
        return conflicts, writes

    results = await asyncio.gather(*(writer() for _ in range(20)))
    writes = sum(w for _, w in results)
    assert writes == 100
    assert int((await http.get(path)).json()["data"]["n"]) == writes
    # The writers did race: without the precondition these conflicts would be lost updates.
    assert sum(c for c, _ in results) > 0
