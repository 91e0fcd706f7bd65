"""`/openapi/v2` over HTTP: content negotiation, ETag revalidation, CRDs coming and going."""

from __future__ import annotations

from email.utils import formatdate, parsedate_to_datetime

from kubeforge.testing import eventually
from tests.support import HTTPClient
from tests.support.crds import CRDS, widget_crd

KUBECTL_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
WIDGET = "com.example.v1.Widget"


async def test_json_and_protobuf_share_one_etag(http: HTTPClient) -> None:
    plain = await http.get("/openapi/v2")  # aiohttp asks for */*: JSON comes first
    assert plain.status == 200
    assert plain.headers["Content-Type"] == "application/json"
    assert plain.json()["swagger"] == "2.0"
    assert plain.headers["Vary"] == "Accept"
    etag = plain.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) == 130
    assert parsedate_to_datetime(plain.headers["Last-Modified"])

    proto = await http.get("/openapi/v2", headers={"Accept": KUBECTL_ACCEPT})
    assert proto.status == 200
    assert proto.headers["Content-Type"] == PROTOBUF
    assert proto.headers["ETag"] == etag
    assert proto.body.startswith(b"\x0a\x032.0")  # Document.swagger = "2.0"
    again = await http.get("/openapi/v2", headers={"Accept": PROTOBUF})
    assert again.body == proto.body

    refused = await http.get("/openapi/v2", headers={"Accept": "text/html"})
    assert refused.status == 406
    assert refused.json()["reason"] == "NotAcceptable"


async def test_matching_etag_answers_not_modified(http: HTTPClient) -> None:
    etag = (await http.get("/openapi/v2")).headers["ETag"]
    for header in (etag, f'"other", W/{etag}', "*"):
        cached = await http.get(
            "/openapi/v2", headers={"Accept": KUBECTL_ACCEPT, "If-None-Match": header}
        )
        assert cached.status == 304, header
        assert cached.body == b""
        assert cached.headers["ETag"] == etag
    stale = await http.get("/openapi/v2", headers={"If-None-Match": '"0123"'})
    assert stale.status == 200 and stale.json()["swagger"] == "2.0"


async def test_if_modified_since_without_etag(http: HTTPClient) -> None:
    modified = (await http.get("/openapi/v2")).headers["Last-Modified"]
    same = await http.get("/openapi/v2", headers={"If-Modified-Since": modified})
    assert same.status == 304
    older = formatdate(parsedate_to_datetime(modified).timestamp() - 60, usegmt=True)
    assert (await http.get("/openapi/v2", headers={"If-Modified-Since": older})).status == 200
    garbled = await http.get("/openapi/v2", headers={"If-Modified-Since": "yesterday"})
    assert garbled.status == 200


async def test_crds_change_the_document_and_its_etag(http: HTTPClient) -> None:
    first = await http.get("/openapi/v2")
    assert WIDGET not in first.json()["definitions"]
    etag = first.headers["ETag"]

    created = await http.post(CRDS, widget_crd())
    assert created.status == 201, created.body
    fresh = await http.get("/openapi/v2", headers={"If-None-Match": etag})
    assert fresh.status == 200
    assert fresh.headers["ETag"] != etag
    doc = fresh.json()
    spec = doc["definitions"][WIDGET]["properties"]["spec"]
    assert spec["properties"]["size"]["type"] == "integer"
    assert "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}" in doc["paths"]

    deleted = await http.delete(f"{CRDS}/widgets.example.com")
    assert deleted.status == 200, deleted.body

    async def widgets_gone() -> bool:
        reply = await http.get("/openapi/v2", headers={"If-None-Match": etag})
        return reply.status == 304

    await eventually(widgets_gone)
