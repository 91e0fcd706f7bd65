"""Predicates and event handlers on plain objects."""

from __future__ import annotations

from typing import Any

from kubeforge._api.meta import GroupVersionKind
from kubeforge._runtime.handler import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
)
from kubeforge._runtime.predicate import (
    AnnotationsChanged,
    Funcs,
    GenerationChanged,
    LabelsChanged,
    LabelSelectorPredicate,
    ResourceVersionChanged,
    all_of,
    any_of,
    negate,
)
from kubeforge._runtime.reconcile import Request
from kubeforge._runtime.workqueue import LOW_PRIORITY


def obj(
    name: str = "a", *, gen: int = 1, rv: str = "1", ns: str = "ns", **meta: Any
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "generation": gen,
            "resourceVersion": rv,
            **meta,
        }
    }


class Queue:
    def __init__(self) -> None:
        self.added: list[tuple[Request, int]] = []

    def add(self, item: Request, priority: int = 0) -> None:
        self.added.append((item, priority))


def test_metadata_predicates() -> None:
    assert GenerationChanged().update(obj(gen=1), obj(gen=2))
    assert not GenerationChanged().update(obj(gen=1, rv="1"), obj(gen=1, rv="2"))
    assert ResourceVersionChanged().update(obj(rv="1"), obj(rv="2"))
    assert not ResourceVersionChanged().update(obj(rv="1"), obj(rv="1"))
    assert LabelsChanged().update(obj(labels={"a": "1"}), obj(labels={"a": "2"}))
    assert not LabelsChanged().update(obj(), obj(labels={}))
    assert AnnotationsChanged().update(obj(), obj(annotations={"x": "y"}))
    selector = LabelSelectorPredicate("app=web")
    assert selector.create(obj(labels={"app": "web"}))
    assert not selector.delete(obj(labels={"app": "db"}))


def test_combinators_and_funcs() -> None:
    only_b = Funcs(on_create=lambda o: o["metadata"]["name"] == "b")
    assert only_b.create(obj("b")) and not only_b.create(obj("a"))
    assert only_b.update(obj(), obj())  # missing functions accept
    both = all_of(GenerationChanged(), LabelsChanged())
    assert not both.update(obj(gen=1), obj(gen=2))
    either = any_of(GenerationChanged(), LabelsChanged())
    assert either.update(obj(gen=1), obj(gen=2))
    assert negate(only_b).create(obj("a"))


def test_object_handler_priorities() -> None:
    q = Queue()
    handler = EnqueueRequestForObject()
    handler.create(obj("a"), q, True)
    handler.create(obj("b"), q, False)
    handler.update(obj("c", rv="5"), obj("c", rv="5"), q)  # a resync
    handler.update(obj("d", rv="5"), obj("d", rv="6"), q)
    assert q.added == [
        (Request("ns", "a"), LOW_PRIORITY),
        (Request("ns", "b"), 0),
        (Request("ns", "c"), LOW_PRIORITY),
        (Request("ns", "d"), 0),
    ]


def owned(
    name: str, owner: str, *, controller: bool = True, kind: str = "Machine"
) -> dict[str, Any]:
    ref = {"apiVersion": "useless.example/v1", "kind": kind, "name": owner, "uid": owner + "-uid"}
    if controller:
        ref["controller"] = True
    return obj(name, ownerReferences=[ref])


def test_owner_handler_follows_controller_references() -> None:
    q = Queue()
    gvk = GroupVersionKind("useless.example", "v1", "Machine")
    EnqueueRequestForOwner(gvk).create(owned("s1", "m1"), q, False)
    EnqueueRequestForOwner(gvk).create(owned("s2", "m2", controller=False), q, False)
    EnqueueRequestForOwner(gvk).create(owned("s3", "m3", kind="Other"), q, False)
    EnqueueRequestForOwner(gvk, only_controller=False).create(
        owned("s4", "m4", controller=False), q, False
    )
    assert [r.name for r, _ in q.added] == ["m1", "m4"]
    q.added.clear()
    # A child moved to another owner: both hear about it.
    EnqueueRequestForOwner(gvk).update(owned("s1", "m1"), owned("s1", "m2"), q)
    assert [r.name for r, _ in q.added] == ["m1", "m2"]


def test_map_function_handler_accepts_pairs_and_requests() -> None:
    q = Queue()
    handler = EnqueueRequestsFromMapFunc(
        lambda o: [("x", o["metadata"]["name"]), Request("y", "z")]
    )
    handler.delete(obj("a"), q)
    assert [r for r, _ in q.added] == [Request("x", "a"), Request("y", "z")]
