"""Boolean query parameters read as Kubernetes reads them: anything but `0` and `false` (in any
case) is true, so `True` as kubernetes_asyncio sends it works for every option."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from kubeforge._apiserver.handlers.pods import LogRequest
from kubeforge.apiserver import APIServer
from kubeforge.testing import eventually
from tests.support import HTTPClient, connect

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


async def configmap(http: HTTPClient, name: str, owner: dict[str, Any] | None = None) -> Any:
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        om = owner["metadata"]
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": om["name"], "uid": om["uid"]}
        ]
    reply = await http.post(CMS, {"metadata": meta})
    assert reply.status == 201, reply.body
    return reply.json()


@pytest.mark.parametrize(
    ("value", "orphan"),
    [("True", True), ("1", True), ("", True), ("yes", True), ("FALSE", False), ("0", False)],
)
async def test_orphan_dependents(gc_http: HTTPClient, value: str, orphan: bool) -> None:
    owner = await configmap(gc_http, "owner")
    await configmap(gc_http, "dependent", owner)
    reply = await gc_http.delete(f"{CMS}/owner?orphanDependents={value}")
    assert reply.status == 200
    # Orphaning holds the owner with a finalizer until its dependents are released.
    assert reply.json()["metadata"].get("finalizers") == (["orphan"] if orphan else None)

    async def owner_gone() -> bool:
        return (await gc_http.get(f"{CMS}/owner")).status == 404

    await eventually(owner_gone)
    if orphan:
        dependent = await gc_http.get(f"{CMS}/dependent")
        assert dependent.status == 200
        assert "ownerReferences" not in dependent.json()["metadata"]
    else:

        async def dependent_gone() -> bool:
            return (await gc_http.get(f"{CMS}/dependent")).status == 404

        await eventually(dependent_gone)


async def watch_events(http: HTTPClient, query: str) -> list[dict[str, Any]]:
    """Every event of a one-second watch of the ConfigMaps."""
    reply = await http.get(f"{CMS}?{query}&timeoutSeconds=1")
    assert reply.status == 200, reply.body
    return [orjson.loads(line) for line in reply.body.splitlines() if line]


async def test_watch_and_bookmarks_accept_any_true_spelling(http: HTTPClient) -> None:
    await configmap(http, "seen")
    rv = (await http.get(CMS)).json()["metadata"]["resourceVersion"]
    events = await watch_events(http, "watch=True&resourceVersion=0&allowWatchBookmarks=TRUE")
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    events = await watch_events(http, f"watch=1&resourceVersion={rv}&allowWatchBookmarks=false")
    assert events == []


async def test_send_initial_events_accepts_true(http: HTTPClient) -> None:
    await configmap(http, "initial")
    events = await watch_events(
        http,
        "watch=yes&sendInitialEvents=True&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=True",
    )
    assert events[0]["type"] == "ADDED"
    assert events[1]["type"] == "BOOKMARK"
    annotations = events[1]["object"]["metadata"]["annotations"]
    assert annotations == {"k8s.io/initial-events-end": "true"}


class EchoLogs:
    """A log source that writes back the options it was asked for."""

    async def stream(self, request: LogRequest) -> AsyncIterator[bytes]:
        yield (
            f"follow={request.follow} timestamps={request.timestamps} previous={request.previous}"
        ).encode()


async def test_log_options_accept_true() -> None:
    async with APIServer(logs=EchoLogs()) as server, connect(server) as http:
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
        assert (await http.post(PODS, pod)).status == 201
        reply = await http.get(f"{PODS}/p/log?follow=True&timestamps=1&previous=Yes")
        assert reply.body == b"follow=True timestamps=True previous=True"
        reply = await http.get(f"{PODS}/p/log?follow=False&timestamps=0")
        assert reply.body == b"follow=False timestamps=False previous=False"


async def test_apply_force_accepts_any_true_spelling(http: HTTPClient) -> None:
    path = f"{CMS}/shared"
    apply = "application/apply-patch+yaml"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}}
    first = await http.patch(f"{path}?fieldManager=a", {**body, "data": {"k": "a"}}, apply)
    assert first.status == 201
    clash = await http.patch(f"{path}?fieldManager=b", {**body, "data": {"k": "b"}}, apply)
    assert clash.status == 409
    forced = await http.patch(
        f"{path}?fieldManager=b&force=Yes", {**body, "data": {"k": "b"}}, apply
    )
    assert forced.status == 200, forced.body
    assert forced.json()["data"] == {"k": "b"}
