"""The async client against the embedded API server over HTTPS."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from kubeforge import (
    AlreadyExists,
    Client,
    Conflict,
    Invalid,
    NotFound,
    ignore_not_found,
    retry_on_conflict,
)
from kubeforge._api.meta import GroupVersionKind, ObjectMeta, ResourceInfo
from kubeforge._api.model import Model
from kubeforge._api.resource import Resource
from kubeforge._client.client import Call
from kubeforge.apiserver import APIServer
from kubeforge.client import Gone, NoKindMatch
from tests.support.crds import widget, widget_crd

CM = "v1/ConfigMap"
DEPLOY = "apps/v1/Deployment"
WIDGET = "example.com/v1/Widget"


class WidgetSpec(Model):
    size: int
    color: str | None = None
    replicas: int | None = None


class WidgetStatus(Model):
    phase: str | None = None
    replicas: int | None = None


class Widget(Resource[WidgetSpec, WidgetStatus]):
    __kubeforge__ = ResourceInfo(GroupVersionKind("example.com", "v1", "Widget"), "widgets", True)


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]},
            },
        },
    }


async def install_widgets(api: Client) -> None:
    await api.create(widget_crd())
    await api.wait_established(["widgets.example.com"])


async def test_crud_with_dicts_and_errors(api: Client) -> None:
    created = await api.create(cm("a", k="v"))
    assert created["metadata"]["namespace"] == "default"
    assert (await api.get(CM, "a"))["data"] == {"k": "v"}
    with pytest.raises(AlreadyExists):
        await api.create(cm("a"))
    stale = copy.deepcopy(created)
    created["data"] = {"k": "w"}
    updated = await api.update(created)
    # The object given is the object as stored now, in place (decision 0018).
    assert updated is created and updated["data"] == {"k": "w"}
    assert created["metadata"]["resourceVersion"] != stale["metadata"]["resourceVersion"]
    with pytest.raises(Conflict) as conflict:
        await api.update(stale)  # stale resourceVersion
    assert conflict.value.code == 409 and conflict.value.reason == "Conflict"
    assert str(conflict.value).startswith("update ConfigMap default/a: 409 Conflict: ")
    with pytest.raises(Invalid) as invalid:
        await api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad!"}})
    assert invalid.value.causes[0]["field"] == "metadata.name"
    await api.delete(CM, "a")
    with pytest.raises(NotFound):
        await api.get(CM, "a")
    assert await ignore_not_found(api.get(CM, "a")) is None


async def test_list_is_paginated(api: Client) -> None:
    for i in range(25):
        await api.create(
            {**cm(f"c{i:02}"), "metadata": {"name": f"c{i:02}", "labels": {"n": str(i % 2)}}}
        )
    everything = await api.list(CM, page_size=10)
    assert [o["metadata"]["name"] for o in everything.items] == [f"c{i:02}" for i in range(25)]
    assert all(o["kind"] == "ConfigMap" for o in everything.items)
    pages = [len(p.items) async for p in api.list_pages(CM, page_size=10)]
    assert pages == [10, 10, 5]
    odd = await api.list(CM, label_selector="n=1")
    assert len(odd) == 12
    default_ns = await api.list("v1/Namespace")
    assert "kube-system" in [n["metadata"]["name"] for n in default_ns]


async def test_patch_types_and_server_side_apply(api: Client) -> None:
    await api.create(deployment("web"))
    merged = await api.patch(DEPLOY, "web", {"spec": {"replicas": 3}})
    assert merged["spec"]["replicas"] == 3
    jsonp = await api.patch(
        DEPLOY, "web", [{"op": "replace", "path": "/spec/replicas", "value": 4}], patch_type="json"
    )
    assert jsonp["spec"]["replicas"] == 4
    with pytest.raises(Invalid):
        await api.patch(
            DEPLOY,
            "web",
            [{"op": "test", "path": "/spec/replicas", "value": 99}],
            patch_type="json",
        )
    smp = await api.patch(
        DEPLOY,
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}},
        patch_type="strategic",
    )
    assert {c["name"] for c in smp["spec"]["template"]["spec"]["containers"]} == {"main", "side"}

    intent = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa"},
        "data": {"a": "1"},
    }
    applied = await api.apply(intent, field_manager="one")
    assert applied["data"] == {"a": "1"}
    with pytest.raises(Conflict):
        await api.apply({**intent, "data": {"a": "2"}}, field_manager="two")
    forced = await api.apply({**intent, "data": {"a": "2"}}, field_manager="two", force=True)
    assert forced["data"] == {"a": "2"}


async def test_delete_options_and_delete_all_of(api: Client) -> None:
    created = await api.create(cm("x"))
    with pytest.raises(Conflict):
        await api.delete(CM, "x", preconditions={"uid": "someone-else"})
    held = await api.delete(CM, "x", propagation_policy="Orphan")
    assert held["metadata"]["finalizers"] == ["orphan"]
    await api.patch(CM, "x", {"metadata": {"finalizers": None}})
    with pytest.raises(NotFound):
        await api.get(CM, "x")
    assert created["metadata"]["uid"]
    for name, app in [("a", "one"), ("b", "one"), ("c", "two")]:
        await api.create({**cm(name), "metadata": {"name": name, "labels": {"app": app}}})
    await api.delete_all_of(CM, label_selector="app=one")
    assert [o["metadata"]["name"] for o in await api.list(CM)] == ["c"]


async def test_status_scale_and_dry_run(api: Client) -> None:
    await api.create(deployment("web"))
    status = await api.patch_status(DEPLOY, "web", {"status": {"replicas": 1, "readyReplicas": 1}})
    assert status["status"]["readyReplicas"] == 1
    obj = await api.get(DEPLOY, "web")
    obj["status"]["readyReplicas"] = 0
    again = await api.update_status(obj)
    assert again["status"]["readyReplicas"] == 0
    scale = await api.scale(DEPLOY, "web", 5)
    assert scale["spec"]["replicas"] == 5
    assert (await api.get_scale(DEPLOY, "web"))["spec"]["replicas"] == 5
    dry = await api.create(cm("ghost"), dry_run=True)
    assert dry["metadata"]["name"] == "ghost"
    with pytest.raises(NotFound):
        await api.get(CM, "ghost")


async def test_typed_objects_round_trip(api: Client) -> None:
    await install_widgets(api)
    created = await api.create(Widget(metadata=ObjectMeta(name="w1"), spec=WidgetSpec(size=3)))
    assert isinstance(created, Widget)
    assert created.spec.color == "red"  # defaulted by the server, read back typed
    assert created.metadata.uid and created.metadata.generation == 1
    got = await api.get(Widget, "w1")
    got.spec.size = 4
    updated = await api.update(got)
    assert updated.spec.size == 4 and updated.metadata.generation == 2
    patched = await api.patch_status(Widget, "w1", {"status": {"phase": "Ready"}})
    assert isinstance(patched, Widget) and patched.status is not None
    assert patched.status.phase == "Ready"
    listed = await api.list(Widget)
    assert [w.metadata.name for w in listed] == ["w1"]
    # The same kind as plain dicts, for programs without the class.
    as_dict = await api.get(WIDGET, "w1")
    assert as_dict["spec"] == {"size": 4, "color": "red"}


async def test_unknown_fields_survive_a_typed_round_trip(api: Client) -> None:
    await install_widgets(api)
    await api.create(widget("w", extra={"kept": True}))
    typed = await api.get(Widget, "w")
    typed.spec.size = 9
    await api.update(typed)
    assert (await api.get(WIDGET, "w"))["spec"]["extra"] == {"kept": True}


async def test_discovery_refreshes_on_a_miss(api: Client) -> None:
    with pytest.raises(NoKindMatch):
        await api.get(WIDGET, "nothing")
    await install_widgets(api)
    await api.create(widget("fresh"))
    assert (await api.get(WIDGET, "fresh"))["metadata"]["name"] == "fresh"


async def test_watch_decodes_events_and_bookmarks(api: Client, server: APIServer) -> None:
    rv = (await api.list(CM)).resource_version
    server.watches.bookmark_interval = 0.05
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        async for event in api.watch(CM, resource_version=rv, timeout_seconds=5):
            name = event.object.get("metadata", {}).get("name", "")
            seen.append((event.type, name))
            if event.type == "DELETED":
                return

    task = asyncio.create_task(consume())
    await api.create(cm("w"))
    await api.patch(CM, "w", {"data": {"k": "v"}})
    await api.delete(CM, "w")
    await asyncio.wait_for(task, 10)
    changes = [s for s in seen if s[0] != "BOOKMARK"]
    assert changes == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


async def test_watch_of_an_expired_version_raises_gone(api: Client, server: APIServer) -> None:
    await api.create(cm("a"))
    old = (await api.list(CM)).resource_version
    await api.create(cm("b"))
    server.store.compact()
    with pytest.raises(Gone):
        async for _ in api.watch(CM, resource_version=old):
            pass


async def test_watch_ends_at_timeout_seconds(api: Client) -> None:
    rv = (await api.list(CM)).resource_version
    events = [e async for e in api.watch(CM, resource_version=rv, timeout_seconds=1)]
    assert all(e.type == "BOOKMARK" for e in events)


async def test_retry_on_conflict_rereads_until_it_wins(api: Client) -> None:
    await api.create(cm("counter", n="0"))
    attempts = 0

    async def bump() -> dict[str, Any]:
        nonlocal attempts
        attempts += 1
        current = await api.get(CM, "counter")
        if attempts == 1:
            # Someone else writes between our read and our write.
            await api.patch(CM, "counter", {"data": {"other": "x"}})
        current["data"]["n"] = str(int(current["data"]["n"]) + 1)
        result: dict[str, Any] = await api.update(current)
        return result

    final = await retry_on_conflict(bump)
    assert attempts == 2
    assert final["data"] == {"n": "1", "other": "x"}


async def test_writes_make_the_object_given_the_object_as_stored(api: Client) -> None:
    await install_widgets(api)
    mine = Widget(metadata=ObjectMeta(name="w"), spec=WidgetSpec(size=1))
    created = await api.create(mine)
    assert created is mine and mine.metadata.uid and mine.metadata.resource_version
    # The finalizer loop that used to 409: two writes of the same object in a row.
    mine.metadata.finalizers = ["example.com/cleanup"]
    await api.update(mine)
    mine.metadata.finalizers = None
    await api.update(mine)  # the resourceVersion is the one the first update returned
    mine.status = WidgetStatus(phase="Ready")
    assert await api.update_status(mine) is mine
    assert mine.status is not None and mine.status.phase == "Ready"
    assert (await api.get(Widget, "w")).metadata.resource_version == (
        mine.metadata.resource_version
    )

    # apply returns the object as stored and leaves the configuration it was given alone.
    intent = Widget(metadata=ObjectMeta(name="applied"), spec=WidgetSpec(size=2))
    applied = await api.apply(intent, field_manager="tests")
    assert applied is not intent and applied.metadata.uid and intent.metadata.uid is None
    # patch returns the object as stored.
    patched = await api.patch(Widget, "w", {"spec": {"size": 3}})
    assert patched.spec.size == 3 and mine.spec.size == 1

    # A failed write leaves the object untouched.
    stale = Widget(
        metadata=ObjectMeta(name="w", resource_version=mine.metadata.resource_version),
        spec=WidgetSpec(size=9),
    )
    with pytest.raises(Conflict) as conflict:
        await api.update(stale)
    assert stale.spec.size == 9 and stale.metadata.uid is None
    assert str(conflict.value).startswith("update Widget default/w: 409 Conflict")
    with pytest.raises(NotFound) as missing:
        await api.get(Widget, "nope")
    assert str(missing.value).startswith("get Widget default/nope: 404 NotFound")


async def test_a_call_observer_reads_the_answer_the_caller_is_handed(api: Client) -> None:
    """Call observers are told each request once answered, before the caller; what they read
    of the answer is the caller's own decoding of it (decoded once for both)."""
    told: list[tuple[Call, Any]] = []

    def observe(call: Call) -> None:
        told.append((call, call.decoded()))

    api.add_call_observer(observe)
    try:
        created = await api.create(cm("told", a="1"))
        with pytest.raises(AlreadyExists):
            await api.create(cm("told"))
    finally:
        api.remove_call_observer(observe)
    (answered, answer), (refused, nothing) = told
    assert (answered.call, answered.name, answered.code) == ("create", "told", 201)
    assert answer["metadata"] is created["metadata"]
    assert refused.code == 409 and isinstance(refused.error, AlreadyExists) and nothing is None


async def test_object_lists_are_lists(api: Client) -> None:
    await api.create(cm("l1"))
    found = await api.list(CM, matching_fields={"metadata.name": "l1"})
    assert isinstance(found, list) and found == found.items and len(found) == 1
    assert found[0]["metadata"]["name"] == "l1" and found.resource_version
