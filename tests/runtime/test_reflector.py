"""The reflector alone: watcher events in, the store and the changes told to handlers out."""

from __future__ import annotations

from typing import Any

from kubeforge._runtime.reflector import Reflector
from kubeforge._runtime.store import Store


def cm(name: str, rv: int, namespace: str = "default", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": str(rv)},
        "data": data,
    }


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.events.append(("add", obj["metadata"]["name"], is_in_initial_list))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        rvs = (old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])
        self.events.append(("update", new["metadata"]["name"], *rvs))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.events.append(("delete", obj["metadata"]["name"]))


def reflector(*scopes: str | None) -> tuple[Reflector, Store, Recorder]:
    store, recorder = Store(), Recorder()
    return Reflector(store, recorder, lambda obj: obj, scopes or (None,)), store, recorder


def listed(r: Reflector, scope: str | None, *objects: dict[str, Any]) -> None:
    r.init(scope)
    r.init_page(scope, list(objects))
    r.init_done(scope)


def test_the_first_list_is_reported_as_initial_adds_and_syncs() -> None:
    r, store, rec = reflector()
    r.init(None)
    r.init_page(None, [cm("a", 1)])
    assert "default/a" in store and not r.synced.is_set()  # an empty store fills as pages come
    r.init_page(None, [cm("b", 2)])
    r.init_done(None)
    assert r.synced.is_set()
    assert rec.events == [("add", "a", True), ("add", "b", True)]


def test_a_relist_reports_exactly_what_changed() -> None:
    r, store, rec = reflector()
    listed(r, None, cm("same", 1), cm("changed", 2), cm("gone", 3))
    rec.events.clear()
    r.init(None)
    r.init_page(None, [cm("same", 1), cm("changed", 5), cm("new", 6)])
    assert store.get("default/gone") is not None  # nothing changes before the list is whole
    r.init_done(None)
    assert sorted(rec.events) == [
        ("add", "new", False),
        ("delete", "gone"),
        ("update", "changed", "2", "5"),
    ]
    assert sorted(store.keys()) == ["default/changed", "default/new", "default/same"]


def test_a_relist_of_one_namespace_leaves_the_others_alone() -> None:
    r, store, rec = reflector("a", "b")
    listed(r, "a", cm("x", 1, "a"))
    assert not r.synced.is_set()
    listed(r, "b", cm("y", 2, "b"))
    assert r.synced.is_set()
    rec.events.clear()
    listed(r, "a")
    assert rec.events == [("delete", "x")]
    assert list(store.keys()) == ["b/y"]


def test_a_written_object_stays_until_the_watch_catches_up() -> None:
    r, store, rec = reflector()
    listed(r, None, cm("a", 1))
    rec.events.clear()
    r.written(cm("a", 5, k="written"))
    r.apply(cm("a", 3, k="older"))
    assert store.get("default/a")["data"] == {"k": "written"}  # the older event does not win
    assert r.unconfirmed == 1
    r.apply(cm("a", 5, k="written"))
    assert r.unconfirmed == 0
    assert rec.events == [("update", "a", "1", "3"), ("update", "a", "3", "5")]
