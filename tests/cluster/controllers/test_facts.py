"""What a controller reads of cached objects, once per change of each (_facts.py)."""

from __future__ import annotations

from typing import Any

from kubeforge._cluster.controllers._facts import Facts
from kubeforge._runtime.store import Store
from tests.support.storecache import StoreCache


def fake_cache() -> StoreCache:
    return StoreCache("v1/Service", Store())


def service(name: str, namespace: str = "default", app: str = "web") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"selector": {"app": app}}}


def test_each_object_is_read_once_per_change_by_namespace_or_all() -> None:
    cache = fake_cache()
    store = cache.informer.store
    reads: list[str] = []

    def read(obj: dict[str, Any]) -> tuple[str, str]:
        reads.append(obj["metadata"]["name"])
        return obj["metadata"]["name"], obj["spec"]["selector"]["app"]

    facts = Facts(cache, "v1/Service", read)  # type: ignore[arg-type]
    for obj in (service("b"), service("a"), service("c", namespace="other")):
        store.put(obj)
    assert facts.in_namespace("default") == [("a", "web"), ("b", "web")]
    assert facts.all() == [("a", "web"), ("b", "web"), ("c", "web")]
    assert sorted(reads) == ["a", "b", "c"]  # read once each, for both questions
    store.put(service("a", app="db"))
    store.delete("default/b")
    assert facts.in_namespace("default") == [("a", "db")]
    assert sorted(reads) == ["a", "a", "b", "c"]
