"""Finalizers, deletion options, dry runs and field validation."""

from __future__ import annotations

import asyncio

from kubeforge.apiserver import APIServer
from tests.support import HTTPClient

CMS = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"
JSONP = "application/json-patch+json"


async def test_finalizers_hold_the_object_until_removed(http: HTTPClient) -> None:
    body = {"metadata": {"name": "x", "finalizers": ["example.com/keep"]}, "data": {}}
    await http.post(CMS, body)
    deleting = await http.delete(f"{CMS}/x")
    assert deleting.status == 200
    obj = deleting.json()
    assert obj["kind"] == "ConfigMap"
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0
    # Deleting again is idempotent; adding finalizers is forbidden now.
    again = await http.delete(f"{CMS}/x")
    assert again.status == 200
    assert again.json()["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    add = await http.patch(
        f"{CMS}/x", {"metadata": {"finalizers": ["example.com/keep", "b/c"]}}, MERGE
    )
    assert add.status == 422
    rv = obj["metadata"]["resourceVersion"]

    async def release() -> None:
        await asyncio.sleep(0)
        removed = await http.patch(
            f"{CMS}/x", [{"op": "remove", "path": "/metadata/finalizers"}], JSONP
        )
        assert removed.status == 200

    task = asyncio.create_task(release())
    events = await http.watch_lines(
        f"{CMS}?watch=true&resourceVersion={rv}", lambda ev: len(ev) >= 1
    )
    await task
    assert events[0]["type"] == "DELETED"
    assert (await http.get(f"{CMS}/x")).status == 404


async def test_propagation_policies_are_accepted(http: HTTPClient) -> None:
    for policy in ("Background", "Orphan", "Foreground"):
        await http.post(CMS, {"metadata": {"name": f"x-{policy.lower()}"}})
    gone = await http.delete(f"{CMS}/x-background", {"propagationPolicy": "Background"})
    assert gone.status == 200 and gone.json()["kind"] == "Status"
    orphaned = await http.delete(
        f"{CMS}/x-orphan",
        {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"},
    )
    assert orphaned.status == 200
    assert orphaned.json()["metadata"]["finalizers"] == ["orphan"]
    foreground = await http.delete(f"{CMS}/x-foreground?propagationPolicy=Foreground")
    assert foreground.json()["metadata"]["finalizers"] == ["foregroundDeletion"]
    bad = await http.delete(f"{CMS}/x-orphan", {"propagationPolicy": "Sideways"})
    assert bad.status == 422


async def test_protected_namespaces_cannot_be_deleted(http: HTTPClient) -> None:
    reply = await http.delete("/api/v1/namespaces/default")
    assert reply.status == 403


async def test_deleting_a_namespace_marks_it_terminating(http: HTTPClient) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "team"}})
    reply = await http.delete("/api/v1/namespaces/team")
    assert reply.status == 200
    ns = (await http.get("/api/v1/namespaces/team")).json()
    assert ns["status"]["phase"] == "Terminating"
    refused = await http.post("/api/v1/namespaces/team/configmaps", {"metadata": {"name": "x"}})
    assert refused.status == 403
    assert refused.json()["details"]["causes"][0]["type"] == "NamespaceTerminating"
    finalize = dict(ns, spec={"finalizers": []})
    done = await http.put("/api/v1/namespaces/team/finalize", finalize)
    assert done.status == 200, done.body
    assert (await http.get("/api/v1/namespaces/team")).status == 404


async def test_dry_run_on_every_write(server: APIServer, http: HTTPClient) -> None:
    before = server.store.revision
    created = await http.post(f"{CMS}?dryRun=All", {"metadata": {"name": "x"}, "data": {"a": "1"}})
    assert created.status == 201
    assert created.json()["metadata"]["uid"]
    assert (await http.get(f"{CMS}/x")).status == 404
    await http.post(CMS, {"metadata": {"name": "y"}, "data": {"a": "1"}})
    rev = server.store.revision
    patched = await http.patch(f"{CMS}/y?dryRun=All", {"data": {"a": "2"}}, MERGE)
    assert patched.json()["data"] == {"a": "2"}
    obj = (await http.get(f"{CMS}/y")).json()
    assert obj["data"] == {"a": "1"}
    replaced = await http.put(f"{CMS}/y?dryRun=All", dict(obj, data={"a": "3"}))
    assert replaced.status == 200 and replaced.json()["data"] == {"a": "3"}
    deleted = await http.delete(f"{CMS}/y?dryRun=All")
    assert deleted.status == 200
    assert (await http.get(f"{CMS}/y")).json()["data"] == {"a": "1"}
    assert server.store.revision == rev and rev == before + 1
    assert (await http.post(f"{CMS}?dryRun=Some", {"metadata": {"name": "z"}})).status == 422


async def test_field_validation_modes(http: HTTPClient) -> None:
    body = {"metadata": {"name": "x"}, "data": {}, "bogus": {"a": 1}}
    strict = await http.post(f"{CMS}?fieldValidation=Strict", body)
    assert strict.status == 400
    assert strict.json()["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        'strict decoding error: unknown field "bogus"'
    )
    warn = await http.post(f"{CMS}?fieldValidation=Warn", body)
    assert warn.status == 201
    assert warn.headers.getall("Warning") == ['299 - "unknown field \\"bogus\\""']
    assert "bogus" not in warn.json()
    ignore = await http.post(f"{CMS}?fieldValidation=Ignore", dict(body, metadata={"name": "y"}))
    assert ignore.status == 201 and "Warning" not in ignore.headers
    default = await http.post(CMS, dict(body, metadata={"name": "z"}))
    assert default.status == 201 and "Warning" in default.headers
    patched = await http.patch(f"{CMS}/x?fieldValidation=Strict", {"bogus": 1}, MERGE)
    assert patched.status == 400
    assert (await http.post(f"{CMS}?fieldValidation=Loose", body)).status == 400


async def test_a_dry_run_asked_for_in_the_body_changes_nothing(http: HTTPClient) -> None:
    await http.post(CMS, {"metadata": {"name": "keep"}, "data": {"a": "1"}})
    before = (await http.get(f"{CMS}/keep")).json()
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}
    orphaning = await http.delete(f"{CMS}/keep", dict(options, propagationPolicy="Orphan"))
    assert orphaning.status == 200
    assert orphaning.json()["metadata"]["finalizers"] == ["orphan"]
    deleting = await http.delete(f"{CMS}/keep", options)
    assert deleting.status == 200
    assert (await http.get(f"{CMS}/keep")).json() == before


async def test_delete_options_of_the_wrong_shape_are_refused(http: HTTPClient) -> None:
    await http.post(CMS, {"metadata": {"name": "keep"}, "data": {"a": "1"}})
    before = (await http.get(f"{CMS}/keep")).json()
    cases = {
        '{"dryRun": ["x"]}': (422, 'dryRun: Unsupported value: []string{"x"}'),
        '{"dryRun": [{"a": 1}]}': (
            400,
            "json: cannot unmarshal object into Go struct field DeleteOptions.dryRun of type "
            "string",
        ),
        '{"gracePeriodSeconds": 1.5}': (
            400,
            "json: cannot unmarshal number 1.5 into Go struct field "
            "DeleteOptions.gracePeriodSeconds of type int64",
        ),
        '{"preconditions": "x"}': (400, "DeleteOptions.preconditions of type v1.Preconditions"),
        '{"orphanDependents": "yes"}': (400, "DeleteOptions.orphanDependents of type bool"),
        "[1]": (400, "cannot unmarshal array into Go value of type v1.DeleteOptions"),
    }
    for body, (status, message) in cases.items():
        reply = await http.request("DELETE", f"{CMS}/keep", raw=body.encode())
        assert reply.status == status, (body, reply.body)
        assert message in reply.json()["message"], (body, reply.body)
    for query in ("dryRun=", "gracePeriodSeconds=1e3", "gracePeriodSeconds=99999999999999999999"):
        reply = await http.delete(f"{CMS}/keep?{query}")
        assert reply.status in (400, 422), (query, reply.body)
    assert (await http.get(f"{CMS}/keep")).json() == before


async def test_a_body_s_options_are_the_ones_used(http: HTTPClient) -> None:
    # As kube-apiserver reads them: from the body when there is one, else from the query.
    await http.post(CMS, {"metadata": {"name": "gone"}})
    reply = await http.delete(f"{CMS}/gone?propagationPolicy=Sideways&dryRun=All", {})
    assert reply.status == 200
    assert (await http.get(f"{CMS}/gone")).status == 404
