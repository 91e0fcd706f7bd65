"""An owner's cached pods summarised once per change (_cluster/controllers/_podindex.py)."""

from __future__ import annotations

from typing import Any

from kubeforge._cluster.controllers._podindex import (
    CONTROLLER_INDEX,
    PodSummaries,
    _controller_uid,
)
from kubeforge._runtime.store import Store
from tests.support.storecache import StoreCache


def fake_cache() -> StoreCache:
    return StoreCache("v1/Pod", Store({CONTROLLER_INDEX: _controller_uid}))


OWNER = {"metadata": {"name": "web", "namespace": "default", "uid": "u-1"}}


def pod(name: str, namespace: str = "default", owner: str | None = "u-1", rv: str = "1") -> Any:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": rv}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": owner,
                "controller": True,
            }
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def test_the_owned_pods_then_the_orphans_of_its_namespace() -> None:
    cache = fake_cache()
    store = cache.informer.store
    for obj in (
        pod("b"),
        pod("a"),
        pod("orphan", owner=None),
        pod("elsewhere", namespace="other"),
        pod("theirs", owner="u-2"),
    ):
        store.put(obj)
    pods = PodSummaries(cache).claimable(OWNER)  # type: ignore[arg-type]
    # The owned ones (in no particular order), then the orphans.
    assert sorted(p.name for p in pods[:2]) == ["a", "b"]
    assert [p.name for p in pods[2:]] == ["orphan"]
    assert [p.controller_uid for p in pods] == ["u-1", "u-1", None]


def test_a_pod_is_read_again_only_once_it_changed_or_went() -> None:
    cache = fake_cache()
    store = cache.informer.store
    store.put(pod("a"))
    store.put(pod("b"))
    summaries = PodSummaries(cache)  # type: ignore[arg-type]
    first = sorted(summaries.claimable(OWNER), key=lambda p: p.key)
    again = sorted(summaries.claimable(OWNER), key=lambda p: p.key)
    assert all(x is y for x, y in zip(first, again, strict=True))
    store.put(pod("b", rv="2"))
    store.delete("default/a")
    changed = summaries.claimable(OWNER)
    assert [p.name for p in changed] == ["b"]
    assert changed[0] is not first[1]
    decoded = summaries.pod(changed[0])
    assert decoded is not None and decoded["metadata"]["resourceVersion"] == "2"
    assert summaries.pod(first[0]) is None  # gone from the cache
