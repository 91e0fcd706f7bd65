"""Observers of a manager: every delivered event with the requests it queued, every
reconcile with what queued it and how it ended, and the reads and writes it made, each with
its resourceVersion; and nothing at all while nobody observes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubeforge import Client, NotFound
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.observer import (
    Delivered,
    Read,
    ReconcileFinished,
    ReconcileStarted,
    Record,
    Write,
)
from kubeforge._runtime.reconcile import Reconciler, Request, Result
from kubeforge.client import load_kubeconfig
from kubeforge.testing import eventually
from tests.support.handlers import QueueAfter

CM = "v1/ConfigMap"


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


class Copier(Reconciler):
    """Copies ConfigMap `x` to `x-copy` (once), failing the first pass of `bad`."""

    def __init__(self) -> None:
        self.failed = False

    async def reconcile(self, request: Request) -> Result | None:
        if request.name.endswith("-copy"):
            return None
        source = await self.client.get(CM, request.name, namespace=request.namespace)
        if request.name == "bad" and not self.failed:
            self.failed = True
            raise RuntimeError("first pass fails")
        try:
            await self.client.get(CM, f"{request.name}-copy", namespace=request.namespace)
        except NotFound:
            copy = cm(f"{request.name}-copy", **(source.get("data") or {}))
            await self.client.create(copy, namespace=request.namespace)
        await self.client.api.get(CM, request.name, namespace=request.namespace)
        return Result(requeue_after=3600)


def _reconcile_id(record: Record) -> str | None:
    if isinstance(record, ReconcileStarted | ReconcileFinished):
        return record.context.reconcile_id
    if isinstance(record, Read | Write) and record.reconcile is not None:
        return record.reconcile.reconcile_id
    return None


async def copied(api: Client, name: str) -> bool:
    try:
        await api.get(CM, f"{name}-copy")
    except NotFound:
        return False
    return True


@pytest.fixture
async def running(kubeconfig: Path) -> AsyncIterator[tuple[Manager, list[Record]]]:
    manager = Manager(load_kubeconfig(kubeconfig), field_manager="copier")
    manager.controller().for_(CM).complete(Copier())
    records: list[Record] = []
    manager.add_observer(records.append)
    task = asyncio.create_task(manager.start())
    try:
        await asyncio.wait_for(manager.running.wait(), 10)
        yield manager, records
    finally:
        manager.stop()
        await task


async def test_a_reconcile_is_told_with_its_trigger_reads_and_writes(
    running: tuple[Manager, list[Record]], api: Client
) -> None:
    _, records = running
    created = await api.create(cm("a", greeting="hi"))

    def copied() -> list[Write]:
        return [r for r in records if isinstance(r, Write) and r.name == "a-copy"]

    (write,) = await eventually(copied)
    assert (write.verb, write.kind, write.namespace, write.code) == ("create", CM, "default", 201)
    assert write.field_manager == "copier" and write.error is None
    assert write.resource_version and write.obj is not None
    assert write.obj["data"] == {"greeting": "hi"}
    assert write.reconcile is not None and write.reconcile.name == "a"

    reconcile_id = write.reconcile.reconcile_id
    of_it = [r for r in records if _reconcile_id(r) == reconcile_id]
    started, *steps, finished = of_it
    assert isinstance(started, ReconcileStarted) and isinstance(finished, ReconcileFinished)
    (trigger,) = started.triggers
    assert (trigger.cause, trigger.type, trigger.name) == ("event", "ADDED", "a")
    assert trigger.resource_version == created["metadata"]["resourceVersion"]
    reads = [s for s in steps if isinstance(s, Read)]
    assert [(r.source, r.verb, r.name) for r in reads] == [
        ("cache", "get", "a"),
        ("cache", "get", "a-copy"),
        ("api", "get", "a"),
    ]
    assert reads[0].objects == (("default", "a", created["metadata"]["resourceVersion"]),)
    assert reads[1].objects == () and "not found" in (reads[1].error or "")
    assert (finished.outcome, finished.requeue_after, finished.error) == (
        "requeue_after",
        3600,
        None,
    )

    delivered = [r for r in records if isinstance(r, Delivered) and r.name == "a"]
    assert delivered[0].type == "ADDED" and delivered[0].requests == (Request("default", "a"),)
    assert delivered[0].controller == "configmap" and delivered[0].obj["data"] == {"greeting": "hi"}


async def test_a_failed_reconcile_is_told_and_its_retry_says_why(
    running: tuple[Manager, list[Record]], api: Client
) -> None:
    _, records = running
    await api.create(cm("bad"))

    def finished() -> list[ReconcileFinished]:
        return [r for r in records if isinstance(r, ReconcileFinished) and r.request.name == "bad"]

    await eventually(lambda: len(finished()) >= 2)
    first, second = finished()[:2]
    assert first.outcome == "error" and first.error == "RuntimeError: first pass fails"
    assert second.outcome == "requeue_after"
    retried = [
        r
        for r in records
        if isinstance(r, ReconcileStarted) and r.context.reconcile_id == second.context.reconcile_id
    ]
    assert [t.cause for t in retried[0].triggers] == ["retry"]


async def test_nothing_is_told_without_observers(kubeconfig: Path, api: Client) -> None:
    manager = Manager(load_kubeconfig(kubeconfig))
    reconciler = Copier()
    controller = manager.controller().for_(CM).complete(reconciler)
    records: list[Record] = []
    manager.add_observer(records.append)
    manager.remove_observer(records.append)
    assert not manager.observers and not controller.observers
    # The client is told of no requests once nobody observes.
    assert manager.api_reader._call_observers == ()
    task = asyncio.create_task(manager.start())
    try:
        await asyncio.wait_for(manager.running.wait(), 10)
        await api.create(cm("quiet"))
        await eventually(lambda: copied(api, "quiet"))
    finally:
        manager.stop()
        await task
    assert records == [] and controller._triggers == {}


async def test_an_observer_that_fails_does_not_stop_the_others(
    kubeconfig: Path, api: Client
) -> None:
    manager = Manager(load_kubeconfig(kubeconfig))
    manager.controller().for_(CM).complete(Copier())
    records: list[Record] = []

    def broken(record: Record) -> None:
        raise ValueError("broken observer")

    manager.add_observer(broken)
    manager.add_observer(records.append)
    task = asyncio.create_task(manager.start())
    try:
        await asyncio.wait_for(manager.running.wait(), 10)
        await api.create(cm("b"))
        await eventually(lambda: any(isinstance(r, Write) and r.name == "b-copy" for r in records))
    finally:
        manager.stop()
        await task


def test_a_write_decodes_the_object_it_returned_only_when_it_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer = orjson.dumps(cm("lazy", greeting="hi"))
    decoded: list[bytes] = []
    loads = orjson.loads

    def counted(data: bytes) -> Any:
        decoded.append(data)
        return loads(data)

    monkeypatch.setattr(orjson, "loads", counted)
    write = Write(None, "create", CM, "default", "lazy", "7", "copier", 201, answer=answer)
    assert decoded == []
    assert write.obj == cm("lazy", greeting="hi") and write.obj is write.obj
    assert decoded == [answer]


def later(obj: Any) -> Request:
    """`<name>-later`, queued after each Secret event."""
    meta = obj["metadata"]
    return Request(meta["namespace"], f"{meta['name']}-later")


class Seen(Reconciler):
    def __init__(self) -> None:
        self.names: set[str] = set()

    async def reconcile(self, request: Request) -> Result | None:
        self.names.add(request.name)
        return None


@pytest.mark.parametrize("observed", [False, True], ids=["unobserved", "observed"])
async def test_a_handler_that_queues_after_a_delay_works_observed_or_not(
    kubeconfig: Path, api: Client, observed: bool
) -> None:
    manager = Manager(load_kubeconfig(kubeconfig), field_manager="later")
    seen = Seen()
    manager.controller().for_(CM).watches("v1/Secret", QueueAfter(later)).complete(seen)
    records: list[Record] = []
    if observed:
        manager.add_observer(records.append)
    task = asyncio.create_task(manager.start())
    try:
        await asyncio.wait_for(manager.running.wait(), 10)
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
        await api.create(secret)
        await eventually(lambda: "s-later" in seen.names)
    finally:
        manager.stop()
        await task
    delivered = [r for r in records if isinstance(r, Delivered) and r.kind == "v1/Secret"]
    if observed:
        assert delivered and delivered[0].requests == (Request("default", "s-later"),)
        started = [
            r for r in records if isinstance(r, ReconcileStarted) and r.request.name == "s-later"
        ]
        assert started and [t.name for t in started[0].triggers] == ["s"]
    else:
        assert records == []
