"""Controller options that do what they say, async map functions, generic event sources,
object reconcilers, and the per-reconcile log context."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import kubeforge
import kubeforge.source
import kubeforge.workqueue
from kubeforge import Client
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result, SyncReconciler
from kubeforge.client import load_kubeconfig
from kubeforge.testing import eventually, metric_value

CM = "v1/ConfigMap"
SECRET = "v1/Secret"


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def secret(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}}


class Recorder(Reconciler):
    def __init__(self) -> None:
        self.requests: list[Request] = []

    async def reconcile(self, request: Request) -> Result | None:
        self.requests.append(request)
        return None

    def names(self) -> list[str]:
        return [r.name for r in self.requests]


@pytest.fixture
async def manager(kubeconfig: Path) -> AsyncIterator[Manager]:
    mgr = Manager(load_kubeconfig(kubeconfig))
    yield mgr
    mgr.stop()


async def running(manager: Manager) -> asyncio.Task[None]:
    task = asyncio.create_task(manager.start())
    await eventually(lambda: manager.running.is_set() or task.done())
    return task


async def test_an_async_map_function_maps_events_to_requests(
    manager: Manager, api: Client, caplog: pytest.LogCaptureFixture
) -> None:
    rec = Recorder()
    client = manager.client

    async def secrets_named_in(config: dict[str, Any]) -> list[Request]:
        # An async map function may read the cache.
        wanted = (config.get("data") or {}).get("secret")
        found = await client.list(SECRET, namespace="default")
        return [
            Request("default", s["metadata"]["name"])
            for s in found
            if s["metadata"]["name"] == wanted
        ]

    manager.controller().for_(SECRET).watches(CM, secrets_named_in).complete(rec)
    task = await running(manager)
    try:
        await api.create(secret("target"))
        await eventually(lambda: "target" in rec.names())
        rec.requests.clear()
        with caplog.at_level(logging.ERROR):
            await api.create(cm("pointer", secret="target"))
            await eventually(lambda: "target" in rec.names())
        assert not [r for r in caplog.records if "coroutine" in r.getMessage()]
    finally:
        manager.stop()
        await task


async def test_a_map_function_that_fails_is_logged_with_the_object(
    manager: Manager, api: Client, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(obj: dict[str, Any]) -> list[Request]:
        raise LookupError("nothing to map")

    manager.controller().for_(SECRET).watches(CM, broken).complete(Recorder())
    with pytest.raises(TypeError, match="neither an event handler nor a map function"):
        manager.controller().for_(CM).watches(SECRET, 42)  # type: ignore[arg-type]
    task = await running(manager)
    try:
        with caplog.at_level(logging.ERROR, logger="kubeforge.handler"):
            await api.create(cm("oops"))
            await eventually(
                lambda: any(
                    "broken" in r.getMessage() and "default/oops" in r.getMessage()
                    for r in caplog.records
                )
            )
    finally:
        manager.stop()
        await task


async def test_need_leader_election_false_runs_without_the_lease(
    kubeconfig: Path, api: Client
) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    await api.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "held", "namespace": "default"},
            "spec": {
                "holderIdentity": "someone-else",
                "leaseDurationSeconds": 3600,
                "acquireTime": now,
                "renewTime": now,
            },
        }
    )
    manager = Manager(
        load_kubeconfig(kubeconfig),
        leader_election=True,
        leader_election_id="held",
        leader_election_namespace="default",
        retry_period=0.1,
    )
    everywhere, leader_only = Recorder(), Recorder()
    manager.controller().for_(CM).with_options(need_leader_election=False).complete(everywhere)
    manager.controller().for_(SECRET).complete(leader_only)
    task = asyncio.create_task(manager.start())
    try:
        await api.create(cm("c"))
        await api.create(secret("s"))
        await eventually(lambda: "c" in everywhere.names())
        assert not manager.leading
        assert leader_only.requests == []
        assert not manager.controllers["secret"].started
    finally:
        manager.stop()
        await task


async def test_panics_are_counted_and_recovered_by_default(manager: Manager, api: Client) -> None:
    attempts: list[int] = []

    class Buggy(Reconciler):
        async def reconcile(self, request: Request) -> Result | None:
            attempts.append(1)
            if len(attempts) < 3:
                return {}["missing"]  # a bug: KeyError
            return None

    manager.controller().for_(CM).complete(Buggy())
    task = await running(manager)
    try:
        await api.create(cm("p"))
        await eventually(lambda: len(attempts) == 3)
        labels = {"controller": "configmap"}
        assert metric_value(manager, "controller_runtime_reconcile_panics_total", **labels) == 2
        assert metric_value(manager, "controller_runtime_reconcile_errors_total", **labels) == 2
    finally:
        manager.stop()
        await task


async def test_an_unrecovered_panic_stops_the_manager_with_it(
    manager: Manager, api: Client
) -> None:
    class Buggy(Reconciler):
        async def reconcile(self, request: Request) -> Result | None:
            raise AttributeError("'NoneType' object has no attribute 'spec'")

    ordinary = Recorder()
    manager.controller().for_(CM).with_options(recover_panic=False).complete(Buggy())
    manager.controller().for_(SECRET).complete(ordinary)
    task = await running(manager)
    await api.create(cm("p"))
    with pytest.raises(AttributeError, match="no attribute 'spec'"):
        await asyncio.wait_for(task, 10)
    labels = {"controller": "configmap"}
    assert metric_value(manager, "controller_runtime_reconcile_panics_total", **labels) == 1


async def test_the_builder_sets_the_rate_limiter(manager: Manager, api: Client) -> None:
    times: list[float] = []

    class Failing(Reconciler):
        async def reconcile(self, request: Request) -> Result | None:
            times.append(time.monotonic())
            raise RuntimeError("not yet")

    limiter = kubeforge.workqueue.ItemExponentialBackoff(0.15, 0.15)
    manager.controller().for_(CM).with_options(rate_limiter=limiter).complete(Failing())
    task = await running(manager)
    try:
        await api.create(cm("r"))
        await eventually(lambda: len(times) >= 3)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert all(gap >= 0.14 for gap in gaps), gaps  # the default would retry after 5 ms
        assert manager.controllers["configmap"].queue.rate_limiter is limiter
    finally:
        manager.stop()
        await task


async def test_api_errors_in_the_log_name_the_call_that_failed(
    manager: Manager, api: Client, caplog: pytest.LogCaptureFixture
) -> None:
    class Stale(Reconciler):
        async def reconcile(self, request: Request) -> Result | None:
            obj = await self.client.get(CM, request.name, namespace=request.namespace)
            obj["metadata"]["resourceVersion"] = "1"
            obj["data"] = {"changed": "yes"}
            await self.client.update(obj)
            return None

    manager.controller().for_(CM).complete(Stale())
    task = await running(manager)
    try:
        with caplog.at_level(logging.ERROR, logger="kubeforge.controller"):
            await api.create(cm("stale"))
            record = await eventually(
                lambda: next((r for r in caplog.records if "409" in r.getMessage()), None)
            )
        assert "update ConfigMap default/stale: 409 Conflict" in record.getMessage()
        assert getattr(record, "controller", None) == "configmap"
        assert getattr(record, "object_name", None) == "stale"
    finally:
        manager.stop()
        await task


async def test_a_channel_source_from_another_thread_and_reconcile_all(
    manager: Manager, api: Client
) -> None:
    rec = Recorder()
    channel = kubeforge.source.Channel()
    controller = manager.controller().for_(CM).watches_source(channel).complete(rec)
    await api.create(cm("one"))
    await api.create(cm("two"))
    task = await running(manager)
    try:
        await eventually(lambda: {"one", "two"} <= set(rec.names()))
        rec.requests.clear()
        # An external system says "one" changed, from its own thread.
        sender = threading.Thread(
            target=channel.send,
            args=(cm("one") | {"metadata": {"name": "one", "namespace": "default"}},),
        )
        sender.start()
        sender.join()
        await eventually(lambda: rec.names() == ["one"])
        channel.send(Request("default", "two"))
        await eventually(lambda: "two" in rec.names())
        rec.requests.clear()
        assert controller.reconcile_all() >= 2
        await eventually(lambda: {"one", "two"} <= set(rec.names()))
    finally:
        manager.stop()
        await task


async def test_a_stream_source_maps_external_items_through_a_map_function(
    manager: Manager, api: Client
) -> None:
    rec = Recorder()
    release = asyncio.Event()

    async def external() -> AsyncIterator[dict[str, Any]]:
        await release.wait()
        yield {"metadata": {"name": "build-42"}, "status": "done"}

    def to_config(item: dict[str, Any]) -> list[Request]:
        return [Request("default", f"config-for-{item['metadata']['name']}")]

    manager.controller().for_(CM).watches_source(external(), to_config).complete(rec)
    task = await running(manager)
    try:
        release.set()
        await eventually(lambda: "config-for-build-42" in rec.names())
    finally:
        manager.stop()
        await task


async def test_an_object_reconciler_receives_typed_objects(manager: Manager, api: Client) -> None:
    from kubeforge.models import ConfigMap

    seen: list[ConfigMap] = []

    class Typed(kubeforge.ObjectReconciler[ConfigMap]):
        async def reconcile(self, obj: ConfigMap) -> Result | None:
            seen.append(obj)
            return None

    manager.controller().for_(ConfigMap).complete(Typed())
    task = await running(manager)
    try:
        await api.create(cm("typed", k="v"))
        await eventually(lambda: any(c.metadata.name == "typed" for c in seen))
        assert isinstance(seen[0], ConfigMap) and seen[0].data == {"k": "v"}
        count = len(seen)
        await api.delete(CM, "typed")
        controller = manager.controllers["configmap"]
        await eventually(
            lambda: len(controller.queue) == 0 and not controller.queue.unfinished_work_seconds()
        )
        assert len(seen) == count  # a gone object is not reconciled
    finally:
        manager.stop()
        await task


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.addFilter(kubeforge._runtime.logs.ReconcileContextFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_records_logged_during_a_reconcile_carry_its_context(
    manager: Manager, api: Client
) -> None:
    plain = logging.getLogger("tests.plain-logger")

    class Talkative(Reconciler):
        async def reconcile(self, request: Request) -> Result | None:
            self.log.info("reconciling")
            plain.info("from a module logger")
            return None

    class Threaded(SyncReconciler):
        def reconcile(self, request: Request) -> Result | None:
            plain.info("from a thread")
            return None

    collect = Collect()
    root = logging.getLogger()
    root.addHandler(collect)
    old_level = root.level
    root.setLevel(logging.INFO)
    manager.controller().for_(CM).complete(Talkative())
    manager.controller().for_(SECRET).complete(Threaded())
    task = await running(manager)
    try:
        await api.create(cm("a"))
        await api.create(cm("b"))
        await api.create(secret("s"))

        def said(message: str) -> list[logging.LogRecord]:
            return [r for r in collect.records if r.getMessage() == message]

        await eventually(lambda: len(said("reconciling")) >= 2 and said("from a thread"))
        mine = said("reconciling")
        assert {getattr(r, "controller", None) for r in mine} == {"configmap"}
        assert {getattr(r, "object_kind", None) for r in mine} == {"ConfigMap"}
        objects = {f"{r.__dict__['object_namespace']}/{r.__dict__['object_name']}" for r in mine}
        assert {"default/a", "default/b"} <= objects
        ids = [getattr(r, "reconcile_id", None) for r in mine]
        assert None not in ids and len(set(ids)) == len(ids)  # one id per reconcile
        module = said("from a module logger")
        assert [getattr(r, "reconcile_id", None) for r in module] == ids
        threaded = said("from a thread")
        assert getattr(threaded[0], "controller", None) == "secret"
        assert getattr(threaded[0], "object_name", None) == "s"
    finally:
        root.removeHandler(collect)
        root.setLevel(old_level)
        manager.stop()
        await task
