"""The informer's store (_runtime/store.py): its indexes as objects come, change and go."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._runtime.store import Store

NODE = "spec.nodeName"


def pod(name: str, node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"nodeName": node}}


def by_node(obj: Any) -> list[str]:
    node = obj["spec"]["nodeName"]
    return [node] if node else []


def test_index_counts_and_membership_follow_changes() -> None:
    store = Store({NODE: by_node})
    store.put(pod("a", "n1"))
    store.put(pod("b", "n1"))
    store.put(pod("c"))
    assert store.count_under(NODE, "n1") == 2
    assert store.is_under(NODE, "n1", "default/a")
    assert not store.is_under(NODE, "n2", "default/a")
    store.put(pod("a", "n2"))  # moved
    assert store.count_under(NODE, "n1") == 1
    assert store.is_under(NODE, "n2", "default/a")
    assert store.counts_under(NODE) == {"n1": 1, "n2": 1}
    store.delete("default/b")
    assert store.count_under(NODE, "n1") == 0
    assert store.counts_under(NODE) == {"n2": 1}
    assert store.keys_under(NODE, "n2") == frozenset({"default/a"})
    assert store.by_index(NODE, "n2") == ["default/a"]


def test_an_unknown_index_is_a_key_error() -> None:
    store = Store()
    for read in (store.count_under, store.keys_under, store.by_index):
        with pytest.raises(KeyError):
            read("nope", "x")
    with pytest.raises(KeyError):
        store.is_under("nope", "x", "k")
    with pytest.raises(KeyError):
        store.counts_under("nope")


def test_an_index_added_late_covers_existing_objects_and_follows_changes() -> None:
    store = Store()
    store.put(pod("a", "n1"))
    store.put(pod("b"))
    store.add_indexer(NODE, by_node)
    assert store.by_index(NODE, "n1") == ["default/a"]
    store.put(pod("b", "n1"))
    store.put(pod("a", "n2"))
    assert store.by_index(NODE, "n1") == ["default/b"]
    assert store.by_index(NODE, "n2") == ["default/a"]
    # The built-in namespace index is kept alongside.
    assert store.by_index("namespace", "default") == ["default/a", "default/b"]
    store.delete("default/a")
    assert store.count_under(NODE, "n2") == 0
    assert store.by_index("namespace", "default") == ["default/b"]


def test_raw_under_gives_keys_and_bytes_of_an_index_value() -> None:
    store = Store({NODE: by_node})
    store.put(pod("a", "n1"))
    store.put(pod("b", "n1"))
    store.put(pod("c", "n2"))
    found = dict(store.raw_under(NODE, "n1"))
    assert sorted(found) == ["default/a", "default/b"]
    assert found["default/a"] is store.raw("default/a")
    assert store.raw_under(NODE, "n3") == []


def test_replace_hands_on_the_old_object_it_decoded_for_the_indexes() -> None:
    store = Store({NODE: by_node})
    assert store.replace(pod("a", "n1")) == (None, None)
    old_bytes = store.raw("default/a")
    previous, before = store.replace(pod("a", "n2"))
    assert previous is old_bytes
    assert before == pod("a", "n1")
    assert store.by_index(NODE, "n2") == ["default/a"]
