"""Plain `def` reconcilers get everything async ones do: events, upserts, finalizers,
conditions, object reconcilers; and a thread that overruns its timeout keeps its key."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import kubeforge
import kubeforge.events
from kubeforge import Client, NotFound
from kubeforge._runtime.cache import Cache
from kubeforge._runtime.cached_client import CachedClient, SyncClient
from kubeforge._runtime.controller import Controller, ControllerOptions
from kubeforge._runtime.handler import EnqueueRequestForObject
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Request, Result, SyncReconciler
from kubeforge.client import load_kubeconfig
from kubeforge.testing import eventually

CM = "v1/ConfigMap"
EVENTS = "events.k8s.io/v1/Event"
FINALIZER = "example.com/cleanup"


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


@pytest.fixture
async def manager(kubeconfig: Path) -> AsyncIterator[Manager]:
    mgr = Manager(load_kubeconfig(kubeconfig))
    yield mgr
    mgr.stop()


async def started(manager: Manager) -> asyncio.Task[None]:
    task = asyncio.create_task(manager.start())
    await eventually(lambda: manager.running.is_set())
    return task


async def test_events_recorded_by_a_def_reconciler_are_written(
    manager: Manager, api: Client, caplog: pytest.LogCaptureFixture
) -> None:
    class Announcer(SyncReconciler):
        def __init__(self, events: kubeforge.events.EventRecorder) -> None:
            self.events = events

        def reconcile(self, request: Request) -> Result | None:
            obj = self.client.get(CM, request.name, namespace=request.namespace)
            self.events.record(obj, "Normal", "Seen", f"saw {request.name}")
            return None

    manager.controller().for_(CM).complete(Announcer(manager.event_recorder("announcer")))
    task = await started(manager)
    try:
        with caplog.at_level(logging.WARNING, logger="kubeforge.events"):
            await api.create(cm("hello"))

            async def written() -> list[dict[str, Any]]:
                events = await api.list(EVENTS)
                return [e for e in events if e["regarding"]["name"] == "hello"]

            found = await eventually(written)
        assert found[0]["reason"] == "Seen" and found[0]["note"] == "saw hello"
        assert found[0]["reportingController"] == "announcer"
        assert not [r for r in caplog.records if "not recorded" in r.getMessage()]
    finally:
        manager.stop()
        await task


async def test_a_def_reconciler_uses_upserts_finalizers_and_conditions(
    manager: Manager, api: Client
) -> None:
    cleaned: list[str] = []

    class Keeper(SyncReconciler):
        def reconcile(self, request: Request) -> Result | None:
            try:
                source = self.client.get(CM, request.name, namespace=request.namespace)
            except NotFound:
                return None
            if request.name.endswith("-copy"):
                return None

            def apply(obj: dict[str, Any]) -> Result | None:
                copy = cm(f"{request.name}-copy")
                copy["metadata"]["namespace"] = request.namespace

                def fill(target: dict[str, Any]) -> None:
                    target["data"] = dict(obj.get("data") or {})
                    conditions: list[Any] = []
                    kubeforge.set_status_condition(
                        conditions,
                        {"type": "Copied", "status": "True", "reason": "Done", "message": ""},
                    )
                    target.setdefault("metadata", {})["annotations"] = {
                        "copied": conditions[0]["status"]
                    }

                kubeforge.create_or_update(self.client, copy, fill)
                assert copy["metadata"].get("uid"), "the object given is the one stored"
                return None

            def cleanup(obj: dict[str, Any]) -> Result | None:
                cleaned.append(obj["metadata"]["name"])
                return None

            return kubeforge.with_finalizer(
                self.client, source, FINALIZER, apply=apply, cleanup=cleanup
            )

    manager.controller().for_(CM).complete(Keeper())
    task = await started(manager)
    try:
        await api.create(cm("orig", k="v"))

        async def copied() -> bool:
            try:
                copy = await api.get(CM, "orig-copy")
                orig = await api.get(CM, "orig")
            except NotFound:
                return False
            return (
                copy.get("data") == {"k": "v"}
                and copy["metadata"]["annotations"] == {"copied": "True"}
                and orig["metadata"].get("finalizers") == [FINALIZER]
            )

        await eventually(copied)
        await api.delete(CM, "orig")

        async def gone() -> bool:
            try:
                await api.get(CM, "orig")
            except NotFound:
                return True
            return False

        await eventually(gone)
        assert cleaned == ["orig"]
    finally:
        manager.stop()
        await task


async def test_a_def_object_reconciler_gets_the_object_and_never_a_missing_one(
    manager: Manager, api: Client
) -> None:
    seen: list[tuple[str, str]] = []

    class Lister(kubeforge.SyncObjectReconciler[dict[str, Any]]):
        def reconcile(self, obj: dict[str, Any]) -> Result | None:
            seen.append((obj["metadata"]["name"], obj["data"]["k"]))
            return None

    manager.controller().for_(CM).complete(Lister())
    task = await started(manager)
    try:
        await api.create(cm("a", k="1"))
        await eventually(lambda: ("a", "1") in seen)
        await api.delete(CM, "a")
        controller = manager.controllers["configmap"]
        await eventually(
            lambda: len(controller.queue) == 0 and not controller.queue.unfinished_work_seconds()
        )
        assert seen == [("a", "1")]  # the delete's request found nothing, and was done
    finally:
        manager.stop()
        await task


async def test_a_thread_that_overruns_its_timeout_keeps_its_key(api: Client) -> None:
    lock = threading.Lock()
    running: set[str] = set()
    overlaps: list[str] = []
    spans: list[tuple[float, float]] = []

    class Slow(SyncReconciler):
        def reconcile(self, request: Request) -> Result | None:
            with lock:
                if request.name in running:
                    overlaps.append(request.name)
                running.add(request.name)
                first = not spans
            began = time.monotonic()
            if first:
                time.sleep(0.4)  # far beyond the timeout; a thread cannot be interrupted
            with lock:
                running.discard(request.name)
                spans.append((began, time.monotonic()))
            return None

    cache = Cache(api)
    reconciler = Slow()
    reconciler.client = SyncClient(CachedClient(api, cache), asyncio.get_running_loop())
    controller = Controller(
        "slow",
        reconciler,
        options=ControllerOptions(reconcile_timeout=0.05, max_concurrent_reconciles=4),
    )
    controller.watch(cache.informer_for(CM), EnqueueRequestForObject())
    await cache.start()
    await controller.start()
    try:
        await api.create(cm("busy"))
        await eventually(lambda: len(spans) >= 2, timeout=10)
        assert overlaps == []
        first, second = spans[0], spans[1]
        assert second[0] >= first[1]  # the retry began only once the first thread returned
        text = controller.metrics.render()[0].decode()
        assert 'controller_runtime_reconcile_timeouts_total{controller="slow"} 1' in text
    finally:
        await controller.stop()
        await cache.stop()


async def test_a_sync_client_call_from_the_event_loop_is_refused(api: Client) -> None:
    cache = Cache(api)
    sync = SyncClient(CachedClient(api, cache), asyncio.get_running_loop())
    cache.informer_for(CM)
    with pytest.raises(RuntimeError, match="would wait for itself"):
        sync.get(CM, "anything")
