"""Bad input gets a clear error and never harms the server or its data."""

from __future__ import annotations

from tests.support import HTTPClient

CMS = "/api/v1/namespaces/default/configmaps"


async def test_malformed_json_is_400(http: HTTPClient) -> None:
    reply = await http.request(
        "POST", CMS, raw=b'{"metadata": {"name": "x"', content_type="application/json"
    )
    assert reply.status == 400
    body = reply.json()
    assert body["reason"] == "BadRequest" and "not valid JSON" in body["message"]


async def test_malformed_yaml_is_400(http: HTTPClient) -> None:
    reply = await http.request(
        "POST", CMS, raw=b"metadata: [unclosed", content_type="application/yaml"
    )
    assert reply.status == 400
    assert "not valid YAML" in reply.json()["message"]


async def test_yaml_bodies_are_accepted(http: HTTPClient) -> None:
    reply = await http.request(
        "POST", CMS, raw=b"metadata:\n  name: yml\ndata:\n  a: b\n", content_type="application/yaml"
    )
    assert reply.status == 201
    assert reply.json()["data"] == {"a": "b"}


async def test_non_object_body_is_400(http: HTTPClient) -> None:
    assert (await http.post(CMS, [1, 2])).status == 400
    assert (
        await http.request("POST", CMS, raw=b"   ", content_type="application/json")
    ).status == 400


async def test_unknown_resource_is_404(http: HTTPClient) -> None:
    assert (await http.get("/api/v1/namespaces/default/widgets")).status == 404
    assert (await http.post("/apis/nope.io/v1/namespaces/default/things", {})).status == 404


async def test_oversized_body_is_413(http: HTTPClient) -> None:
    big = b'{"metadata":{"name":"big"},"data":{"k":"' + b"x" * (3 * 1024 * 1024 + 10) + b'"}}'
    reply = await http.request("POST", CMS, raw=big)
    assert reply.status == 413
    assert reply.json()["reason"] == "RequestEntityTooLarge"


async def test_wrong_method_is_405(http: HTTPClient) -> None:
    assert (await http.post("/api/v1/namespaces/default/pods/x/log", {})).status in (404, 405)
    assert (
        await http.request("POST", "/api/v1/configmaps", {"metadata": {"name": "a"}})
    ).status == 405


async def test_server_keeps_data_after_bad_requests(http: HTTPClient) -> None:
    await http.post(CMS, {"metadata": {"name": "keep"}, "data": {"a": "1"}})
    await http.request("PUT", f"{CMS}/keep", raw=b"{not json")
    await http.request(
        "PATCH", f"{CMS}/keep", raw=b"[{]", content_type="application/json-patch+json"
    )
    await http.request("POST", CMS, raw=b"\xff\xfe", content_type="application/json")
    got = await http.get(f"{CMS}/keep")
    assert got.status == 200 and got.json()["data"] == {"a": "1"}


async def test_warnings_quoting_any_text_still_answer(http: HTTPClient) -> None:
    # Unknown fields are named in Warning headers: UTF-8, and no text ends the header.
    body = {"metadata": {"name": "warned"}, "💥": 1, "a\r\nSet-Cookie: x": 2}
    reply = await http.post(CMS, body)
    assert reply.status == 201
    warnings = reply.headers.getall("Warning")
    assert '299 - "unknown field \\"💥\\""' in warnings
    assert '299 - "unknown field \\"a  Set-Cookie: x\\""' in warnings
    assert "Set-Cookie" not in reply.headers
    assert (await http.get(f"{CMS}/warned")).status == 200


async def test_an_empty_dry_run_is_no_supported_value(http: HTTPClient) -> None:
    reply = await http.post(f"{CMS}?dryRun=", {"metadata": {"name": "dry"}})
    assert reply.status == 422
    assert (await http.get(f"{CMS}/dry")).status == 404
