"""CustomResourceDefinitions: discovery, conditions, validation, pruning, defaulting."""

from __future__ import annotations

import asyncio

from tests.integration.crd_fixtures import CRDS, WIDGETS, widget, widget_crd
from tests.support import Client

MERGE = "application/merge-patch+json"


async def install(client: Client) -> dict[str, object]:
    reply = await client.post(CRDS, widget_crd())
    assert reply.status == 201, reply.body
    return reply.json()  # type: ignore[no-any-return]


async def test_crd_appears_in_discovery_at_once_with_conditions(client: Client) -> None:
    await install(client)
    groups = (await client.get("/apis")).json()["groups"]
    assert "example.com" in [g["name"] for g in groups]
    resources = {
        r["name"]: r for r in (await client.get("/apis/example.com/v1")).json()["resources"]
    }
    widgets = resources["widgets"]
    assert widgets["kind"] == "Widget" and widgets["singularName"] == "widget"
    assert widgets["shortNames"] == ["wd"] and widgets["categories"] == ["all"]
    assert "widgets/status" in resources and "widgets/scale" in resources
    crd = (await client.get(f"{CRDS}/widgets.example.com")).json()
    conditions = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "True"
    assert conditions["Established"]["status"] == "True"
    assert conditions["Established"]["reason"] == "InitialNamesAccepted"
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["storedVersions"] == ["v1"]


async def test_established_arrives_as_a_watch_event(client: Client) -> None:
    rv = (await client.get(CRDS)).json()["metadata"]["resourceVersion"]
    task = asyncio.create_task(install(client))
    events = await client.watch_lines(
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


async def test_custom_resource_crud_and_generation(client: Client) -> None:
    await install(client)
    created = await client.post(WIDGETS, widget("w1"))
    assert created.status == 201, created.body
    obj = created.json()
    assert obj["metadata"]["generation"] == 1
    assert obj["spec"]["color"] == "red"  # defaulted
    listed = (await client.get(WIDGETS)).json()
    assert listed["kind"] == "WidgetList" and len(listed["items"]) == 1
    patched = (await client.patch(f"{WIDGETS}/w1", {"spec": {"size": 4}}, MERGE)).json()
    assert patched["metadata"]["generation"] == 2
    labelled = (
        await client.patch(f"{WIDGETS}/w1", {"metadata": {"labels": {"a": "b"}}}, MERGE)
    ).json()
    assert labelled["metadata"]["generation"] == 2
    # PUT of a custom resource needs a resourceVersion.
    no_rv = dict(labelled)
    no_rv["metadata"] = {k: v for k, v in labelled["metadata"].items() if k != "resourceVersion"}
    assert (await client.put(f"{WIDGETS}/w1", no_rv)).status == 422
    assert (await client.delete(f"{WIDGETS}/w1")).status == 200


async def test_schema_validation_reports_field_paths(client: Client) -> None:
    await install(client)
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
        reply = await client.post(WIDGETS, body)
        assert reply.status == 422, (body, reply.body)
        status = reply.json()
        assert status["reason"] == "Invalid"
        assert status["details"]["kind"] == "Widget"
        assert status["details"]["group"] == "example.com"
        assert [c["field"] for c in status["details"]["causes"]] == [field], status


async def test_nullable_int_or_string_and_preserved_fields(client: Client) -> None:
    await install(client)
    body = widget("w", port="http", note=None, extra={"anything": {"goes": [1, 2]}})
    reply = await client.post(WIDGETS, body)
    assert reply.status == 201, reply.body
    spec = reply.json()["spec"]
    assert spec["port"] == "http" and spec["note"] is None
    assert spec["extra"] == {"anything": {"goes": [1, 2]}}
    assert (await client.post(WIDGETS, widget("w2", port=8080))).status == 201
    assert (await client.post(WIDGETS, widget("w3", port=[1]))).status == 422


async def test_unknown_fields_are_pruned_and_reported(client: Client) -> None:
    await install(client)
    body = widget("w", bogus=1)
    reply = await client.post(WIDGETS, body)
    assert reply.status == 201
    assert "bogus" not in reply.json()["spec"]
    assert reply.headers.get("Warning") == '299 - "unknown field \\"spec.bogus\\""'
    strict = await client.post(f"{WIDGETS}?fieldValidation=Strict", widget("w2", bogus=1))
    assert strict.status == 400
    assert strict.json()["message"] == 'strict decoding error: unknown field "spec.bogus"'
    ignore = await client.post(f"{WIDGETS}?fieldValidation=Ignore", widget("w3", bogus=1))
    assert ignore.status == 201 and "Warning" not in ignore.headers


async def test_status_and_scale_subresources(client: Client) -> None:
    await install(client)
    created = (await client.post(WIDGETS, {**widget("w"), "status": {"phase": "x"}})).json()
    assert "status" not in created  # dropped on create
    status = await client.patch(
        f"{WIDGETS}/w/status",
        {"status": {"phase": "Ready", "replicas": 1, "selector": "app=w"}},
        MERGE,
    )
    assert status.status == 200, status.body
    assert status.json()["status"]["phase"] == "Ready"
    assert status.json()["metadata"]["generation"] == 1
    ignored = (await client.patch(f"{WIDGETS}/w", {"status": {"phase": "Nope"}}, MERGE)).json()
    assert ignored["status"]["phase"] == "Ready"
    scale = (await client.get(f"{WIDGETS}/w/scale")).json()
    assert scale["status"] == {"replicas": 1, "selector": "app=w"}
    await client.patch(f"{WIDGETS}/w/scale", {"spec": {"replicas": 3}}, MERGE)
    assert (await client.get(f"{WIDGETS}/w")).json()["spec"]["replicas"] == 3


async def test_strategic_merge_patch_is_415_for_custom_resources(client: Client) -> None:
    await install(client)
    await client.post(WIDGETS, widget("w"))
    reply = await client.patch(
        f"{WIDGETS}/w", {"spec": {"size": 2}}, "application/strategic-merge-patch+json"
    )
    assert reply.status == 415
    assert reply.json()["reason"] == "UnsupportedMediaType"


async def test_kind_must_match(client: Client) -> None:
    await install(client)
    body = widget("w")
    body["kind"] = "Gadget"
    reply = await client.post(WIDGETS, body)
    assert reply.status in (400, 422)


async def test_deleting_the_crd_removes_its_objects_and_type(client: Client) -> None:
    await install(client)
    await client.post(WIDGETS, widget("a"))
    await client.post(WIDGETS, widget("b"))
    reply = await client.delete(f"{CRDS}/widgets.example.com")
    assert reply.status == 200
    assert (await client.get(f"{CRDS}/widgets.example.com")).status == 404
    assert (await client.get("/apis/example.com/v1")).status == 404
    assert (await client.get(WIDGETS)).status == 404
    # Re-creating starts empty.
    await install(client)
    assert (await client.get(WIDGETS)).json()["items"] == []


async def test_crd_deletion_waits_for_instance_finalizers(client: Client) -> None:
    await install(client)
    held = widget("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await client.post(WIDGETS, held)
    await client.delete(f"{CRDS}/widgets.example.com")
    crd = await client.get(f"{CRDS}/widgets.example.com")
    assert crd.status == 200
    conditions = {c["type"]: c for c in crd.json()["status"]["conditions"]}
    assert conditions["Terminating"]["status"] == "True"
    refused = await client.post(WIDGETS, widget("new"))
    assert refused.status == 405
    await client.patch(f"{WIDGETS}/held", {"metadata": {"finalizers": None}}, MERGE)
    assert (await client.get(f"{CRDS}/widgets.example.com")).status == 404


async def test_invalid_crd_is_rejected(client: Client) -> None:
    bad = widget_crd()
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "size"
    ] = {"minimum": 1}  # no type: not structural
    reply = await client.post(CRDS, bad)
    assert reply.status == 422
    wrong_name = widget_crd()
    wrong_name["metadata"]["name"] = "gadgets.example.com"
    assert (await client.post(CRDS, wrong_name)).status == 422


async def test_cluster_scoped_crd(client: Client) -> None:
    crd = widget_crd(scope="Cluster")
    assert (await client.post(CRDS, crd)).status == 201
    reply = await client.post("/apis/example.com/v1/widgets", widget("c"))
    assert reply.status == 201, reply.body
    assert "namespace" not in reply.json()["metadata"]
    assert (await client.get("/apis/example.com/v1/namespaces/default/widgets")).status == 404


async def test_a_crd_can_be_updated_with_its_cleanup_finalizer(client: Client) -> None:
    await install(client)
    live = (await client.get(f"{CRDS}/widgets.example.com")).json()
    assert "customresourcecleanup.apiextensions.k8s.io" in live["metadata"]["finalizers"]
    live["spec"]["names"]["shortNames"] = ["wd", "wdg"]
    reply = await client.put(f"{CRDS}/widgets.example.com", live)
    assert reply.status == 200, reply.body
