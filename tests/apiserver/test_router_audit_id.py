"""Every answer carries an Audit-Id; a failure of the server shows no internals, only that id,
which its log names next to the request and the traceback."""

from __future__ import annotations

import logging
import re
import ssl
from typing import Any

import pytest

from kubeforge.apiserver import APIServer
from tests.support import HTTPClient

CMS = "/api/v1/namespaces/default/configmaps"
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


async def test_every_kind_of_answer_carries_a_fresh_audit_id(http: HTTPClient) -> None:
    replies = [
        await http.get("/healthz"),
        await http.get("/version"),
        await http.get(CMS),
        await http.post(CMS, {"metadata": {"name": "a"}}),
        await http.post(CMS, {"metadata": {"name": "a"}}),  # 409
        await http.get(f"{CMS}/missing"),  # 404
        await http.get(CMS, auth=False),  # 401
        await http.request("POST", CMS, raw=b"{", content_type="application/json"),  # 400
        await http.request("POST", CMS, raw=b"x" * (3 * 1024 * 1024 + 1)),  # 413
    ]
    ids = [r.headers.get("Audit-Id") for r in replies]
    assert all(i is not None and UUID4.match(i) for i in ids), ids
    assert len(set(ids)) == len(ids)


async def test_a_watch_stream_carries_its_audit_id(server: APIServer, http: HTTPClient) -> None:
    async with http.session.get(
        f"{server.url}{CMS}?watch=true&timeoutSeconds=1", headers=http.auth
    ) as r:
        assert r.status == 200
        assert UUID4.match(r.headers.get("Audit-Id", ""))


async def test_the_clients_audit_id_is_echoed(http: HTTPClient) -> None:
    reply = await http.get(CMS, headers={"Audit-ID": "my-request-7"})
    assert reply.headers.get("Audit-Id") == "my-request-7"


async def test_an_internal_error_shows_no_internals_and_is_logged_under_its_id(
    server: APIServer, http: HTTPClient, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_: Any) -> None:
        raise ssl.SSLError("secret detail /srv/private/key.pem")

    server.writes.mutators.append(broken)
    with caplog.at_level(logging.ERROR, logger="kubeforge.apiserver"):
        reply = await http.post(CMS, {"metadata": {"name": "boom"}})
    assert reply.status == 500
    audit_id = reply.headers["Audit-Id"]
    status = reply.json()
    assert status["reason"] == "InternalError"
    assert status["message"] == (
        "Internal error occurred: the server could not handle this request; its log has the "
        f"details under Audit-Id {audit_id}"
    )
    assert b"secret" not in reply.body and b"SSLError" not in reply.body
    [record] = [r for r in caplog.records if audit_id in r.getMessage()]
    assert record.getMessage() == f"POST {CMS} failed (Audit-Id {audit_id})"
    assert record.exc_info is not None and "secret detail" in str(record.exc_info[1])
    assert (await http.get(f"{CMS}/boom")).status == 404
