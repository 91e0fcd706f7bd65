"""Authentication, health, version and discovery documents."""

from __future__ import annotations

import pytest

from tests.support import HTTPClient


async def test_requests_without_the_token_are_unauthorized(http: HTTPClient) -> None:
    reply = await http.get("/api/v1/namespaces", auth=False)
    assert reply.status == 401
    assert reply.json()["reason"] == "Unauthorized"
    wrong = await http.get(
        "/api/v1/namespaces", headers={"Authorization": "Bearer nope"}, auth=False
    )
    assert wrong.status == 401
    assert (await http.get("/version", auth=False)).status == 401


@pytest.mark.parametrize(
    ("header", "status"),
    [
        ("bearer {token}", 200),
        ("BEARER {token}", 200),
        ("bEaReR {token}", 200),
        ("  Bearer {token}  ", 200),
        # One space separates scheme and token; what follows a second space is ignored.
        ("Bearer {token} trailing", 200),
        ("Bearer  {token}", 401),
        ("Bearer", 401),
        ("Basic {token}", 401),
        ("Bearer{token}", 401),
    ],
)
async def test_the_bearer_scheme_is_case_insensitive(
    http: HTTPClient, header: str, status: int
) -> None:
    value = header.format(token=http.server.token)
    reply = await http.get("/api/v1/namespaces", headers={"Authorization": value}, auth=False)
    assert reply.status == status


async def test_health_probes(http: HTTPClient) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        reply = await http.get(path, auth=False)
        assert reply.status == 200
        assert reply.body == b"ok"
    verbose = await http.get("/readyz?verbose", auth=False)
    assert b"readyz check passed" in verbose.body


async def test_version_defaults_to_1_33(http: HTTPClient) -> None:
    body = (await http.get("/version")).json()
    assert (body["major"], body["minor"], body["gitVersion"]) == ("1", "33", "v1.33.0")


async def test_legacy_discovery_documents(http: HTTPClient) -> None:
    api = (await http.get("/api")).json()
    assert api["kind"] == "APIVersions" and api["versions"] == ["v1"]
    groups = (await http.get("/apis")).json()
    names = [g["name"] for g in groups["groups"]]
    for group in (
        "apps",
        "batch",
        "coordination.k8s.io",
        "events.k8s.io",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
        "admissionregistration.k8s.io",
    ):
        assert group in names
    apps = (await http.get("/apis/apps")).json()
    assert apps["kind"] == "APIGroup"
    assert apps["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}

    core = (await http.get("/api/v1")).json()
    by_name = {r["name"]: r for r in core["resources"]}
    pods = by_name["pods"]
    assert pods["singularName"] == "pod" and pods["kind"] == "Pod" and pods["namespaced"]
    assert pods["shortNames"] == ["po"] and pods["categories"] == ["all"]
    assert pods["verbs"] == sorted(
        ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    )
    assert by_name["pods/log"]["verbs"] == ["get"]
    assert by_name["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert not by_name["namespaces"]["namespaced"]
    for name in ("services", "configmaps", "secrets", "serviceaccounts", "events", "endpoints"):
        assert name in by_name

    deployments = {r["name"]: r for r in (await http.get("/apis/apps/v1")).json()["resources"]}
    scale = deployments["deployments/scale"]
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    assert deployments["deployments"]["shortNames"] == ["deploy"]
    for name in (
        "replicasets",
        "statefulsets",
        "daemonsets",
        "daemonsets/status",
        "statefulsets/scale",
    ):
        assert name in deployments

    for path, plural in [
        ("/apis/batch/v1", "cronjobs"),
        ("/apis/coordination.k8s.io/v1", "leases"),
        ("/apis/events.k8s.io/v1", "events"),
        ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings"),
        ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions"),
        ("/apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations"),
    ]:
        doc = (await http.get(path)).json()
        assert plural in [r["name"] for r in doc["resources"]], path


async def test_aggregated_discovery_when_asked_for(http: HTTPClient) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    reply = await http.get("/apis", headers={"Accept": accept})
    assert reply.headers["Content-Type"] == (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )
    doc = reply.json()
    assert doc["kind"] == "APIGroupDiscoveryList"
    apps = next(i for i in doc["items"] if i["metadata"]["name"] == "apps")
    deploy = next(r for r in apps["versions"][0]["resources"] if r["resource"] == "deployments")
    assert deploy["scope"] == "Namespaced"
    assert {s["subresource"] for s in deploy["subresources"]} == {"scale", "status"}
    legacy = (await http.get("/api", headers={"Accept": accept})).json()
    assert [i["metadata"]["name"] for i in legacy["items"]] == [""]


async def test_unknown_paths_are_404_status(http: HTTPClient) -> None:
    for path in (
        "/apis/nope.example.com/v1",
        "/api/v1/widgets",
        "/apis/apps/v9/deployments",
        "/nothing/here",
    ):
        reply = await http.get(path)
        assert reply.status == 404, path
        body = reply.json()
        assert body["kind"] == "Status" and body["reason"] == "NotFound"
