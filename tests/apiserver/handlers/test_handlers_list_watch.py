"""Lists (selectors, pagination) and watches (events, resourceVersion, bookmarks, 410)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kubeforge.apiserver import APIServer
from kubeforge.testing import eventually
from tests.support import HTTPClient

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


def cm(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": {}}


def pod(name: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name}, "spec": spec}


async def names(http: HTTPClient, path: str) -> list[str]:
    reply = await http.get(path)
    assert reply.status == 200, reply.body
    return [i["metadata"]["name"] for i in reply.json()["items"]]


async def test_label_selectors(http: HTTPClient) -> None:
    await http.post(CMS, cm("a", {"app": "web", "tier": "front"}))
    await http.post(CMS, cm("b", {"app": "web", "tier": "back"}))
    await http.post(CMS, cm("c", {"app": "db"}))
    assert await names(http, f"{CMS}?labelSelector=app%3Dweb") == ["a", "b"]
    assert await names(http, f"{CMS}?labelSelector=tier+in+(back,x)") == ["b"]
    assert await names(http, f"{CMS}?labelSelector=!tier") == ["c"]
    assert await names(http, f"{CMS}?labelSelector=app!%3Dweb,tier+notin+(front)") == ["c"]
    bad = await http.get(f"{CMS}?labelSelector=a%3D%3D%3D")
    assert bad.status == 400


async def test_field_selectors(http: HTTPClient) -> None:
    await http.post(PODS, pod("p1", "node-a"))
    await http.post(PODS, pod("p2"))
    assert await names(http, f"{PODS}?fieldSelector=spec.nodeName%3Dnode-a") == ["p1"]
    assert await names(http, f"{PODS}?fieldSelector=status.phase%3DPending") == ["p1", "p2"]
    assert await names(http, f"{PODS}?fieldSelector=metadata.name%3Dp2") == ["p2"]
    assert await names(http, "/api/v1/pods?fieldSelector=metadata.namespace%3Ddefault") == [
        "p1",
        "p2",
    ]
    unknown = await http.get(f"{CMS}?fieldSelector=data.x%3Dy")
    assert unknown.status == 400
    assert '"data.x" is not a known field selector' in unknown.json()["message"]


async def test_pagination_is_a_consistent_snapshot(http: HTTPClient) -> None:
    for i in range(7):
        await http.post(CMS, cm(f"o{i}"))
    first = (await http.get(f"{CMS}?limit=3")).json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["o0", "o1", "o2"]
    assert first["metadata"]["remainingItemCount"] == 4
    token = first["metadata"]["continue"]
    # Changes after the first page do not show up in later pages of the same list.
    await http.post(CMS, cm("o3a"))
    await http.delete(f"{CMS}/o5")
    second = (await http.get(f"{CMS}?limit=3&continue={token}")).json()
    assert [i["metadata"]["name"] for i in second["items"]] == ["o3", "o4", "o5"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    third = (await http.get(f"{CMS}?limit=3&continue={second['metadata']['continue']}")).json()
    assert [i["metadata"]["name"] for i in third["items"]] == ["o6"]
    assert "continue" not in third["metadata"]


async def test_expired_continue_token_is_410(server: APIServer, http: HTTPClient) -> None:
    for i in range(3):
        await http.post(CMS, cm(f"o{i}"))
    token = (await http.get(f"{CMS}?limit=1")).json()["metadata"]["continue"]
    await http.post(CMS, cm("later"))
    server.store.compact()
    reply = await http.get(f"{CMS}?limit=1&continue={token}")
    assert reply.status == 410
    assert reply.json()["reason"] == "Expired"
    assert (await http.get(f"{CMS}?limit=1&continue=garbage!")).status == 400


async def test_watch_streams_changes_from_a_resource_version(http: HTTPClient) -> None:
    listed = (await http.get(CMS)).json()
    rv = listed["metadata"]["resourceVersion"]

    async def act() -> None:
        await asyncio.sleep(0)
        created = (await http.post(CMS, cm("w"))).json()
        await http.put(f"{CMS}/w", dict(created, data={"x": "1"}))
        await http.delete(f"{CMS}/w")

    task = asyncio.create_task(act())
    events = await http.watch_lines(
        f"{CMS}?watch=true&resourceVersion={rv}", lambda ev: len(ev) >= 3
    )
    await task
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs)
    assert events[1]["object"]["data"] == {"x": "1"}


async def test_watch_without_resource_version_sends_current_state(http: HTTPClient) -> None:
    await http.post(CMS, cm("a"))
    await http.post(CMS, cm("b"))
    events = await http.watch_lines(f"{CMS}?watch=1", lambda ev: len(ev) >= 2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]


async def test_watch_with_selector_sees_objects_enter_and_leave(http: HTTPClient) -> None:
    created = (await http.post(CMS, cm("x", {"app": "a"}))).json()
    rv = created["metadata"]["resourceVersion"]

    async def act() -> None:
        relabel = {"metadata": {"labels": {"app": "b"}}}
        await http.patch(f"{CMS}/x", relabel, "application/merge-patch+json")
        back = {"metadata": {"labels": {"app": "a"}}}
        await http.patch(f"{CMS}/x", back, "application/merge-patch+json")

    task = asyncio.create_task(act())
    events = await http.watch_lines(
        f"{CMS}?watch=true&labelSelector=app%3Da&resourceVersion={rv}", lambda ev: len(ev) >= 2
    )
    await task
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]


async def test_watch_from_a_compacted_version_gets_a_410_error_event(
    server: APIServer, http: HTTPClient
) -> None:
    await http.post(CMS, cm("a"))
    await http.post(CMS, cm("b"))
    server.store.compact()
    events = await http.watch_lines(f"{CMS}?watch=true&resourceVersion=1", lambda ev: True)
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith("too old resource version: 1 (")


async def test_watch_timeout_ends_the_stream_with_a_bookmark(http: HTTPClient) -> None:
    await http.post(CMS, cm("a"))
    rv = (await http.get(CMS)).json()["metadata"]["resourceVersion"]
    events = await http.watch_lines(
        f"{CMS}?watch=true&resourceVersion={rv}&timeoutSeconds=1&allowWatchBookmarks=true",
        lambda ev: False if not ev else ev[-1]["type"] == "BOOKMARK",
        timeout=5,
    )
    bookmark = events[-1]["object"]
    assert bookmark["kind"] == "ConfigMap" and bookmark["apiVersion"] == "v1"
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(rv)


async def test_periodic_bookmarks(http: HTTPClient) -> None:
    http.server.watches.bookmark_interval = 0.05
    rv = (await http.get(CMS)).json()["metadata"]["resourceVersion"]
    events = await http.watch_lines(
        f"{CMS}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true",
        lambda ev: len(ev) >= 2,
    )
    assert [e["type"] for e in events] == ["BOOKMARK", "BOOKMARK"]


async def test_watch_list_ends_initial_events_with_an_annotated_bookmark(http: HTTPClient) -> None:
    await http.post(CMS, cm("a"))
    events = await http.watch_lines(
        f"{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=true",
        lambda ev: any(e["type"] == "BOOKMARK" for e in ev),
    )
    assert events[0]["type"] == "ADDED"
    assert events[-1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_watch_by_name_field_selector(http: HTTPClient) -> None:
    rv = (await http.get(CMS)).json()["metadata"]["resourceVersion"]

    async def act() -> None:
        await http.post(CMS, cm("other"))
        await http.post(CMS, cm("mine"))

    task = asyncio.create_task(act())
    events = await http.watch_lines(
        f"{CMS}?watch=true&fieldSelector=metadata.name%3Dmine&resourceVersion={rv}",
        lambda ev: len(ev) >= 1,
    )
    await task
    assert [e["object"]["metadata"]["name"] for e in events] == ["mine"]


async def test_resource_version_rules_for_lists(http: HTTPClient) -> None:
    await http.post(CMS, cm("a"))
    assert (await http.get(f"{CMS}?resourceVersion=abc")).status == 400
    assert (await http.get(f"{CMS}?resourceVersionMatch=Exact")).status == 400
    assert (await http.get(f"{CMS}?resourceVersion=0&resourceVersionMatch=Exact")).status == 400
    assert (await http.get(f"{CMS}?resourceVersion=999999")).status == 504
    ok = await http.get(f"{CMS}?resourceVersion=0")
    assert ok.status == 200


async def test_a_watch_client_that_disconnects_is_cleaned_up_quietly(
    server: APIServer, http: HTTPClient, caplog: pytest.LogCaptureFixture
) -> None:
    rv = (await http.get(CMS)).json()["metadata"]["resourceVersion"]
    response = await http.session.get(
        f"{server.url}{CMS}?watch=true&resourceVersion={rv}", headers=http.auth
    )
    assert response.status == 200
    assert len(server.watches.active) == 1
    response.close()  # drop the connection mid-stream
    for i in range(3):  # writes to the dead stream must not raise into the log
        await http.post(CMS, cm(f"after-{i}"))

    async def released() -> bool:
        return not server.watches.active

    await eventually(released)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


async def test_events_are_selectable_as_kubectl_describe_asks(http: HTTPClient) -> None:
    regarding = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "p1",
        "namespace": "default",
        "uid": "u-1",
    }
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p1.1"},
        "eventTime": "2026-11-21T05:00:00.000000Z",
        "reason": "Started",
        "note": "container started",
        "type": "Normal",
        "action": "Start",
        "reportingController": "kubelet",
        "reportingInstance": "node-1",
        "regarding": regarding,
    }
    created = await http.post("/apis/events.k8s.io/v1/namespaces/default/events", event)
    assert created.status == 201, created.body
    selector = (
        "involvedObject.name%3Dp1,involvedObject.namespace%3Ddefault,involvedObject.uid%3Du-1"
    )
    core = (await http.get(f"/api/v1/namespaces/default/events?fieldSelector={selector}")).json()
    assert [(e["reason"], e["message"]) for e in core["items"]] == [
        ("Started", "container started")
    ]
    new_api = await http.get(
        "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dp1"
    )
    assert [e["note"] for e in new_api.json()["items"]] == ["container started"]
    none = await http.get(
        "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dp2"
    )
    assert none.json()["items"] == []
