"""Nesting: a clear 4xx past the limit at any depth, and every code path safe up to it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from kubeforge._apiserver.request.nesting import MAX_DEPTH
from tests.support import HTTPClient

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FREE = "/apis/example.com/v1/namespaces/default/freeforms"
DEEP = "/apis/example.com/v1/namespaces/default/deepschemas"
CMS = "/api/v1/namespaces/default/configmaps"
REVISIONS = "/apis/apps/v1/namespaces/default/controllerrevisions"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def chain(levels: int, leaf: Any = "x") -> Any:
    """`levels` nested objects: chain(2) == {"a": {"a": "x"}}."""
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


def crd(plural: str, kind: str, spec_schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": spec_schema,
                                "status": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                },
                            },
                        }
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
    }


# Free-form data under spec, with a CEL rule that reads all of it.
FREEFORM_CRD = crd(
    "freeforms",
    "FreeForm",
    {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-validations": [
            {"rule": "self == self && size(self) > 0", "message": "spec must not be empty"}
        ],
    },
)

# The deepest typed schema a CRD within the limit can declare: the spec's schema sits 8
# levels into the CRD, each nested type costs two more (`properties`, `a`), and the rule at
# the bottom four.
SCHEMA_LEVELS = (MAX_DEPTH - 10) // 2


def deep_schema(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {
        "type": "object",
        "properties": {
            "leaf": {"type": "string", "default": "defaulted"},
            "n": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 10"}]},
        },
    }
    for _ in range(levels - 1):
        node = {"type": "object", "properties": {"a": node}}
    return node


@pytest.fixture
def half_the_recursion_limit() -> Iterator[None]:
    """Every path through the server at the nesting limit must stay well inside Python's
    recursion limit: these tests run with half of the default (1000) to keep that margin."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(500)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


async def create_crd(http: HTTPClient, body: dict[str, Any]) -> None:
    reply = await http.post(CRDS, body)
    assert reply.status == 201, reply.body


def freeform(name: str, spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "FreeForm",
        "metadata": {"name": name},
        "spec": spec,
    }


def raw_json(obj: Any, depth: int) -> bytes:
    """JSON text for values deeper than orjson (in this client) can encode: `obj` with the
    string "DEEP" replaced by a chain of `depth` objects."""
    nested = b'{"a":' * depth + b'"x"' + b"}" * depth
    return orjson.dumps(obj).replace(b'"DEEP"', nested)


async def test_a_body_past_the_limit_is_a_400_at_any_depth(http: HTTPClient) -> None:
    await create_crd(http, FREEFORM_CRD)
    # The object is one level, so spec may hold a chain of MAX_DEPTH - 1.
    at_limit = raw_json(freeform("ok", "DEEP"), MAX_DEPTH - 1)
    assert (await http.request("POST", FREE, raw=at_limit)).status == 201
    for depth in (MAX_DEPTH, 250, 1000, 5000, 100_000):
        reply = await http.request("POST", FREE, raw=raw_json(freeform("no", "DEEP"), depth))
        assert reply.status == 400, (depth, reply.body[:300])
        if depth < 1000:
            assert reply.json()["message"] == (
                f"the request body nests more than {MAX_DEPTH} levels deep (at spec"
                + ".a" * 11
                + f"...); this server accepts at most {MAX_DEPTH}"
            )
    for garbage in (b"[" * (3 * 1024 * 1024 - 64), b'{"a":' * (3 * 1024 * 1024 // 5 - 64)):
        reply = await http.request("POST", FREE, raw=garbage)
        assert reply.status == 400, reply.body[:300]
        assert "depth" in reply.json()["message"]
    assert (await http.get(f"{FREE}/no")).status == 404


async def test_yaml_and_every_kind_of_body_is_held_to_the_limit(http: HTTPClient) -> None:
    await create_crd(http, FREEFORM_CRD)
    too_deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    yaml_body = (
        "apiVersion: example.com/v1\nkind: FreeForm\nmetadata:\n  name: y\n"
        f"spec:\n  a: {too_deep}\n"
    )
    reply = await http.request(
        "POST", FREE, raw=yaml_body.encode(), content_type="application/yaml"
    )
    assert reply.status == 400, reply.body
    assert "nests more than 100 levels deep" in reply.json()["message"]
    assert (await http.post(FREE, freeform("f", {"a": 1}))).status == 201
    deep_doc = raw_json({"spec": "DEEP"}, MAX_DEPTH)
    for method, path, ctype in [
        ("PUT", f"{FREE}/f", "application/json"),
        ("PATCH", f"{FREE}/f", MERGE),
        ("PATCH", f"{FREE}/f?fieldManager=m", APPLY),
        ("PATCH", f"{FREE}/f/status", MERGE),
        ("DELETE", f"{FREE}/f", "application/json"),
        ("POST", "/api/v1/namespaces/default/serviceaccounts/default/token", "application/json"),
    ]:
        reply = await http.request(method, path, raw=deep_doc, content_type=ctype)
        assert reply.status == 400, (method, path, reply.body[:300])
    assert (await http.get(f"{FREE}/f")).json()["spec"] == {"a": 1}


@pytest.mark.usefixtures("half_the_recursion_limit")
async def test_an_object_at_the_limit_goes_through_every_write_path(http: HTTPClient) -> None:
    await create_crd(http, FREEFORM_CRD)
    # chain(n) under spec makes an object n + 1 deep; spec's own keys add one more.
    created = await http.post(FREE, freeform("f", chain(MAX_DEPTH - 1)))
    assert created.status == 201, created.body[:300]
    path = f"{FREE}/f"

    # Merge, JSON and apply patches reach into the deep part and keep it.
    merged = await http.patch(path, {"spec": {"b": chain(MAX_DEPTH - 2)}}, MERGE)
    assert merged.status == 200, merged.body[:300]
    pointer = "/spec" + "/a" * (MAX_DEPTH - 1)
    patched = await http.patch(path, [{"op": "replace", "path": pointer, "value": "y"}], JSON_PATCH)
    assert patched.status == 200, patched.body[:300]
    applied = await http.patch(
        f"{path}?fieldManager=deep",
        {
            "apiVersion": "example.com/v1",
            "kind": "FreeForm",
            "metadata": {"name": "f"},
            "spec": {"c": chain(MAX_DEPTH - 2)},
        },
        APPLY,
    )
    assert applied.status == 200, applied.body[:300]
    current = applied.json()
    # Its ownership records nest deeper than the object: they still round-trip in a PUT.
    managed = next(m for m in current["metadata"]["managedFields"] if m["manager"] == "deep")
    assert "f:c" in managed["fieldsV1"]["f:spec"]
    replaced = await http.put(path, current)
    assert replaced.status == 200, replaced.body[:300]
    status = await http.patch(f"{path}/status", {"status": chain(MAX_DEPTH - 1)}, MERGE)
    assert status.status == 200, status.body[:300]

    # The CEL rule compared all of it on every write, and still judges.
    emptied = await http.patch(path, {"spec": {"a": None, "b": None, "c": None}}, MERGE)
    assert emptied.status == 422, emptied.body[:300]
    assert "spec must not be empty" in emptied.json()["message"]
    listed = await http.get(FREE)
    assert listed.status == 200 and len(listed.json()["items"]) == 1
    table = await http.get(f"{FREE}?includeObject=Object", headers={"Accept": TABLE})
    assert table.status == 200, table.body[:300]
    as_yaml = await http.get(path, headers={"Accept": "application/yaml"})
    assert as_yaml.status == 200 and as_yaml.body.startswith(b"apiVersion: example.com/v1")
    events = await http.watch_lines(f"{FREE}?watch=true", lambda ev: len(ev) >= 1)
    assert events[0]["object"]["spec"]["c"] == chain(MAX_DEPTH - 2)


@pytest.mark.usefixtures("half_the_recursion_limit")
async def test_a_deep_typed_schema_validates_defaults_and_prunes_at_the_bottom(
    http: HTTPClient,
) -> None:
    await create_crd(http, crd("deepschemas", "DeepSchema", deep_schema(SCHEMA_LEVELS)))
    bottom: dict[str, Any] = {"n": 1, "unknown": True}
    spec = bottom
    for _ in range(SCHEMA_LEVELS - 1):
        spec = {"a": spec}
    body = {
        "apiVersion": "example.com/v1",
        "kind": "DeepSchema",
        "metadata": {"name": "d"},
        "spec": spec,
    }
    created = await http.post(DEEP, body)
    assert created.status == 201, created.body[:300]
    got = created.json()["spec"]
    for _ in range(SCHEMA_LEVELS - 1):
        got = got["a"]
    assert got == {"n": 1, "leaf": "defaulted"}  # defaulted, and pruned
    bottom["n"] = 11
    refused = await http.put(
        f"{DEEP}/d", {**body, "metadata": created.json()["metadata"], "spec": spec}
    )
    assert refused.status == 422, refused.body[:300]
    assert "Invalid value" in refused.json()["message"]


@pytest.mark.usefixtures("half_the_recursion_limit")
async def test_built_in_free_form_data_at_the_limit(http: HTTPClient) -> None:
    # ControllerRevision.data is a RawExtension: any JSON, typed by nothing.
    revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "r"},
        "revision": 1,
        "data": chain(MAX_DEPTH - 1),
    }
    created = await http.request("POST", REVISIONS, raw=orjson.dumps(revision))
    assert created.status == 201, created.body[:300]
    patched = await http.patch(f"{REVISIONS}/r", {"data": {"b": chain(MAX_DEPTH - 2)}}, STRATEGIC)
    assert patched.status == 200, patched.body[:300]
    applied = await http.patch(
        f"{REVISIONS}/r?fieldManager=m&force=true",
        {**revision, "data": chain(MAX_DEPTH - 1, "z")},
        APPLY,
    )
    assert applied.status == 200, applied.body[:300]


def copies_into_itself(times: int, doubling: bool) -> list[dict[str, Any]]:
    """JSON patch operations that copy the annotations map into itself `times` times: at
    its deepest point (the depth doubles) or one level down (it grows by two)."""
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/metadata/annotations", "value": {"k": {}}}]
    depth = 2  # maps in the annotations: {"k": {}}
    for _ in range(times):
        below = depth - 1 if doubling else 1
        target = "/metadata/annotations" + "/k" * below + "/k"
        ops.append({"op": "copy", "from": "/metadata/annotations", "path": target})
        depth = below + 1 + depth if doubling else depth + 2
    return ops


async def test_a_json_patch_cannot_build_depth_or_size_out_of_shallow_pieces(
    http: HTTPClient,
) -> None:
    assert (await http.post(CMS, {"metadata": {"name": "cm"}, "data": {"a": "1"}})).status == 201
    path = f"{CMS}/cm"
    before = (await http.get(path)).json()
    # Ten doublings would make two thousand levels: the copies stop long before.
    reply = await http.patch(path, copies_into_itself(10, doubling=True), JSON_PATCH)
    assert reply.status == 422, reply.body[:300]
    [cause] = reply.json()["details"]["causes"]
    assert cause["message"] == "the value to copy nests too deeply"
    # Growing two levels a copy, sixty copies make a result too deep to keep.
    reply = await http.patch(path, copies_into_itself(60, doubling=False), JSON_PATCH)
    assert reply.status == 422, reply.body[:300]
    assert reply.json()["details"]["causes"][0]["message"] == (
        f"Forbidden: may not nest more than {MAX_DEPTH} levels deep"
    )

    # Copies that widen rather than deepen are bounded by their total size, as upstream's.
    big = "x" * (512 * 1024)
    widening = [{"op": "add", "path": "/data/big", "value": big}] + [
        {"op": "copy", "from": "/data/big", "path": f"/data/c{i}"} for i in range(8)
    ]
    reply = await http.patch(path, widening, JSON_PATCH)
    assert reply.status == 422, reply.body[:300]
    [cause] = reply.json()["details"]["causes"]
    assert cause["message"].startswith("the copy operations of this patch add")
    after = (await http.get(path)).json()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH])
async def test_the_limit_is_exact(http: HTTPClient, depth: int) -> None:
    await create_crd(http, FREEFORM_CRD)
    reply = await http.request("POST", FREE, raw=raw_json(freeform("e", "DEEP"), depth))
    assert reply.status == (201 if depth + 1 <= MAX_DEPTH else 400), reply.body[:200]
