"""JSON bodies are written as kube-apiserver writes them: every API object (objects, lists,
Status errors, Tables, discovery documents) ends with a newline, as json.Encoder.Encode
leaves it; /version and the OpenAPI v3 index are written raw, without one."""

from __future__ import annotations

import orjson

from tests.support import HTTPClient
from tests.support.crds import CRDS, WIDGETS, widget, widget_crd

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
METADATA = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def one_line(body: bytes) -> None:
    """`body` is one JSON document followed by exactly one newline."""
    assert body.endswith(b"}\n"), body[-40:]
    assert b"\n" not in body[:-1]
    orjson.loads(body)


async def test_api_objects_end_with_a_newline(http: HTTPClient) -> None:
    cm = {"metadata": {"name": "a"}, "data": {"k": "v"}}
    created = await http.post(CONFIGMAPS, cm)
    assert created.status == 201
    one_line(created.body)
    one_line((await http.get(f"{CONFIGMAPS}/a")).body)
    one_line((await http.get(CONFIGMAPS)).body)
    one_line((await http.put(f"{CONFIGMAPS}/a", created.json())).body)
    patched = await http.patch(
        f"{CONFIGMAPS}/a", {"data": {"k": "w"}}, "application/merge-patch+json"
    )
    one_line(patched.body)
    one_line((await http.post(f"{CONFIGMAPS}?dryRun=All", {"metadata": {"name": "b"}})).body)
    for accept in (TABLE, METADATA):
        one_line((await http.get(f"{CONFIGMAPS}/a", headers={"Accept": accept})).body)
    for accept in (TABLE, METADATA_LIST):
        one_line((await http.get(CONFIGMAPS, headers={"Accept": accept})).body)
    one_line((await http.delete(f"{CONFIGMAPS}/a")).body)
    one_line((await http.delete(CONFIGMAPS)).body)


async def test_errors_end_with_a_newline(http: HTTPClient) -> None:
    missing = await http.get(f"{CONFIGMAPS}/nothing")
    assert missing.status == 404
    one_line(missing.body)
    invalid = await http.post(CONFIGMAPS, {"metadata": {"name": "Bad_Name"}})
    assert invalid.status == 422
    one_line(invalid.body)
    unauthorized = await http.get(CONFIGMAPS, auth=False)
    assert unauthorized.status == 401
    one_line(unauthorized.body)
    no_route = await http.get("/apis/nothing.example.com/v1/things")
    assert no_route.status == 404
    one_line(no_route.body)
    # A request the HTTP layer refuses before it reaches a handler is a Status too.
    undecodable = await http.request("POST", CONFIGMAPS, raw=b"{")
    assert undecodable.status == 400
    one_line(undecodable.body)


async def test_discovery_documents_end_with_a_newline(http: HTTPClient) -> None:
    for path in ("/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1"):
        one_line((await http.get(path)).body)
    for path in ("/api", "/apis"):
        one_line((await http.get(path, headers={"Accept": AGGREGATED})).body)


async def test_custom_objects_end_with_a_newline(http: HTTPClient) -> None:
    crd = await http.post(CRDS, widget_crd())
    assert crd.status == 201
    one_line(crd.body)
    created = await http.post(WIDGETS, widget("w", size=2))
    assert created.status == 201, created.body
    one_line(created.body)
    one_line((await http.get(f"{WIDGETS}/w")).body)
    one_line((await http.get(WIDGETS)).body)
    invalid = await http.post(WIDGETS, widget("v", size=20))
    assert invalid.status == 422
    one_line(invalid.body)


async def test_yaml_ends_with_a_single_newline(http: HTTPClient) -> None:
    reply = await http.get(CONFIGMAPS, headers={"Accept": "application/yaml"})
    assert reply.status == 200
    assert reply.body.endswith(b"\n") and not reply.body.endswith(b"\n\n")


async def test_raw_documents_are_written_without_a_newline(http: HTTPClient) -> None:
    version = await http.get("/version")
    # WriteRawJSON indents and writes json.MarshalIndent's bytes as they are.
    assert version.body.startswith(b'{\n  "major": "1"')
    assert version.body.endswith(b"}")
    index = await http.get("/openapi/v3")
    assert index.body.endswith(b"}")
    orjson.loads(index.body)


async def test_watch_events_are_one_per_line(http: HTTPClient) -> None:
    await http.post(CONFIGMAPS, {"metadata": {"name": "w"}})
    url = http.server.url + f"{CONFIGMAPS}?watch=1&resourceVersion=0"
    async with http.session.get(url, headers=http.auth) as r:
        line = await r.content.readline()
    assert line.endswith(b"}\n")
    assert orjson.loads(line)["type"] == "ADDED"
