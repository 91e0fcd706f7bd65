"""Sharded replicas in one process: a reconciler that records, across replicas, which objects
each reconciles and whether two ever reconcile one object at once; helpers to start replicas
of a sharded ConfigMap controller against a TestEnv and to read where objects are assigned."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import kubeforge
from kubeforge import clock
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result
from kubeforge._runtime.sharding.labels import drain_label, shard_label
from kubeforge._runtime.sharding.ring import ShardRing
from kubeforge.testing import TestEnv

CM = "v1/ConfigMap"
SECRET = "v1/Secret"
LEASE = "coordination.k8s.io/v1/Lease"


@dataclass
class Probe:
    """Shared by every replica's reconciler: which replica reconciles which object, what it
    saw, and each time two replicas were inside a reconcile of one object at once.

    `work` seconds (of the process's clock) pass inside every reconcile, so that reconciles
    are in flight while objects move; `requeue_after` keeps every object coming back."""

    work: float = 0.0
    requeue_after: float | None = None
    active: dict[str, str] = field(default_factory=dict)
    overlaps: list[tuple[str, str, str]] = field(default_factory=list)
    runs: Counter[str] = field(default_factory=Counter)
    # name -> (replica, the object's `data.value` as that reconcile read it)
    last: dict[str, tuple[str, str]] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)

    def reconciler(self, replica: str, make_secret: bool = False) -> ProbeReconciler:
        return ProbeReconciler(self, replica, make_secret)

    def by_replica(self, names: Iterable[str]) -> Counter[str]:
        """How many of `names` each replica reconciled last."""
        return Counter(self.last[n][0] for n in names if n in self.last)


class ProbeReconciler(Reconciler):
    def __init__(self, probe: Probe, replica: str, make_secret: bool) -> None:
        self.probe = probe
        self.replica = replica
        self.make_secret = make_secret

    async def reconcile(self, request: Request) -> Result | None:
        probe, name = self.probe, request.name
        other = probe.active.get(name)
        if other is not None:
            probe.overlaps.append((name, other, self.replica))
        probe.active[name] = self.replica
        try:
            cm = await self.client.get(CM, name, namespace=request.namespace)
            probe.runs[self.replica] += 1
            probe.last[name] = (self.replica, (cm.get("data") or {}).get("value", ""))
            if self.make_secret:
                await self._own_secret(cm)
            if probe.work:
                await clock.sleep(probe.work)
        finally:
            if probe.active.get(name) == self.replica:
                del probe.active[name]
        if probe.requeue_after:
            return Result(requeue_after=probe.requeue_after)
        return None

    async def _own_secret(self, cm: dict[str, Any]) -> None:
        meta = cm["metadata"]
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        }
        kubeforge.set_controller_reference(cm, secret)
        with contextlib.suppress(kubeforge.AlreadyExists):
            await self.client.create(secret)
            self.probe.owners[meta["name"]] = self.replica


def sharded_setup(
    probe: Probe, replica: str, ring: str, *, owns: bool = False, **options: Any
) -> Callable[[Manager], None]:
    """A setup function: one sharded ConfigMap controller (owning Secrets with `owns`)."""

    def setup(manager: Manager) -> None:
        builder = manager.controller().for_(CM).named(ring)
        if owns:
            builder = builder.owns(SECRET)
        builder.sharded(ring=ring, **options).complete(probe.reconciler(replica, owns))

    return setup


def ring_of(manager: Manager, ring: str) -> ShardRing:
    started_by = manager.controllers[ring].started_by
    assert isinstance(started_by, ShardRing)
    return started_by


@contextlib.asynccontextmanager
async def replica(
    env: TestEnv, probe: Probe, name: str, namespace: str, ring: str, **options: Any
) -> AsyncIterator[Manager]:
    """A replica: a manager in `namespace` (its Leases there too) running the ring."""
    owns = options.pop("owns", False)
    manager_options = {k: options.pop(k) for k in ("release_on_cancel",) if k in options}
    async with env.run_manager(
        sharded_setup(probe, name, ring, owns=owns, **options),
        identity=name,
        namespace=namespace,
        leader_election_namespace=namespace,
        **manager_options,
    ) as manager:
        yield manager


async def create_configmaps(
    client: kubeforge.Client, namespace: str, names: Iterable[str], concurrency: int = 32
) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(name: str) -> None:
        async with gate:
            await client.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": namespace},
                    "data": {"value": "0"},
                }
            )

    await asyncio.gather(*(one(n) for n in names))


async def assignments(
    client: kubeforge.Client, namespace: str, ring: str, kind: str = CM, prefix: str = "obj-"
) -> dict[str, str]:
    """name -> the shard the object is labelled for ("" when none), of the objects named
    with `prefix`."""
    items = await client.list(kind, namespace=namespace)
    label = shard_label(ring)
    return {
        o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get(label, "")
        for o in items
        if o["metadata"]["name"].startswith(prefix)
    }


async def draining(client: kubeforge.Client, namespace: str, ring: str) -> list[str]:
    """The objects carrying the ring's drain label."""
    items = await client.list(CM, namespace=namespace)
    label = drain_label(ring)
    return [o["metadata"]["name"] for o in items if label in (o["metadata"].get("labels") or {})]


async def run_clock(env: TestEnv, seconds: float, step: float = 0.05) -> None:
    """Advance the virtual clock by `seconds`, `step` at a time."""
    assert isinstance(env.clock, clock.VirtualClock)
    for _ in range(round(seconds / step)):
        await env.clock.advance(seconds=step)


async def quiesce(env: TestEnv, probe: Probe) -> None:
    """Let the probe's reconciles end (none comes back): a manager stopped while one waits for
    the virtual clock would wait out its graceful shutdown timeout in real time."""
    probe.requeue_after = None
    for _ in range(100):
        if not probe.active:
            return
        await run_clock(env, 0.25)
    raise AssertionError(f"reconciles still running: {probe.active}")
