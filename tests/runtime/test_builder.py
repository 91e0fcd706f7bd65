"""The builder wires for_ / owns / watches / predicates into a running manager."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeforge import Client
from kubeforge._api.meta import GroupVersionKind, ObjectMeta, ResourceInfo
from kubeforge._api.model import Model
from kubeforge._api.resource import Resource
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.predicate import GenerationChanged
from kubeforge._runtime.reconcile import Reconciler, Request, Result
from kubeforge.client import load_kubeconfig
from kubeforge.testing import eventually
from tests.support.crds import widget_crd


class WidgetSpec(Model):
    size: int


class Widget(Resource[WidgetSpec, Model]):
    __kubeforge__ = ResourceInfo(GroupVersionKind("example.com", "v1", "Widget"), "widgets", True)


class Recorder(Reconciler):
    def __init__(self) -> None:
        self.requests: list[Request] = []

    async def reconcile(self, request: Request) -> Result:
        self.requests.append(request)
        return Result()

    def names(self) -> list[str]:
        return [r.name for r in self.requests]


@pytest.fixture
async def manager(kubeconfig: Path, api: Client) -> AsyncIterator[Manager]:
    await api.create(widget_crd())
    await api.wait_established(["widgets.example.com"])
    mgr = Manager(load_kubeconfig(kubeconfig))
    yield mgr
    mgr.stop()


async def run(mgr: Manager) -> asyncio.Task[None]:
    task = asyncio.create_task(mgr.start())

    async def synced() -> bool:
        return mgr.synced and all(c.started for c in mgr.controllers.values())

    await eventually(synced)
    return task


def configmap(name: str, owner: dict[str, Any] | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


async def test_owned_objects_enqueue_their_controller_owner(manager: Manager, api: Client) -> None:
    rec = Recorder()
    manager.controller().for_(Widget).owns("v1/ConfigMap").complete(rec)
    task = await run(manager)
    owner = await api.create(Widget(metadata=ObjectMeta(name="w"), spec=WidgetSpec(size=1)))
    rec.requests.clear()
    await api.create(configmap("child", owner.to_dict()))
    await api.create(configmap("stray"))

    async def owner_reconciled() -> bool:
        return "w" in rec.names()

    await eventually(owner_reconciled)
    assert "stray" not in rec.names() and "child" not in rec.names()
    manager.stop()
    await task


async def test_watches_maps_objects_through_a_typed_function(manager: Manager, api: Client) -> None:
    rec = Recorder()
    seen_types: list[type] = []

    def by_label(cm: dict[str, Any]) -> list[Request]:
        seen_types.append(type(cm))
        target = (cm["metadata"].get("labels") or {}).get("widget")
        return [Request("default", target)] if target else []

    def widgets_to_self(widget: Widget) -> list[tuple[str, str]]:
        seen_types.append(type(widget))
        return [("default", f"mirror-of-{widget.metadata.name}")]

    (manager.controller().for_(Widget).watches("v1/ConfigMap", by_label).complete(rec))
    manager.controller().named("mirror").for_("v1/Secret").watches(
        Widget, widgets_to_self
    ).complete(mirror := Recorder())
    task = await run(manager)
    await api.create(configmap("labelled", widget="target"))

    async def mapped() -> bool:
        return "target" in rec.names()

    await eventually(mapped)
    await api.create(Widget(metadata=ObjectMeta(name="w2"), spec=WidgetSpec(size=2)))

    async def mirrored() -> bool:
        return "mirror-of-w2" in mirror.names()

    await eventually(mirrored)
    assert dict in seen_types and Widget in seen_types
    manager.stop()
    await task


async def test_predicates_filter_events(manager: Manager, api: Client) -> None:
    rec = Recorder()
    manager.controller().for_(Widget, predicates=[GenerationChanged()]).complete(rec)
    task = await run(manager)
    await api.create(Widget(metadata=ObjectMeta(name="w"), spec=WidgetSpec(size=1)))

    async def created() -> bool:
        return rec.names().count("w") == 1

    await eventually(created)
    # A label change does not bump generation, so it is filtered out. The sentinel's event
    # comes after it on the same watch and queue: once the sentinel is reconciled, a
    # reconcile caused by the label change would already have happened.
    await api.patch(Widget, "w", {"metadata": {"labels": {"a": "b"}}})
    await api.create(Widget(metadata=ObjectMeta(name="sentinel"), spec=WidgetSpec(size=1)))

    async def sentinel_seen() -> bool:
        return "sentinel" in rec.names()

    await eventually(sentinel_seen)
    assert rec.names().count("w") == 1
    await api.patch(Widget, "w", {"spec": {"size": 2}})

    async def spec_seen() -> bool:
        return rec.names().count("w") == 2

    await eventually(spec_seen)
    manager.stop()
    await task


async def test_controller_names_are_unique(manager: Manager) -> None:
    manager.controller().for_(Widget).complete(Recorder())
    with pytest.raises(ValueError, match="unique"):
        manager.controller().for_(Widget).complete(Recorder())
    manager.controller().named("widget-two").for_(Widget).complete(Recorder())
    with pytest.raises(ValueError, match="only once"):
        manager.controller().for_(Widget).for_(Widget)
    with pytest.raises(TypeError):
        manager.controller().with_options(workers=3)
