"""CustomResourceDefinitions: discovery, conditions, validation, pruning, defaulting."""

from __future__ import annotations

import asyncio

from tests.support import HTTPClient
from tests.support.crds import CRDS, WIDGETS, widget, widget_crd

MERGE = "application/merge-patch+json"


async def install(http: HTTPClient) -> dict[str, object]:
    reply = await http.post(CRDS, widget_crd())
    assert reply.status == 201, reply.body
    return reply.json()  # type: ignore[no-any-return]


async def test_crd_appears_in_discovery_at_once_with_conditions(http: HTTPClient) -> None:
    await install(http)
    groups = (await http.get("/apis")).json()["groups"]
    assert "example.com" in [g["name"] for g in groups]
    resources = {r["name"]: r for r in (await http.get("/apis/example.com/v1")).json()["resources"]}
    widgets = resources["widgets"]
    assert widgets["kind"] == "Widget" and widgets["singularName"] == "widget"
    assert widgets["shortNames"] == ["wd"] and widgets["categories"] == ["all"]
    assert "widgets/status" in resources and "widgets/scale" in resources
    crd = (await http.get(f"{CRDS}/widgets.example.com")).json()
    conditions = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "True"
    assert conditions["Established"]["status"] == "True"
    assert conditions["Established"]["reason"] == "InitialNamesAccepted"
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["storedVersions"] == ["v1"]


async def test_established_arrives_as_a_watch_event(http: HTTPClient) -> None:
    rv = (await http.get(CRDS)).json()["metadata"]["resourceVersion"]
    task = asyncio.create_task(install(http))
    events = await http.watch_lines(
        f"{CRDS}?watch=true&resourceVersion={rv}",
        lambda ev: any(
            any(
                c["type"] == "Established" and c["status"] == "True"
                for c in (e["object"].get("status") or {}).get("conditions") or []
            )
            for e in ev
        ),
    )
    await task
    assert events[0]["type"] == "ADDED"
    assert events[-1]["type"] == "MODIFIED"


async def test_custom_resource_crud_and_generation(http: HTTPClient) -> None:
    await install(http)
    created = await http.post(WIDGETS, widget("w1"))
    assert created.status == 201, created.body
    obj = created.json()
    assert obj["metadata"]["generation"] == 1
    assert obj["spec"]["color"] == "red"  # defaulted
    listed = (await http.get(WIDGETS)).json()
    assert listed["kind"] == "WidgetList" and len(listed["items"]) == 1
    patched = (await http.patch(f"{WIDGETS}/w1", {"spec": {"size": 4}}, MERGE)).json()
    assert patched["metadata"]["generation"] == 2
    labelled = (
        await http.patch(f"{WIDGETS}/w1", {"metadata": {"labels": {"a": "b"}}}, MERGE)
    ).json()
    assert labelled["metadata"]["generation"] == 2
    # PUT of a custom resource needs a resourceVersion.
    no_rv = dict(labelled)
    no_rv["metadata"] = {k: v for k, v in labelled["metadata"].items() if k != "resourceVersion"}
    assert (await http.put(f"{WIDGETS}/w1", no_rv)).status == 422
    assert (await http.delete(f"{WIDGETS}/w1")).status == 200


async def test_schema_validation_reports_field_paths(http: HTTPClient) -> None:
    await install(http)
    cases = [
        (widget("a", size="big"), "spec.size"),
        (widget("b", size=11), "spec.size"),
        (widget("c", color="blue"), "spec.color"),
        (widget("d", name="UPPER"), "spec.name"),
        (
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "e"},
                "spec": {},
            },
            "spec.size",
        ),
    ]
    for body, field in cases:
        reply = await http.post(WIDGETS, body)
        assert reply.status == 422, (body, reply.body)
        status = reply.json()
        assert status["reason"] == "Invalid"
        assert status["details"]["kind"] == "Widget"
        assert status["details"]["group"] == "example.com"
        assert [c["field"] for c in status["details"]["causes"]] == [field], status


async def test_nullable_int_or_string_and_preserved_fields(http: HTTPClient) -> None:
    await install(http)
    body = widget("w", port="http", note=None, extra={"anything": {"goes": [1, 2]}})
    reply = await http.post(WIDGETS, body)
    assert reply.status == 201, reply.body
    spec = reply.json()["spec"]
    assert spec["port"] == "http" and spec["note"] is None
    assert spec["extra"] == {"anything": {"goes": [1, 2]}}
    assert (await http.post(WIDGETS, widget("w2", port=8080))).status == 201
    assert (await http.post(WIDGETS, widget("w3", port=[1]))).status == 422


async def test_unknown_fields_are_pruned_and_reported(http: HTTPClient) -> None:
    await install(http)
    body = widget("w", bogus=1)
    reply = await http.post(WIDGETS, body)
    assert reply.status == 201
    assert "bogus" not in reply.json()["spec"]
    assert reply.headers.get("Warning") == '299 - "unknown field \\"spec.bogus\\""'
    strict = await http.post(f"{WIDGETS}?fieldValidation=Strict", widget("w2", bogus=1))
    assert strict.status == 400
    assert strict.json()["message"] == 'strict decoding error: unknown field "spec.bogus"'
    ignore = await http.post(f"{WIDGETS}?fieldValidation=Ignore", widget("w3", bogus=1))
    assert ignore.status == 201 and "Warning" not in ignore.headers


async def test_status_and_scale_subresources(http: HTTPClient) -> None:
    await install(http)
    created = (await http.post(WIDGETS, {**widget("w"), "status": {"phase": "x"}})).json()
    assert "status" not in created  # dropped on create
    status = await http.patch(
        f"{WIDGETS}/w/status",
        {"status": {"phase": "Ready", "replicas": 1, "selector": "app=w"}},
        MERGE,
    )
    assert status.status == 200, status.body
    assert status.json()["status"]["phase"] == "Ready"
    assert status.json()["metadata"]["generation"] == 1
    ignored = (await http.patch(f"{WIDGETS}/w", {"status": {"phase": "Nope"}}, MERGE)).json()
    assert ignored["status"]["phase"] == "Ready"
    scale = (await http.get(f"{WIDGETS}/w/scale")).json()
    assert scale["status"] == {"replicas": 1, "selector": "app=w"}
    await http.patch(f"{WIDGETS}/w/scale", {"spec": {"replicas": 3}}, MERGE)
    assert (await http.get(f"{WIDGETS}/w")).json()["spec"]["replicas"] == 3


async def test_strategic_merge_patch_is_415_for_custom_resources(http: HTTPClient) -> None:
    await install(http)
    await http.post(WIDGETS, widget("w"))
    reply = await http.patch(
        f"{WIDGETS}/w", {"spec": {"size": 2}}, "application/strategic-merge-patch+json"
    )
    assert reply.status == 415
    assert reply.json()["reason"] == "UnsupportedMediaType"


async def test_kind_must_match(http: HTTPClient) -> None:
    await install(http)
    body = widget("w")
    body["kind"] = "Gadget"
    reply = await http.post(WIDGETS, body)
    assert reply.status in (400, 422)


async def test_deleting_the_crd_removes_its_objects_and_type(http: HTTPClient) -> None:
    await install(http)
    await http.post(WIDGETS, widget("a"))
    await http.post(WIDGETS, widget("b"))
    reply = await http.delete(f"{CRDS}/widgets.example.com")
    assert reply.status == 200
    assert (await http.get(f"{CRDS}/widgets.example.com")).status == 404
    assert (await http.get("/apis/example.com/v1")).status == 404
    assert (await http.get(WIDGETS)).status == 404
    # Re-creating starts empty.
    await install(http)
    assert (await http.get(WIDGETS)).json()["items"] == []


async def test_crd_deletion_waits_for_instance_finalizers(http: HTTPClient) -> None:
    await install(http)
    held = widget("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await http.post(WIDGETS, held)
    await http.delete(f"{CRDS}/widgets.example.com")
    crd = await http.get(f"{CRDS}/widgets.example.com")
    assert crd.status == 200
    conditions = {c["type"]: c for c in crd.json()["status"]["conditions"]}
    assert conditions["Terminating"]["status"] == "True"
    refused = await http.post(WIDGETS, widget("new"))
    assert refused.status == 405
    await http.patch(f"{WIDGETS}/held", {"metadata": {"finalizers": None}}, MERGE)
    assert (await http.get(f"{CRDS}/widgets.example.com")).status == 404


async def test_invalid_crd_is_rejected(http: HTTPClient) -> None:
    bad = widget_crd()
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "size"
    ] = {"minimum": 1}  # no type: not structural
    reply = await http.post(CRDS, bad)
    assert reply.status == 422
    wrong_name = widget_crd()
    wrong_name["metadata"]["name"] = "gadgets.example.com"
    assert (await http.post(CRDS, wrong_name)).status == 422


async def test_cluster_scoped_crd(http: HTTPClient) -> None:
    crd = widget_crd(scope="Cluster")
    assert (await http.post(CRDS, crd)).status == 201
    reply = await http.post("/apis/example.com/v1/widgets", widget("c"))
    assert reply.status == 201, reply.body
    assert "namespace" not in reply.json()["metadata"]
    assert (await http.get("/apis/example.com/v1/namespaces/default/widgets")).status == 404


async def test_a_crd_can_be_updated_with_its_cleanup_finalizer(http: HTTPClient) -> None:
    await install(http)
    live = (await http.get(f"{CRDS}/widgets.example.com")).json()
    assert "customresourcecleanup.apiextensions.k8s.io" in live["metadata"]["finalizers"]
    live["spec"]["names"]["shortNames"] = ["wd", "wdg"]
    reply = await http.put(f"{CRDS}/widgets.example.com", live)
    assert reply.status == 200, reply.body
