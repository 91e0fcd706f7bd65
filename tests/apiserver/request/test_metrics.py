"""`/metrics` on the API server: kube-apiserver's request metrics, so a test can count the
requests a client makes."""

from __future__ import annotations

import asyncio

from prometheus_client.parser import text_string_to_metric_families

from kubeforge import Client as KubeClient
from kubeforge.apiserver import APIServer
from kubeforge.testing import eventually, metric_sum, metric_value
from tests.support import HTTPClient

CMS = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"


def scraped(body: bytes) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def total(server: APIServer, **labels: str) -> float:
    return metric_sum(server, "apiserver_request_total", **labels)


async def test_metrics_need_the_token_and_speak_the_text_format(http: HTTPClient) -> None:
    assert (await http.get("/metrics", auth=False)).status == 401
    reply = await http.get("/metrics")
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    names = {family.name for family in text_string_to_metric_families(reply.body.decode())}
    assert {
        "apiserver_request",
        "apiserver_request_duration_seconds",
        "apiserver_current_inflight_requests",
        "apiserver_longrunning_requests",
        "process_resident_memory_bytes",
    } <= names


async def test_requests_are_counted_with_kube_apiserver_labels(
    server: APIServer, http: HTTPClient
) -> None:
    for name in ("a", "b", "c"):
        assert (await http.post(CMS, {"metadata": {"name": name}})).status == 201
    assert (await http.post(CMS, {"metadata": {"name": "a"}})).status == 409
    await http.get(CMS)
    await http.get(f"{CMS}/a")
    await http.get("/api/v1/configmaps")
    await http.put(f"{CMS}/a", (await http.get(f"{CMS}/a")).json())
    await http.patch(f"{CMS}/a", {"data": {"k": "v"}}, "application/merge-patch+json")
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}
    await http.patch(f"{CMS}/d?fieldManager=t", applied, APPLY)
    await http.post(f"{CMS}?dryRun=All", {"metadata": {"name": "e"}})
    await http.delete(f"{CMS}/b")
    await http.delete(CMS)

    samples = scraped((await http.get("/metrics")).body)
    base = {
        "dry_run": "",
        "group": "",
        "version": "v1",
        "resource": "configmaps",
        "subresource": "",
        "component": "apiserver",
    }

    def count(verb: str, scope: str, code: str, **extra: str) -> float:
        labels = {**base, "verb": verb, "scope": scope, "code": code, **extra}
        return samples.get(("apiserver_request_total", frozenset(labels.items())), 0.0)

    assert count("POST", "resource", "201") == 3
    assert count("POST", "resource", "409") == 1
    assert count("POST", "resource", "201", dry_run="All") == 1
    assert count("LIST", "namespace", "200") == 1
    assert count("LIST", "cluster", "200") == 1
    assert count("GET", "resource", "200") == 2
    assert count("PUT", "resource", "200") == 1
    assert count("PATCH", "resource", "200") == 1
    assert count("APPLY", "resource", "201") == 1
    assert count("DELETE", "resource", "200") == 1
    assert count("DELETE", "namespace", "200") == 1
    # The histogram saw each of them too.
    assert metric_value(
        server,
        "apiserver_request_duration_seconds_count",
        verb="POST",
        dry_run="",
        resource="configmaps",
    ) == (3 + 1)
    assert total(server, resource="configmaps") == 14


async def test_watches_are_long_running_and_counted_when_they_end(
    server: APIServer, http: HTTPClient
) -> None:
    def watching() -> float:
        return metric_sum(server, "apiserver_longrunning_requests", verb="WATCH")

    watch = asyncio.ensure_future(http.get(f"{CMS}?watch=true&timeoutSeconds=1"))

    async def started() -> bool:
        return watching() == 1

    await eventually(started)
    assert total(server, verb="WATCH") == 0
    reply = await watch
    assert reply.status == 200
    assert watching() == 0
    assert total(server, verb="WATCH", scope="namespace", code="200") == 1
    assert metric_sum(server, "apiserver_request_duration_seconds_sum", verb="WATCH") >= 1


async def test_a_client_s_requests_can_be_counted(server: APIServer, api: KubeClient) -> None:
    before = total(server, resource="configmaps")
    await api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    await api.get("v1/ConfigMap", "x", namespace="default")
    assert total(server, resource="configmaps") - before == 2
    assert total(server, resource="configmaps", verb="POST", code="201") == 1
