"""The versioned store: revisions, history, snapshots and watch fan-out."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._apiserver.storage.store import Expired, Store
from kubeforge._apiserver.types.resource import GroupResource

CM = GroupResource("", "configmaps")
SECRETS = GroupResource("", "secrets")


def obj(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


def test_every_write_bumps_one_global_revision() -> None:
    store = Store()
    a = store.create(CM, obj("a"))
    b = store.create(SECRETS, {"metadata": {"name": "s", "namespace": "default"}})
    c = store.update(CM, {**a.thaw(), "data": {"x": "1"}}, a)
    assert (a.rv, b.rv, c.rv) == (1, 2, 3)
    assert c.obj["metadata"]["resourceVersion"] == "3"
    assert store.revision == 3


def test_list_is_in_namespace_then_name_order_and_filters_namespace() -> None:
    store = Store()
    for ns, name in [("b", "x"), ("a", "z"), ("a", "y"), ("c", "a")]:
        store.create(CM, obj(name, ns))
    items, rv = store.current(CM)
    assert [o.key for o in items] == [("a", "y"), ("a", "z"), ("b", "x"), ("c", "a")]
    assert rv == 4
    items, _ = store.current(CM, "a")
    assert [o.key for o in items] == [("a", "y"), ("a", "z")]
    assert store.current(CM, "nope")[0] == []


def test_snapshot_undoes_later_changes() -> None:
    store = Store()
    a = store.create(CM, obj("a", v="1"))
    store.create(CM, obj("b"))
    at = store.revision
    store.update(CM, {**a.thaw(), "data": {"v": "2"}}, a)
    b = store.get(CM, "default", "b")
    assert b is not None
    store.delete(CM, b)
    store.create(CM, obj("c"))
    past = store.list_at(CM, at)
    assert [o.key[1] for o in past] == ["a", "b"]
    assert past[0].obj["data"] == {"v": "1"}
    assert [o.key[1] for o in store.current(CM)[0]] == ["a", "c"]


def test_history_is_bounded_and_older_requests_expire() -> None:
    store = Store(history_size=3)
    for i in range(6):
        store.create(CM, obj(f"o{i}"))
    assert len(store.collection(CM).history) == 3
    with pytest.raises(Expired):
        store.list_at(CM, 1)
    assert [o.key[1] for o in store.list_at(CM, 4)] == ["o0", "o1", "o2", "o3"]


def test_compaction_expires_old_revisions() -> None:
    store = Store()
    store.create(CM, obj("a"))
    store.create(CM, obj("b"))
    store.compact()
    with pytest.raises(Expired):
        store.watch(CM, None, None, since=1)
    watcher = store.watch(CM, None, None, since=store.revision)
    assert watcher.pending == []


async def test_watch_replays_history_then_receives_live_events() -> None:
    store = Store()
    a = store.create(CM, obj("a"))
    store.update(CM, {**a.thaw(), "data": {"k": "v"}}, a)
    watcher = store.watch(CM, "default", None, since=1)
    store.create(CM, obj("b"))
    batch = await watcher.next_batch(1.0)
    assert [(seen, e.new.key[1], e.rv) for e, seen in batch] == [
        ("MODIFIED", "a", 2),
        ("ADDED", "b", 3),
    ]


async def test_watch_without_revision_starts_with_current_objects() -> None:
    store = Store()
    store.create(CM, obj("a"))
    store.create(CM, obj("b", "other"))
    watcher = store.watch(CM, "default", None, since=None)
    batch = await watcher.next_batch(1.0)
    assert [(seen, e.new.key) for e, seen in batch] == [("ADDED", ("default", "a"))]


async def test_selector_transitions_become_added_and_deleted() -> None:
    store = Store()
    a = store.create(CM, obj("a", color="red"))

    def red(o: dict[str, Any]) -> bool:
        return bool(o.get("data", {}).get("color") == "red")

    watcher = store.watch(CM, None, red, since=store.revision)
    b = store.update(CM, {**a.thaw(), "data": {"color": "blue"}}, a)
    c = store.update(CM, {**b.thaw(), "data": {"color": "red"}}, b)
    store.update(CM, {**c.thaw(), "data": {"color": "red", "x": "1"}}, c)
    batch = await watcher.next_batch(1.0)
    assert [seen for _, seen in batch] == ["DELETED", "ADDED", "MODIFIED"]


async def test_every_watcher_gets_the_stored_encoding_in_a_frame() -> None:
    store = Store()
    watchers = [store.watch(CM, None, None, since=0) for _ in range(3)]
    stored = store.create(CM, obj("a"))
    lines = []
    for w in watchers:
        ((event, seen),) = await w.next_batch(1.0)
        assert event.new is stored
        lines.append(event.encoded(seen))
    # Nothing decoded or encoded again: the object is framed as stored, for each watcher.
    assert lines[0] == lines[1] == lines[2]
    assert lines[0] == b'{"type":"ADDED","object":' + stored.raw + b"}\n"


async def test_deleted_event_carries_last_state_with_new_revision() -> None:
    store = Store()
    a = store.create(CM, obj("a", k="v"))
    watcher = store.watch(CM, None, None, since=a.rv)
    gone = store.delete(CM, a)
    ((event, seen),) = await watcher.next_batch(1.0)
    assert seen == "DELETED"
    assert event.new.obj["data"] == {"k": "v"}
    assert event.new.obj["metadata"]["resourceVersion"] == str(gone.rv) == "2"
    assert store.get(CM, "default", "a") is None


async def test_a_watcher_too_far_behind_is_closed() -> None:
    store = Store(max_pending=5)
    watcher = store.watch(CM, None, None, since=0)
    for i in range(10):
        store.create(CM, obj(f"o{i}"))
    assert watcher.closed and watcher.overflowed
    assert watcher not in store.collection(CM).watchers


async def test_next_batch_times_out_empty() -> None:
    store = Store()
    watcher = store.watch(CM, None, None, since=0)
    assert await watcher.next_batch(0.01) == []


async def test_a_watch_from_before_a_collections_first_object_misses_nothing() -> None:
    store = Store()
    store.create(SECRETS, {"metadata": {"name": "s", "namespace": "default"}})
    listed_at = store.revision  # a list of (still empty) configmaps answers this revision
    store.create(CM, obj("first"))
    watcher = store.watch(CM, None, None, since=listed_at)
    ((event, seen),) = await watcher.next_batch(1.0)
    assert (seen, event.new.key[1]) == ("ADDED", "first")


def test_a_replaced_version_keeps_only_its_encoding_and_still_reads_the_same() -> None:
    from types import SimpleNamespace

    from kubeforge._apiserver.storage.commits import Commits

    store = Store()
    commits = Commits(store)
    seen: list[str] = []
    commits.observers.append(
        lambda _rt, _kind, _new, old: seen.append(old.obj["data"]["v"]) if old else None  # type: ignore[arg-type]
    )
    rt: Any = SimpleNamespace(group_resource=CM)
    first = commits.create(rt, obj("a", v="1"))
    second = commits.update(rt, obj("a", v="2"), first)
    assert seen == ["1"]  # observers read it before it is released
    assert first._obj is None and second._obj is not None
    assert first.obj["data"] == {"v": "1"} and first.obj is not first.obj  # decoded anew
    # A watch resuming from the first version replays the change from the history.
    watcher = store.watch(CM, None, lambda o: o["data"]["v"] == "2", first.rv)
    assert [(e.type, e.new.obj["data"]["v"]) for e, _ in watcher.pending] == [("MODIFIED", "2")]
    gone = commits.delete(rt, second)
    assert second._obj is None and gone._obj is None
    assert gone.obj["metadata"]["name"] == "a"


def test_of_many_live_objects_only_those_decoded_last_keep_their_decoded_form() -> None:
    store = Store(decoded_objects=3)
    stored = [store.create(CM, obj(f"cm-{i}", v=str(i))) for i in range(5)]
    assert [s._obj is not None for s in stored] == [False, False, True, True, True]
    # Every one reads as written; reading a let-go one decodes it and keeps it a while,
    # letting the one decoded longest ago go instead.
    assert [s.obj["data"]["v"] for s in stored] == ["0", "1", "2", "3", "4"]
    assert stored[1].obj is stored[1].obj
    again = store.get(CM, "default", "cm-0")
    assert again is stored[0] and again.obj["data"] == {"v": "0"}
    kept = [s._obj is not None for s in stored]
    assert sum(kept) == 3 and kept[0]
    # Other resources have their own room.
    secret = store.create(SECRETS, {"metadata": {"name": "s", "namespace": "default"}})
    assert secret._obj is not None and sum(s._obj is not None for s in stored) == 3
