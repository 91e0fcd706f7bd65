"""What the cache holds and how it answers: selectors checked as the server checks them,
several namespaces, selected and transformed kinds, metadata-only objects."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

import kubeforge
from kubeforge import Client
from kubeforge._api.meta import GroupVersionKind, ObjectMeta, PartialObjectMetadata, ResourceInfo
from kubeforge._api.model import Model
from kubeforge._api.resource import Resource
from kubeforge._runtime.cache import Cache, CacheOptions, NotCached
from kubeforge._runtime.cached_client import CachedClient
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result
from kubeforge.client import BadRequest, load_kubeconfig
from kubeforge.testing import eventually
from tests.support import HTTPClient
from tests.support.crds import widget_crd

CM = "v1/ConfigMap"
POD = "v1/Pod"


def cm(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"secret": "s3cr3t"},
    }


def pod(name: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


async def names(items: Any) -> list[str]:
    return sorted(o["metadata"]["name"] for o in items)


async def test_cached_and_live_lists_accept_and_refuse_the_same_selectors(api: Client) -> None:
    cache = Cache(api)
    cache.informer_for(CM)
    cached = CachedClient(api, cache)
    await cache.start()
    try:
        assert await cache.wait_for_sync(10)
        await api.create(cm("a", app="x"))
        await api.create(cm("b", app="y"))
        await eventually(lambda: len(cache.list(CM, namespace="default")) == 2)
        for selectors in (
            {"field_selector": "metadata.name=a"},
            {"field_selector": "metadata.name!=a"},
            {"field_selector": "metadata.namespace=default,metadata.name==b"},
            {"label_selector": "app in (x,y),app!=y"},
            {"label_selector": "app", "field_selector": "metadata.name=b"},
        ):
            live = await api.list(CM, namespace="default", **selectors)
            mine = await cached.list(CM, namespace="default", **selectors)
            assert await names(mine) == await names(live), selectors
        for selectors in (
            {"field_selector": "data.secret=s3cr3t"},  # not a field selector of ConfigMaps
            {"field_selector": "metadata.name"},  # no operator
            {"label_selector": "app in x"},  # no parentheses
            {"label_selector": "-bad-=x"},
        ):
            with pytest.raises(BadRequest) as live_error:
                await api.list(CM, namespace="default", **selectors)
            with pytest.raises(BadRequest) as cached_error:
                await cached.list(CM, namespace="default", **selectors)
            assert cached_error.value.message == live_error.value.message, selectors
    finally:
        await cache.stop()


async def test_a_field_the_server_supports_is_checked_once_then_served_from_memory(
    api: Client,
) -> None:
    requests: list[str] = []
    counting = Client(api.config, on_request=lambda method, *_: requests.append(method))
    cache = Cache(counting)
    cache.informer_for(POD)
    cached = CachedClient(counting, cache)
    await cache.start()
    try:
        assert await cache.wait_for_sync(10)
        await counting.create(pod("p1", node="n1"))
        await counting.create(pod("p2", node="n2"))
        await eventually(lambda: len(cache.list(POD)) == 2)
        before = len(requests)
        found = await cached.list(POD, field_selector="spec.nodeName=n1")
        assert await names(found) == ["p1"]
        assert len(requests) == before + 1  # the server was asked once whether it may
        again = await cached.list(POD, field_selector="spec.nodeName!=n1")
        assert await names(again) == ["p2"]
        assert len(requests) == before + 1
    finally:
        await cache.stop()
        await counting.close()


async def test_an_index_named_after_a_field_serves_field_selectors(api: Client) -> None:
    cache = Cache(api)
    cache.index_field(CM, "data.secret", lambda o: [o.get("data", {}).get("secret", "")])
    cache.informer_for(CM)
    cached = CachedClient(api, cache)
    await cache.start()
    try:
        assert await cache.wait_for_sync(10)
        await api.create(cm("a"))
        await eventually(lambda: len(cache.list(CM)) == 1)
        # The server would refuse this field; the cache has an index of that name.
        found = await cached.list(CM, field_selector="data.secret=s3cr3t")
        assert await names(found) == ["a"]
        assert await names(cache.list(CM, matching_fields={"data.secret": "s3cr3t"})) == ["a"]
        with pytest.raises(KeyError, match="no index 'nope'"):
            cache.list(CM, matching_fields={"nope": "x"})
    finally:
        await cache.stop()


class WidgetSpec(Model):
    size: int
    color: str = "red"


class Widget(Resource[WidgetSpec, Model]):
    __kubeforge__ = ResourceInfo(
        GroupVersionKind("example.com", "v1", "Widget"),
        "widgets",
        True,
        selectable_fields=(".spec.color",),
    )


async def test_a_typed_kinds_selectable_fields_are_served_from_memory(api: Client) -> None:
    crd = widget_crd()
    crd["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": ".spec.color"}]
    await api.create(crd)
    await api.wait_established(["widgets.example.com"])
    requests: list[str] = []
    counting = Client(api.config, on_request=lambda method, *_: requests.append(method))
    cache = Cache(counting)
    cache.informer_for(Widget)
    cached = CachedClient(counting, cache)
    await cache.start()
    try:
        assert await cache.wait_for_sync(10)
        for name, color in (("w1", "red"), ("w2", "green")):
            await counting.create(
                Widget(metadata=ObjectMeta(name=name), spec=WidgetSpec(size=1, color=color))
            )
        await eventually(lambda: len(cache.list(Widget)) == 2)
        before = len(requests)
        green = await cached.list(Widget, field_selector="spec.color=green")
        assert [w.metadata.name for w in green] == ["w2"]
        live = await counting.list(Widget, field_selector="spec.color=green")
        assert [w.metadata.name for w in live] == ["w2"]
        assert len(requests) == before + 1  # only the live list
    finally:
        await cache.stop()
        await counting.close()


async def test_a_cache_of_several_namespaces(kubeconfig: Path, api: Client) -> None:
    for namespace in ("team-a", "team-b", "other"):
        await api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        await api.create(cm(f"in-{namespace}", namespace))
    manager = Manager(load_kubeconfig(kubeconfig), namespaces=["team-a", "team-b"])
    seen: list[Request] = []

    class Recorder(Reconciler):
        async def reconcile(self, request: Request) -> Result | None:
            seen.append(request)
            return None

    manager.controller().for_(CM).complete(Recorder())
    task = asyncio.create_task(manager.start())
    try:
        await eventually(lambda: manager.running.is_set())
        client = manager.client
        assert await names(await client.list(CM)) == ["in-team-a", "in-team-b"]
        assert await names(await client.list(CM, namespace="team-b")) == ["in-team-b"]
        with pytest.raises(NotCached, match="team-a, team-b, not in other"):
            await client.get(CM, "in-other", namespace="other")
        await api.create(cm("later", "team-b"))
        await api.create(cm("later", "other"))
        await eventually(lambda: Request("team-b", "later") in seen)
        assert {r.namespace for r in seen} == {"team-a", "team-b"}
    finally:
        manager.stop()
        await task


async def test_selected_and_transformed_kinds(kubeconfig: Path, api: Client) -> None:
    def drop_data(obj: dict[str, Any]) -> dict[str, Any]:
        obj.pop("data", None)
        obj["metadata"].pop("managedFields", None)
        return obj

    manager = Manager(
        load_kubeconfig(kubeconfig),
        cache_options={CM: CacheOptions(label_selector="app=mine", transform=drop_data)},
    )
    manager.cache.informer_for(CM)
    await api.create(cm("mine", app="mine"))
    await api.create(cm("theirs", app="theirs"))
    task = asyncio.create_task(manager.start())
    try:
        await eventually(lambda: manager.synced)
        client = manager.client
        cached = await client.list(CM)
        assert await names(cached) == ["mine"]
        assert "data" not in cached[0]  # the transform ran before the object was stored
        # A write that takes an object out of the selection takes it out of the cache.
        mine = await manager.api_reader.get(CM, "mine")
        mine["metadata"]["labels"] = {"app": "elsewhere"}
        await client.update(mine)
        assert await client.list(CM) == []
    finally:
        manager.stop()
        await task


async def test_the_api_server_answers_partial_object_metadata(http: HTTPClient) -> None:
    await http.post("/api/v1/namespaces/default/configmaps", cm("m"))
    accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    one = await http.get("/api/v1/namespaces/default/configmaps/m", headers={"Accept": accept})
    assert one.status == 200
    assert one.json()["kind"] == "PartialObjectMetadata" and "data" not in one.json()
    many = await http.get(
        "/api/v1/namespaces/default/configmaps",
        headers={"Accept": accept.replace("PartialObjectMetadata", "PartialObjectMetadataList")},
    )
    assert many.json()["kind"] == "PartialObjectMetadataList"
    assert [i["metadata"]["name"] for i in many.json()["items"]] == ["m"]
    assert all("data" not in i for i in many.json()["items"])
    watched = await http.get(
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&resourceVersion=0",
        headers={"Accept": accept},
    )
    events = [orjson.loads(line) for line in watched.body.splitlines() if line.strip()]
    assert [e["object"]["kind"] for e in events] == ["PartialObjectMetadata"]
    assert "data" not in events[0]["object"]


async def test_metadata_only_reads_and_watches(api: Client) -> None:
    await api.create(cm("m1", app="x"))
    one = await api.get_metadata(CM, "m1")
    assert isinstance(one, PartialObjectMetadata)
    assert (one.api_version, one.kind, one.metadata.name) == ("v1", "ConfigMap", "m1")
    assert "data" not in one.to_dict()
    listed = await api.list_metadata(CM, label_selector="app=x")
    assert [m.metadata.name for m in listed] == ["m1"] and listed.resource_version

    events: list[dict[str, Any]] = []

    async def watch() -> None:
        async for event in api.watch(
            CM, resource_version=listed.resource_version, metadata_only=True
        ):
            events.append(event.object)
            return

    watcher = asyncio.create_task(watch())
    await api.create(cm("m2"))
    await asyncio.wait_for(watcher, 10)
    assert events[0]["kind"] == "ConfigMap" and events[0]["metadata"]["name"] == "m2"
    assert set(events[0]) == {"apiVersion", "kind", "metadata"}


async def test_owns_metadata_only_caches_no_bodies(kubeconfig: Path, api: Client) -> None:
    await api.create(widget_crd())
    await api.wait_established(["widgets.example.com"])
    manager = Manager(load_kubeconfig(kubeconfig))
    owners: list[str] = []

    class Owner(Reconciler):
        async def reconcile(self, request: Request) -> Result | None:
            owners.append(request.name)
            children = await self.client.list_metadata(CM, namespace=request.namespace)
            assert all(isinstance(c, PartialObjectMetadata) for c in children)
            return None

    (
        manager.controller()
        .for_("example.com/v1/Widget")
        .owns(CM, metadata_only=True)
        .complete(Owner())
    )
    task = asyncio.create_task(manager.start())
    try:
        await eventually(lambda: manager.running.is_set())
        parent = await api.create(
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "p"},
                "spec": {"size": 1},
            }
        )
        await eventually(lambda: "p" in owners)
        owners.clear()
        child = cm("child")
        child["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "name": "p",
                "uid": parent["metadata"]["uid"],
                "controller": True,
            }
        ]
        await api.create(child)
        await eventually(lambda: "p" in owners)
        informer = manager.cache.informer_for(CM, metadata_only=True)
        stored = informer.store.get("default/child")
        assert stored is not None and set(stored) == {"apiVersion", "kind", "metadata"}
        meta = await manager.client.get_metadata(CM, "child", namespace="default")
        assert meta.metadata.owner_references and meta.metadata.owner_references[0].name == "p"
        with pytest.raises(NotCached, match="only the metadata"):
            await manager.client.get(CM, "child", namespace="default")
        assert kubeforge.has_controller_reference(meta)
    finally:
        manager.stop()
        await task


async def test_metadata_reads_of_a_kind_cached_whole_start_no_other_watch(api: Client) -> None:
    cache = Cache(api, namespaces=["default"])
    cache.informer_for(CM)
    cached = CachedClient(api, cache)
    await cache.start()
    try:
        assert await cache.wait_for_sync(10)
        await api.create(cm("whole"))
        listed = await cached.list_metadata(CM, field_selector="metadata.name=whole")
        assert [m.metadata.name for m in listed] == ["whole"]
        assert set(listed[0].to_dict()) == {"apiVersion", "kind", "metadata"}
        one = await cached.get_metadata(CM, "whole", namespace="default")
        assert one.metadata.name == "whole"
        assert len(cache.informers()) == 1  # served by the whole objects' informer
    finally:
        await cache.stop()
