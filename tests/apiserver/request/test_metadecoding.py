"""Every object's metadata is decoded as ObjectMeta before a write does anything else."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import HTTPClient
from tests.support.crds import CRDS, WIDGETS, widget, widget_crd

CMS = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"

# (metadata fields, what Go's decoder says, with {p} for the path prefix of built-ins)
BAD_METADATA: list[tuple[dict[str, Any], str]] = [
    (
        {"labels": "oops"},
        "cannot unmarshal string into Go struct field ObjectMeta.{p}labels "
        "of type map[string]string",
    ),
    (
        {"labels": {"a": 1}},
        "cannot unmarshal number into Go struct field ObjectMeta.{p}labels of type string",
    ),
    (
        {"annotations": [1]},
        "cannot unmarshal array into Go struct field ObjectMeta.{p}annotations "
        "of type map[string]string",
    ),
    (
        {"finalizers": "abc"},
        "cannot unmarshal string into Go struct field ObjectMeta.{p}finalizers of type []string",
    ),
    (
        {"ownerReferences": {}},
        "cannot unmarshal object into Go struct field ObjectMeta.{p}ownerReferences "
        "of type []v1.OwnerReference",
    ),
    (
        {"ownerReferences": [{"controller": "yes"}]},
        "cannot unmarshal string into Go struct field OwnerReference.{p}ownerReferences"
        ".controller of type bool",
    ),
    (
        {"generation": 1.5},
        "cannot unmarshal number 1.5 into Go struct field ObjectMeta.{p}generation of type int64",
    ),
    (
        {"resourceVersion": 5},
        "cannot unmarshal number into Go struct field ObjectMeta.{p}resourceVersion of type string",
    ),
    (
        {"managedFields": [{"manager": 1}]},
        "cannot unmarshal number into Go struct field ManagedFieldsEntry.{p}managedFields"
        ".manager of type string",
    ),
]


async def install_widgets(http: HTTPClient) -> None:
    reply = await http.post(CRDS, widget_crd())
    assert reply.status == 201, reply.body


def configmap(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}


async def events_until(http: HTTPClient, path: str, rv: str, sentinel: str) -> list[str]:
    """Names in the watch from `rv` up to the object named `sentinel`."""
    events = await http.watch_lines(
        f"{path}?watch=true&resourceVersion={rv}",
        lambda ev: ev[-1]["object"]["metadata"]["name"] == sentinel,
    )
    return [e["object"]["metadata"]["name"] for e in events]


@pytest.mark.parametrize(("meta", "detail"), BAD_METADATA)
async def test_malformed_metadata_of_a_built_in_is_a_400_and_never_stored(
    http: HTTPClient, meta: dict[str, Any], detail: str
) -> None:
    rv = (await http.get(CMS)).json()["metadata"]["resourceVersion"]
    reply = await http.post(CMS, configmap("bad", **meta))
    assert reply.status == 400, reply.body
    assert reply.json()["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: '
        + detail.format(p="metadata.")
    )
    assert (await http.get(f"{CMS}/bad")).status == 404
    # No watcher hears of it: the next event after the refused write is the next good one.
    assert (await http.post(CMS, configmap("good"))).status == 201
    assert await events_until(http, CMS, rv, "good") == ["good"]


@pytest.mark.parametrize(("meta", "detail"), BAD_METADATA)
async def test_malformed_metadata_of_a_custom_object_is_a_400_and_never_stored(
    http: HTTPClient, meta: dict[str, Any], detail: str
) -> None:
    # kube-apiserver decodes a custom object's metadata on its own (apiextensions-apiserver
    # schemaobjectmeta.GetObjectMetaWithOptions), so Go names the fields from ObjectMeta.
    await install_widgets(http)
    rv = (await http.get(WIDGETS)).json()["metadata"]["resourceVersion"]
    body = widget("bad")
    body["metadata"].update(meta)
    reply = await http.post(WIDGETS, body)
    assert reply.status == 400, reply.body
    assert reply.json()["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: json: ' + detail.format(p="")
    )
    assert (await http.get(f"{WIDGETS}/bad")).status == 404
    assert (await http.post(WIDGETS, widget("good"))).status == 201
    assert await events_until(http, WIDGETS, rv, "good") == ["good"]
    # Lists by label and deletes of the collection still work.
    listed = await http.get(f"{WIDGETS}?labelSelector=app%3Dx")
    assert listed.status == 200 and listed.json()["items"] == []
    assert (await http.delete(f"{WIDGETS}/good")).status == 200


async def test_malformed_metadata_in_updates_patches_and_applies(http: HTTPClient) -> None:
    await install_widgets(http)
    assert (await http.post(WIDGETS, widget("w"))).status == 201
    current = (await http.get(f"{WIDGETS}/w")).json()
    put = await http.put(
        f"{WIDGETS}/w", {**current, "metadata": {**current["metadata"], "finalizers": "abc"}}
    )
    assert put.status == 400, put.body
    assert "ObjectMeta.finalizers of type []string" in put.json()["message"]

    # A patch producing malformed metadata fails as upstream's patch handler reports it.
    merged = await http.patch(f"{WIDGETS}/w", {"metadata": {"labels": "oops"}}, MERGE)
    assert merged.status == 422, merged.body
    status = merged.json()
    assert status["reason"] == "Invalid"
    [cause] = status["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith(
        "json: cannot unmarshal string into Go struct field ObjectMeta.labels of type "
        "map[string]string"
    )
    jsonpatch = await http.patch(
        f"{WIDGETS}/w",
        [{"op": "add", "path": "/metadata/finalizers", "value": "abc"}],
        JSON_PATCH,
    )
    assert jsonpatch.status == 422, jsonpatch.body

    applied = await http.patch(
        f"{WIDGETS}/w?fieldManager=m",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": 7}},
        APPLY,
    )
    assert applied.status == 400, applied.body
    assert "ObjectMeta.labels of type map[string]string" in applied.json()["message"]

    after = (await http.get(f"{WIDGETS}/w")).json()
    assert after["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]
    assert "labels" not in after["metadata"] and "finalizers" not in after["metadata"]


async def test_nulls_decode_to_what_go_would_hold(http: HTTPClient) -> None:
    reply = await http.post(
        CMS,
        configmap(
            "nulls",
            labels={"a": None, "b": "x"},
            annotations=None,
            generateName=None,
            ownerReferences=None,
        ),
    )
    assert reply.status == 201, reply.body
    meta = reply.json()["metadata"]
    assert meta["labels"] == {"a": "", "b": "x"}
    assert "annotations" not in meta and "generateName" not in meta
    assert "ownerReferences" not in meta


async def test_unknown_fields_of_a_custom_objects_metadata_are_dropped(http: HTTPClient) -> None:
    await install_widgets(http)
    body = widget("w")
    body["metadata"]["colour"] = "blue"
    reply = await http.post(WIDGETS, body)
    assert reply.status == 201, reply.body
    assert "colour" not in reply.json()["metadata"]
    assert reply.headers.get("Warning") == '299 - "unknown field \\"metadata.colour\\""'
    strict = await http.post(
        f"{WIDGETS}?fieldValidation=Strict", {**body, "metadata": {"name": "w2", "colour": "blue"}}
    )
    assert strict.status == 400, strict.body
    assert 'unknown field "metadata.colour"' in strict.json()["message"]
