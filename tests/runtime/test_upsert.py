"""create_or_update, create_or_patch and the finalizer writers against the embedded server."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeforge._api.meta import GroupVersionKind, ObjectMeta, ResourceInfo
from kubeforge._api.model import Model
from kubeforge._api.resource import Resource
from kubeforge._client.client import Client
from kubeforge._client.config import load_kubeconfig
from kubeforge._client.errors import Conflict, NotFound
from kubeforge._runtime.finalizers import ensure_finalizer, release_finalizer
from kubeforge._runtime.upsert import (
    OperationResult,
    create_or_patch,
    create_or_update,
    merge_patch,
)
from kubeforge.apiserver import APIServer
from tests.support.crds import widget_crd

CM = "v1/ConfigMap"


class WidgetSpec(Model):
    size: int
    color: str | None = None


class WidgetStatus(Model):
    phase: str | None = None


class Widget(Resource[WidgetSpec, WidgetStatus]):
    __kubeforge__ = ResourceInfo(GroupVersionKind("example.com", "v1", "Widget"), "widgets", True)


@pytest.fixture
async def api(server: APIServer, tmp_path: Path) -> AsyncIterator[Client]:
    async with Client(load_kubeconfig(server.write_kubeconfig(tmp_path / "kc"))) as kube:
        yield kube


@pytest.fixture
async def widgets(api: Client) -> None:
    await api.create(widget_crd())
    await api.wait_established(["widgets.example.com"])


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def test_create_or_update_with_dicts(api: Client) -> None:
    calls: list[str] = []

    def want(value: str) -> Any:
        def mutate(obj: dict[str, Any]) -> None:
            calls.append(obj.get("metadata", {}).get("resourceVersion", "new"))
            obj["data"] = {"key": value}

        return mutate

    created, result = await create_or_update(api, cm("settings"), want("one"))
    assert result is OperationResult.CREATED
    assert created["data"] == {"key": "one"}
    assert calls == ["new"]

    same, result = await create_or_update(api, cm("settings"), want("one"))
    assert result is OperationResult.UNCHANGED
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    # The mutate function saw the live object, not the bare one passed in.
    assert calls[1] == created["metadata"]["resourceVersion"]

    updated, result = await create_or_update(api, cm("settings"), want("two"))
    assert result == "updated"
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    assert (await api.get(CM, "settings"))["data"] == {"key": "two"}


async def test_create_or_update_with_a_typed_object_and_an_async_mutate(
    api: Client, widgets: None
) -> None:
    async def grow(w: Widget) -> None:
        w.spec.size = 5
        w.metadata.labels = {"tier": "gold"}

    bare = Widget(metadata=ObjectMeta(name="w1"), spec=WidgetSpec(size=1))
    created, result = await create_or_update(api, bare, grow)
    assert result is OperationResult.CREATED
    assert isinstance(created, Widget)
    assert created.spec.size == 5
    assert created.spec.color == "red"  # defaulted by the server

    again, result = await create_or_update(api, bare, grow)
    assert result is OperationResult.UNCHANGED
    assert isinstance(again, Widget)

    def recolor(w: Widget) -> None:
        w.spec.color = "green"

    updated, result = await create_or_update(api, bare, recolor)
    assert result is OperationResult.UPDATED
    assert (await api.get(Widget, "w1")).spec.color == "green"
    assert updated.metadata.labels == {"tier": "gold"}


async def test_mutate_must_keep_the_name_and_namespace(api: Client) -> None:
    def rename(obj: dict[str, Any]) -> None:
        obj["metadata"]["name"] = "other"

    def move(obj: dict[str, Any]) -> None:
        obj["metadata"]["namespace"] = "elsewhere"

    with pytest.raises(ValueError, match="name or namespace"):
        await create_or_update(api, cm("fixed"), rename)
    await api.create(cm("fixed"))
    with pytest.raises(ValueError, match="name or namespace"):
        await create_or_update(api, cm("fixed"), move)
    with pytest.raises(ValueError, match="name or namespace"):
        await create_or_patch(api, cm("fixed"), rename)
    with pytest.raises(NotFound):
        await api.get(CM, "other")


async def test_create_or_patch_results(api: Client, widgets: None) -> None:
    def spec_only(w: Widget) -> None:
        w.spec.size = 4

    def status_only(w: Widget) -> None:
        w.status = WidgetStatus(phase="Ready")

    def both(w: Widget) -> None:
        w.spec.size = 6
        w.status = WidgetStatus(phase="Scaling")

    bare = Widget(metadata=ObjectMeta(name="w2"), spec=WidgetSpec(size=2))
    created, result = await create_or_patch(api, bare, lambda w: None)
    assert result is OperationResult.CREATED
    assert created.spec.size == 2

    patched, result = await create_or_patch(api, bare, spec_only)
    assert result is OperationResult.UPDATED
    assert patched.spec.size == 4

    patched, result = await create_or_patch(api, bare, status_only)
    assert result is OperationResult.UPDATED_STATUS_ONLY
    assert patched.status is not None and patched.status.phase == "Ready"
    assert patched.spec.size == 4

    patched, result = await create_or_patch(api, bare, both)
    assert result is OperationResult.UPDATED_STATUS
    live = await api.get(Widget, "w2")
    assert live.spec.size == 6
    assert live.status is not None and live.status.phase == "Scaling"

    _, result = await create_or_patch(api, bare, both)
    assert result is OperationResult.UNCHANGED
    assert [r.value for r in OperationResult] == [
        "unchanged",
        "created",
        "updated",
        "updatedStatus",
        "updatedStatusOnly",
    ]


async def test_create_or_patch_sends_only_the_difference(api: Client) -> None:
    await api.create({**cm("shared"), "data": {"theirs": "1"}})

    def mine(obj: dict[str, Any]) -> None:
        obj.setdefault("data", {})["mine"] = "2"

    _, result = await create_or_patch(api, cm("shared"), mine)
    assert result is OperationResult.UPDATED
    assert (await api.get(CM, "shared"))["data"] == {"theirs": "1", "mine": "2"}


def test_merge_patch() -> None:
    before = {"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "gone": True}
    after = {"a": 1, "b": {"c": 2, "d": 4, "new": {}}, "e": [1], "added": None}
    assert merge_patch(before, after) == {
        "b": {"d": 4, "new": {}},
        "e": [1],
        "gone": None,
        "added": None,
    }
    assert merge_patch(after, after) == {}


async def test_finalizers_are_patched_in_and_out(api: Client, widgets: None) -> None:
    obj = await api.create(cm("guarded"))
    assert await release_finalizer(api, obj, "example.com/cleanup") is obj  # nothing to do

    with_one = await ensure_finalizer(api, obj, "example.com/cleanup")
    assert with_one["metadata"]["finalizers"] == ["example.com/cleanup"]
    assert with_one is obj  # the object passed in is the object as stored now
    assert await ensure_finalizer(api, with_one, "example.com/cleanup") is with_one

    with_two = await ensure_finalizer(api, copy.deepcopy(with_one), "example.com/second")
    assert with_two["metadata"]["finalizers"] == ["example.com/cleanup", "example.com/second"]

    # Someone else wrote meanwhile: the stale copy must not win.
    live = await api.get(CM, "guarded")
    live["data"] = {"changed": "yes"}
    await api.update(live)
    with pytest.raises(Conflict):
        await release_finalizer(api, with_two, "example.com/cleanup")
    with pytest.raises(Conflict):
        await ensure_finalizer(api, with_two, "example.com/third")
    assert with_two["metadata"]["finalizers"] == ["example.com/cleanup", "example.com/second"]

    fresh = await api.get(CM, "guarded")
    released = await release_finalizer(api, fresh, "example.com/cleanup")
    assert released["metadata"]["finalizers"] == ["example.com/second"]
    assert released["data"] == {"changed": "yes"}

    # Deleting waits for the last finalizer; releasing it lets the object go.
    await api.delete(CM, "guarded")
    terminating = await api.get(CM, "guarded")
    assert terminating["metadata"].get("deletionTimestamp")
    await release_finalizer(api, terminating, "example.com/second")
    with pytest.raises(NotFound):
        await api.get(CM, "guarded")

    typed = await api.create(Widget(metadata=ObjectMeta(name="w3"), spec=WidgetSpec(size=1)))
    typed_after = await ensure_finalizer(api, typed, "example.com/cleanup")
    assert isinstance(typed_after, Widget)
    assert typed_after.metadata.finalizers == ["example.com/cleanup"]
    typed_done = await release_finalizer(api, typed_after, "example.com/cleanup")
    assert not typed_done.metadata.finalizers


async def test_finalizer_writers_need_a_read_object(api: Client) -> None:
    with pytest.raises(ValueError, match="resourceVersion"):
        await ensure_finalizer(api, cm("unread"), "example.com/cleanup")
