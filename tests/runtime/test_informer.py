"""Informers and the cache against the embedded server: sync, events, 410 re-list, recovery."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeforge import Client
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.writes import run_now
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._runtime.cache import Cache, NotCached
from kubeforge._runtime.informer import Informer
from kubeforge.apiserver import APIServer
from kubeforge.testing import eventually

CM = "v1/ConfigMap"


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


class Recorder:
    """A handler that keeps what it was told."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    def on_add(self, obj: dict[str, Any], initial: bool) -> None:
        self.events.append(("add", obj["metadata"]["name"], initial))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        same = old["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]
        self.events.append(
            ("update", new["metadata"]["name"], "resync" if same else dict(new.get("data") or {}))
        )

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.events.append(("delete", obj["metadata"]["name"], None))

    def kinds(self) -> list[tuple[str, str]]:
        return [(e[0], e[1]) for e in self.events]


@pytest.fixture
async def informer(api: Client) -> AsyncIterator[Informer]:
    inf = Informer(api, CM, namespace="default", page_size=50)
    yield inf
    await inf.stop()


async def test_initial_list_is_paginated_and_reported_as_initial(
    api: Client, informer: Informer
) -> None:
    for i in range(120):
        await api.create(cm(f"o{i:03}"))
    rec = Recorder()
    informer.add_handler(rec)
    informer.start()
    assert await informer.wait_synced(10)
    assert len(informer.store) == 120
    assert len(rec.events) == 120 and all(e[0] == "add" and e[2] is True for e in rec.events)
    late = Recorder()
    informer.add_handler(late)  # a late handler is told about what is already there
    assert len(late.events) == 120


async def test_live_events_reach_handlers(api: Client, informer: Informer) -> None:
    rec = Recorder()
    informer.add_handler(rec)
    informer.start()
    assert await informer.wait_synced(10)
    await api.create(cm("a", k="1"))
    await api.patch(CM, "a", {"data": {"k": "2"}})
    await api.delete(CM, "a")

    async def all_seen() -> bool:
        return len(rec.events) == 3

    await eventually(all_seen)
    assert rec.events == [("add", "a", False), ("update", "a", {"k": "2"}), ("delete", "a", None)]
    assert "a" not in [k.split("/")[1] for k in informer.store]


async def test_managed_fields_are_stripped_by_default(api: Client, informer: Informer) -> None:
    await api.create(cm("a"))
    informer.start()
    assert await informer.wait_synced(10)
    stored = informer.store.get("default/a")
    assert stored is not None and "managedFields" not in stored["metadata"]


async def test_a_410_relists_and_reports_exactly_what_changed(
    server: APIServer, api: Client, informer: Informer
) -> None:
    for name in ("keep", "change", "drop"):
        await api.create(cm(name, v="1"))
    rec = Recorder()
    informer.add_handler(rec)
    informer.start()
    assert await informer.wait_synced(10)
    rec.events.clear()

    # Behind the informer's back: end its watch, change things, and forget the history,
    # all before the event loop lets it reconnect.
    rt = server.registry.get("", "v1", "configmaps")
    assert rt is not None

    def call(verb: str, name: str | None) -> Call:
        return Call(RequestInfo("", "v1", "default", "configmaps", name, None, verb), rt, {})

    server.watches.close_all()
    run_now(server.writes.create(call("create", None), cm("new", v="1")))
    change = server.store.get(rt.group_resource, "default", "change")
    assert change is not None
    run_now(
        server.writes.write_update(
            call("update", "change"), dict(change.thaw(), data={"v": "2"}), change
        )
    )
    drop = server.store.get(rt.group_resource, "default", "drop")
    assert drop is not None
    run_now(server.writes.delete_stored(call("delete", "drop"), drop, {}))
    server.store.compact()

    async def relisted() -> bool:
        return len(rec.events) >= 3

    await eventually(relisted)
    assert sorted(rec.events, key=lambda e: e[1]) == [
        ("update", "change", {"v": "2"}),
        ("delete", "drop", None),
        ("add", "new", False),
    ]
    assert sorted(k.split("/")[1] for k in informer.store) == ["change", "keep", "new"]
    assert informer.watch_restarts >= 1


async def test_a_restarted_server_is_caught_up_without_missing_anything(
    server: APIServer, api: Client, informer: Informer
) -> None:
    informer.start()
    assert await informer.wait_synced(10)
    await api.create(cm("before", v="1"))
    restarts = informer.watch_restarts
    await server.stop()  # every connection drops
    await server.start()
    await api.create(cm("after", v="1"))
    await api.patch(CM, "before", {"data": {"v": "2"}})

    async def converged() -> bool:
        before = informer.store.get("default/before")
        return (
            before is not None
            and before["data"] == {"v": "2"}
            and informer.store.get("default/after") is not None
        )

    await eventually(converged, timeout=20)
    assert informer.watch_restarts > restarts


async def test_bookmarks_keep_the_resume_point_fresh(
    server: APIServer, api: Client, informer: Informer
) -> None:
    server.watches.bookmark_interval = 0.05
    informer.start()
    assert await informer.wait_synced(10)
    await api.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "elsewhere"}})
    target = server.store.revision

    async def advanced() -> bool:
        return int(informer.last_resource_version or 0) >= target

    await eventually(advanced)


async def test_resync_replays_every_object_as_an_update_from_itself(
    api: Client, informer: Informer
) -> None:
    await api.create(cm("a"))
    rec = Recorder()
    informer.add_handler(rec)
    informer.start()
    assert await informer.wait_synced(10)
    rec.events.clear()
    informer.resync()
    assert rec.events == [("update", "a", "resync")]


async def test_a_failing_handler_does_not_stop_the_others(api: Client, informer: Informer) -> None:
    class Broken(Recorder):
        def on_add(self, obj: dict[str, Any], initial: bool) -> None:
            raise RuntimeError("boom")

    good = Recorder()
    informer.add_handler(Broken())
    informer.add_handler(good)
    informer.start()
    assert await informer.wait_synced(10)
    await api.create(cm("a"))

    async def delivered() -> bool:
        return ("add", "a") in good.kinds()

    await eventually(delivered)


async def test_cache_reads_indexes_and_refuses_unwatched_kinds(api: Client) -> None:
    cache = Cache(api)
    cache.informer_for(CM)
    cache.index_field(CM, "by-color", lambda o: [o.get("data", {}).get("color", "")])
    await cache.start()
    try:
        assert await cache.wait_for_sync(10)
        await api.create(
            {**cm("red1", color="red"), "metadata": {"name": "red1", "labels": {"t": "x"}}}
        )
        await api.create(cm("red2", color="red"))
        await api.create(cm("blue", color="blue"))

        async def cached() -> bool:
            return len(cache.list(CM, namespace="default")) == 3

        await eventually(cached)
        assert cache.get(CM, "blue", namespace="default")["data"] == {"color": "blue"}
        reds = cache.list(CM, matching_fields={"by-color": "red"})
        assert sorted(o["metadata"]["name"] for o in reds) == ["red1", "red2"]
        assert [o["metadata"]["name"] for o in cache.list(CM, label_selector="t=x")] == ["red1"]
        copy = cache.get(CM, "blue", namespace="default")
        copy["data"]["color"] = "mutated"
        assert cache.get(CM, "blue", namespace="default")["data"] == {"color": "blue"}
        with pytest.raises(NotCached):
            cache.get("v1/Secret", "x", namespace="default")
    finally:
        await cache.stop()


async def test_informers_are_shared_per_kind(api: Client) -> None:
    cache = Cache(api)
    assert cache.informer_for(CM) is cache.informer_for("v1/ConfigMap")
    assert cache.informer_for(CM) is not cache.informer_for("v1/Secret")
    await asyncio.sleep(0)


class DropFirstUpdate:
    """An event sink in front of the reflector that leaves out the first watch update."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.dropped: list[str] = []

    def init(self, scope: str | None) -> None:
        self.inner.init(scope)

    def init_page(self, scope: str | None, objects: list[dict[str, Any]]) -> None:
        self.inner.init_page(scope, objects)

    def init_done(self, scope: str | None) -> None:
        self.inner.init_done(scope)

    def apply(self, obj: dict[str, Any]) -> None:
        if not self.dropped and obj.get("data"):
            self.dropped.append(obj["data"]["v"])
            return
        self.inner.apply(obj)

    def delete(self, obj: dict[str, Any]) -> None:
        self.inner.delete(obj)


async def test_watch_events_can_be_intercepted_before_the_store(
    api: Client, informer: Informer
) -> None:
    sinks: list[DropFirstUpdate] = []

    def wrap(sink: Any) -> Any:
        sinks.append(DropFirstUpdate(sink))
        return sinks[-1]

    informer.intercept_events(wrap)
    rec = Recorder()
    informer.add_handler(rec)
    informer.start()
    assert await informer.wait_synced(5)
    created = await api.create(cm("seen"))
    for value in ("1", "2"):
        created["data"] = {"v": value}
        created = await api.update(created)
    await eventually(lambda: ("update", "seen", {"v": "2"}) in rec.events)
    # The first change never reached the store nor the handlers: they went from the
    # creation straight to the second.
    assert sinks[0].dropped == ["1"]
    assert rec.events == [("add", "seen", False), ("update", "seen", {"v": "2"})]
    assert informer.store.get("default/seen")["data"] == {"v": "2"}  # type: ignore[index]
