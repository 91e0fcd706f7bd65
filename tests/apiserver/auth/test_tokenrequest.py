"""TokenRequest bodies are decoded and validated as kube-apiserver does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import HTTPClient

TOKEN = "/api/v1/namespaces/default/serviceaccounts/robot/token"


async def request_token(http: HTTPClient, spec: Any, **meta: Any) -> Any:
    created = await http.post(
        "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "robot"}}
    )
    assert created.status in (201, 409)
    body: dict[str, Any] = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}
    body["spec"] = spec
    if meta:
        body["metadata"] = meta
    # The standard library's encoder writes integers of any size, as a client in Go would.
    return await http.request("POST", TOKEN, raw=json.dumps(body).encode())


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("abc", "string"),
        (1e30, "number 1e+30"),
        (600.5, "number 600.5"),
        (True, "bool"),
        ([600], "array"),
        (2**70, "number 1.1805916207174113e+21"),
    ],
)
async def test_an_expiration_of_the_wrong_type_is_a_400(
    http: HTTPClient, value: Any, shown: str
) -> None:
    reply = await request_token(http, {"expirationSeconds": value})
    assert reply.status == 400, reply.body
    assert reply.json()["message"] == (
        'TokenRequest in version "v1" cannot be handled as a TokenRequest: json: cannot '
        f"unmarshal {shown} into Go struct field TokenRequestSpec.spec.expirationSeconds of "
        "type int64"
    )


@pytest.mark.parametrize(
    ("seconds", "why"),
    [
        (599, "may not specify a duration less than 10 minutes"),
        (0, "may not specify a duration less than 10 minutes"),
        (-5, "may not specify a duration less than 10 minutes"),
        (2**32 + 1, "may not specify a duration larger than 2^32 seconds"),
    ],
)
async def test_an_expiration_out_of_range_is_a_422(
    http: HTTPClient, seconds: int, why: str
) -> None:
    reply = await request_token(http, {"expirationSeconds": seconds})
    assert reply.status == 422, reply.body
    status = reply.json()
    assert status["message"] == (
        f'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: '
        f"Invalid value: {seconds}: {why}"
    )
    assert status["details"]["causes"][0]["field"] == "spec.expirationSeconds"


@pytest.mark.parametrize(("seconds", "issued"), [(None, 3600), (600, 600), (2**32, 2**32)])
async def test_valid_expirations_are_issued(http: HTTPClient, seconds: Any, issued: int) -> None:
    spec = {} if seconds is None else {"expirationSeconds": seconds}
    reply = await request_token(http, spec)
    assert reply.status == 201, reply.body
    assert reply.json()["spec"]["expirationSeconds"] == issued
    assert reply.json()["status"]["token"]


async def test_the_body_names_the_account_of_the_url_or_none(http: HTTPClient) -> None:
    reply = await request_token(http, {}, name="someone-else")
    assert reply.status == 422, reply.body
    assert reply.json()["message"] == (
        'TokenRequest.authentication.k8s.io "robot" is invalid: metadata.name: Invalid value: '
        '"someone-else": must match the service account name if specified'
    )
    reply = await request_token(http, {}, labels="oops")
    assert reply.status == 400, reply.body
    missing = await http.post(
        "/api/v1/namespaces/default/serviceaccounts/nobody/token", {"spec": {}}
    )
    assert missing.status == 404


def pod(name: str, account: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    if account is not None:
        spec["serviceAccountName"] = account
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


async def test_a_token_binds_only_to_a_pod_running_as_its_account(http: HTTPClient) -> None:
    # As kube-apiserver's TokenREST: a token for one account bound to another's pod would
    # carry that workload's pod identity.
    pods = "/api/v1/namespaces/default/pods"
    for name, account in (("theirs", "someone-else"), ("unnamed", None), ("ours", "robot")):
        assert (await http.post(pods, pod(name, account))).status == 201
    for name in ("theirs", "unnamed"):
        ref = {"kind": "Pod", "apiVersion": "v1", "name": name}
        reply = await request_token(http, {"boundObjectRef": ref})
        assert reply.status == 400, reply.body
        assert reply.json()["reason"] == "BadRequest"
        assert reply.json()["message"] == (
            'cannot bind token for serviceaccount "robot" to pod running with different '
            "serviceaccount name."
        )
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "ours"}
    reply = await request_token(http, {"boundObjectRef": ref})
    assert reply.status == 201, reply.body
    review = await http.post(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": reply.json()["status"]["token"]},
        },
    )
    extra = review.json()["status"]["user"]["extra"]
    assert extra["authentication.kubernetes.io/pod-name"] == ["ours"]

    # Only core-group Pods, Secrets and Nodes can hold a token.
    for api_version, kind, shown in (
        ("apps/v1", "Pod", "apps/v1, Kind=Pod"),
        ("v1", "ConfigMap", "/v1, Kind=ConfigMap"),
    ):
        ref = {"kind": kind, "apiVersion": api_version, "name": "ours"}
        reply = await request_token(http, {"boundObjectRef": ref})
        assert reply.status == 400, reply.body
        assert reply.json()["message"] == f"cannot bind token to object of type {shown}"
