"""The cache reads its own writes: a reconcile sees what the previous one wrote, so the common
pattern (create an owned ConfigMap, then set the status) converges in the fewest requests,
without conflicts, even for objects that exist before the manager starts."""

from __future__ import annotations

import asyncio
import copy
import logging
from pathlib import Path
from typing import Any

import pytest

from kubeforge import Client, Conflict, NotFound
from kubeforge._runtime.cache import Cache
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result
from kubeforge.client import load_kubeconfig
from kubeforge.testing import eventually, metric_value
from tests.support.crds import widget_crd

WIDGET = "example.com/v1/Widget"
CM = "v1/ConfigMap"
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def widget(name: str, size: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": size},
    }


class ConfigMapAndStatus(Reconciler):
    """The pattern every tutorial teaches: read the object, create its ConfigMap when it is
    missing (update it when it differs), then record the status when it changed."""

    async def reconcile(self, request: Request) -> Result | None:
        try:
            obj = await self.client.get(WIDGET, request.name, namespace=request.namespace)
        except NotFound:
            return None
        want = {"size": str(obj["spec"]["size"])}
        try:
            config = await self.client.get(
                CM, f"{request.name}-config", namespace=request.namespace
            )
        except NotFound:
            owner = {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "name": request.name,
                "uid": obj["metadata"]["uid"],
                "controller": True,
            }
            config = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"{request.name}-config",
                    "namespace": request.namespace,
                    "ownerReferences": [owner],
                },
                "data": want,
            }
            await self.client.create(config)
        else:
            if config.get("data") != want:
                config["data"] = want
                await self.client.update(config)
        status = {"phase": "Ready", "replicas": obj["spec"]["size"]}
        if obj.get("status") != status:
            obj["status"] = status
            await self.client.update_status(obj)
        return None


def requests(manager: Manager, code: str | None = None) -> dict[str, int]:
    counts: dict[str, int] = {}
    for method in ("GET", *WRITES):
        labels = {"method": method} if code is None else {"method": method, "code": code}
        total = 0
        for family in manager.metrics.registry.collect():
            for sample in family.samples:
                if sample.name == "rest_client_requests_total" and all(
                    sample.labels.get(k) == v for k, v in labels.items()
                ):
                    total += int(sample.value)
        counts[method] = total
    return counts


@pytest.fixture
async def widgets(api: Client) -> None:
    await api.create(widget_crd())
    await api.wait_established(["widgets.example.com"])


async def test_pre_existing_objects_converge_in_two_writes_each_without_conflicts(
    kubeconfig: Path, api: Client, widgets: None, caplog: pytest.LogCaptureFixture
) -> None:
    count = 60
    await asyncio.gather(*(api.create(widget(f"w{i:03}", 1 + i % 5)) for i in range(count)))
    manager = Manager(load_kubeconfig(kubeconfig))
    controller = manager.controller().for_(WIDGET).owns(CM).complete(ConfigMapAndStatus())
    task = asyncio.create_task(manager.start())
    try:
        with caplog.at_level(logging.WARNING):

            async def converged() -> bool:
                done = await api.list(WIDGET)
                configs = await api.list(CM)
                return (
                    all((w.get("status") or {}).get("phase") == "Ready" for w in done)
                    and len(configs) == count
                    and len(controller.queue) == 0
                    and controller.queue.unfinished_work_seconds() == 0
                )

            await eventually(converged, timeout=30)
            # Let the watch deliver the last writes' events and their reconciles run.
            informer = manager.cache.informer_for(WIDGET)
            latest = (await api.list(WIDGET)).resource_version

            async def caught_up() -> bool:
                return (
                    int(informer.last_resource_version or 0) >= int(latest)
                    and len(controller.queue) == 0
                    and controller.queue.unfinished_work_seconds() == 0
                )

            await eventually(caught_up)
        writes = requests(manager)
        conflicts = sum(requests(manager, "409").values())
        # One ConfigMap created and one status written per object: nothing more.
        assert writes["POST"] == count, writes
        assert writes["PUT"] == count, writes
        assert writes["PATCH"] == writes["DELETE"] == 0, writes
        assert conflicts == 0
        assert metric_value(manager, "controller_runtime_reconcile_errors_total") == 0
        assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    finally:
        manager.stop()
        await task


async def test_a_read_after_a_write_sees_the_write_before_its_watch_event(api: Client) -> None:
    cache = Cache(api)
    informer = cache.informer_for(CM)
    await cache.start()
    try:
        assert await cache.wait_for_sync(10)
        created = await api.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mine"}}
        )
        # No await between the write and the read: the watch cannot have delivered yet.
        assert (
            cache.get(CM, "mine", namespace="default")["metadata"]["uid"]
            == (created["metadata"]["uid"])
        )
        stale = copy.deepcopy(created)
        created["data"] = {"k": "v"}
        await api.update(created)
        assert cache.get(CM, "mine", namespace="default")["data"] == {"k": "v"}
        with pytest.raises(Conflict):
            await api.update(stale)  # a failed write changes nothing in the cache
        assert cache.get(CM, "mine", namespace="default")["data"] == {"k": "v"}
        await api.delete(CM, "mine")
        with pytest.raises(NotFound):
            cache.get(CM, "mine", namespace="default")
        dry = await api.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}}, dry_run=True
        )
        assert dry["metadata"]["name"] == "dry"
        with pytest.raises(NotFound):
            cache.get(CM, "dry", namespace="default")  # a dry run stored nothing
        await eventually(
            lambda: "default/mine" not in informer.store and not informer.unconfirmed_writes
        )
    finally:
        await cache.stop()


class Events:
    """A handler that keeps (event, name, data) triples."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Any]] = []

    def on_add(self, obj: dict[str, Any], initial: bool) -> None:
        self.seen.append(("add", obj["metadata"]["name"], obj.get("data")))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.seen.append(("update", new["metadata"]["name"], (old.get("data"), new.get("data"))))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.seen.append(("delete", obj["metadata"]["name"], obj.get("data")))


async def test_handlers_still_hear_of_every_change_a_write_made(api: Client) -> None:
    cache = Cache(api)  # observes the client's writes, feeding the informers it holds
    shared = cache.informer_for(CM)
    events = Events()
    shared.add_handler(events)
    await cache.start()
    try:
        assert await cache.wait_for_sync(10)
        created = await api.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"n": "1"}}
        )
        created["data"] = {"n": "2"}
        await api.update(created)
        await api.delete(CM, "x")

        async def heard() -> bool:
            return len(events.seen) == 3

        await eventually(heard)
        # In order, each with the version handlers saw before as the old object.
        assert events.seen == [
            ("add", "x", {"n": "1"}),
            ("update", "x", ({"n": "1"}, {"n": "2"})),
            ("delete", "x", {"n": "2"}),
        ]
    finally:
        await cache.stop()


async def test_an_older_watch_event_does_not_replace_a_newer_write(api: Client) -> None:
    cache = Cache(api)
    informer = cache.informer_for(CM)
    await cache.start()
    try:
        assert await cache.wait_for_sync(10)
        first = await api.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}, "data": {"n": "1"}}
        )
        for n in range(2, 6):
            first["data"] = {"n": str(n)}
            await api.update(first)
            # Whatever the watch delivered so far, the cache never goes back.
            assert cache.get(CM, "y", namespace="default")["data"] == {"n": str(n)}
        latest = first["metadata"]["resourceVersion"]

        async def confirmed() -> bool:
            return informer.last_resource_version == latest and not informer.unconfirmed_writes

        await eventually(confirmed)
        assert cache.get(CM, "y", namespace="default")["data"] == {"n": "5"}
    finally:
        await cache.stop()
