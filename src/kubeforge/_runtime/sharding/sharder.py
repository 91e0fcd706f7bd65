"""The sharder: assigns a ring's objects to its live shards, and moves them when the shards
change. It runs in every replica of the ring and works in the one that leads its election.

kubernetes-controller-sharding's sharder (pkg/controller/sharder, pkg/controller/shardlease,
pkg/webhook/sharder) is the design, with one change: objects are assigned on first sight rather
than by a mutating webhook at admission (decision 60). What it watches:

- the ring's shard Leases (a handful of objects): a shard that joins or leaves, or whose Lease
  expires, changes the ring;
- per kind of the ring, only the objects that carry no shard label (a metadata-only watch with
  the selector `!shard.alpha.sharding.timebertt.dev/<ring>`): normally none, so its cost does
  not grow with the objects, as upstream's webhook design avoids watching them. An object
  appears there when created, or when its shard let it go after a drain; the sharder labels it
  for the shard its key hashes to (hashing.py).

When the available shards change (and every `resync_period`), it lists the ring's objects'
metadata page by page and, for each object not on the shard its key hashes to:

- on a live shard (and not owned): sets the drain label, once; the shard acknowledges by
  removing both labels (shard.py) and the object reappears above, unassigned;
- on a shard that is gone, or owned (owned objects follow their owner and are never
  reconciled themselves): labels it for its new shard at once;
- unassigned: labels it.

Every write carries the resourceVersion read (a merge patch with `metadata.resourceVersion`), so
nothing acts on an object changed since. A Lease whose term has passed is taken over
(`holderIdentity` set to the sharder's), making its shard dead: only then do its objects move,
and a shard that comes back cannot renew it. Dead shards' Leases are deleted a minute later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubeforge import clock
from kubeforge._api.machinery.access import labels_of, meta_of
from kubeforge._api.machinery.timestamps import now_micro_time
from kubeforge._api.meta import GroupVersionKind
from kubeforge._client.client import Client
from kubeforge._client.errors import Conflict, NotFound
from kubeforge._runtime.informer import HandlerFuncs, Informer
from kubeforge._runtime.leaderelection import LEASE_KIND
from kubeforge._runtime.sharding.hashing import HashRing, controller_key, object_key
from kubeforge._runtime.sharding.labels import (
    RING_LABEL,
    SHARDER_IDENTITY,
    drain_label,
    shard_label,
)
from kubeforge._runtime.sharding.leases import Shard, ShardState, shards_of
from kubeforge._runtime.sharding.metrics import ShardingMetrics

__all__ = ["RingKind", "RingSpec", "Sharder"]

log = logging.getLogger("kubeforge.sharding")

PAGE_SIZE: Final = 500
RETRY_AFTER: Final = 1.0
"""Seconds before a write that failed for another reason than a conflict is tried again."""
_MIN_WAIT = 0.001


@dataclass(frozen=True)
class RingKind:
    """A kind whose objects the ring shards: `controlled` ones (the controller's owned kinds)
    follow their controller owner. `namespaces` and `label_selector` are what the controller
    caches of the kind (None: all namespaces; no selector)."""

    gvk: GroupVersionKind
    controlled: bool = False
    namespaces: tuple[str, ...] | None = None
    label_selector: str | None = None


@dataclass(frozen=True)
class RingSpec:
    """A ring: its name, the namespace of its Leases, the kinds it shards."""

    name: str
    namespace: str
    kinds: tuple[RingKind, ...]


@dataclass(frozen=True, slots=True)
class _Action:
    """One write: label `name` for `target` (assign or move) or drain it off `source`."""

    kind: RingKind
    namespace: str
    name: str
    version: str
    source: str
    target: str
    drain: bool


def _selector(*terms: str | None) -> str:
    return ",".join(term for term in terms if term)


def _counted(shards: Mapping[str, Shard]) -> list[ShardState]:
    return [shard.state for shard in shards.values()]


class Sharder:
    """The sharder of one ring; `run()` works until cancelled (while its replica leads)."""

    def __init__(
        self,
        client: Client,
        ring: RingSpec,
        metrics: ShardingMetrics,
        *,
        resync_period: float = 300.0,
        settle_period: float = 15.0,
        concurrency: int = 32,
    ) -> None:
        self.client = client
        self.ring = ring
        self.metrics = metrics
        self.resync_period = resync_period
        # After a resync that moved anything, the next comes this soon: it finds what the
        # moves left behind (owned objects created meanwhile, writes that conflicted).
        self.settle_period = settle_period
        self.concurrency = concurrency
        self.shard_label = shard_label(ring.name)
        self.drain_label = drain_label(ring.name)
        self._wake = asyncio.Event()
        self._pending: set[tuple[int, str]] = set()
        self._retry_at: float | None = None
        self._leases: Informer | None = None
        self._unassigned: list[Informer] = []
        self._semaphore = asyncio.Semaphore(concurrency)
        # The shards as last computed (for tests and the metrics).
        self.shards: dict[str, Shard] = {}
        self.available: frozenset[str] = frozenset()
        self.resyncs = 0

    # watching -----------------------------------------------------------------------------

    def _informers(self) -> tuple[Informer, list[Informer]]:
        leases = Informer(
            self.client,
            LEASE_KIND,
            namespace=self.ring.namespace,
            label_selector=f"{RING_LABEL}={self.ring.name}",
            resync_period=None,
        )
        leases.add_handler(
            HandlerFuncs(
                add=lambda _o, _i: self._wake.set(),
                update=lambda _o, _n: self._wake.set(),
                delete=lambda _o: self._wake.set(),
            )
        )
        unassigned = []
        for index, kind in enumerate(self.ring.kinds):
            informer = Informer(
                self.client,
                str(kind.gvk),
                namespaces=kind.namespaces,
                label_selector=_selector(kind.label_selector, "!" + self.shard_label),
                metadata_only=True,
                resync_period=None,
            )
            informer.add_handler(
                HandlerFuncs(
                    add=lambda obj, _i, i=index: self._seen(i, obj),  # type: ignore[misc]
                    update=lambda _old, new, i=index: self._seen(i, new),  # type: ignore[misc]
                )
            )
            unassigned.append(informer)
        return leases, unassigned

    def _seen(self, index: int, obj: Mapping[str, Any]) -> None:
        meta = meta_of(obj)
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        self._pending.add((index, f"{namespace}/{name}" if namespace else name))
        self._wake.set()

    # the loop ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Assign and move the ring's objects until cancelled."""
        leases, unassigned = self._informers()
        self._leases, self._unassigned = leases, unassigned
        informers = [leases, *unassigned]
        for informer in informers:
            informer.start()
        try:
            for informer in informers:
                await informer.synced.wait()
            log.info("sharder of ring %s started", self.ring.name)
            await self._loop(leases)
        finally:
            await asyncio.gather(*(i.stop() for i in informers), return_exceptions=True)
            self._leases, self._unassigned = None, []

    async def _loop(self, leases: Informer) -> None:
        members: frozenset[str] | None = None
        next_resync = clock.time()
        while True:
            self._wake.clear()
            now = clock.time()
            shards = shards_of((lease for _, lease in _stored(leases)), now)
            shards = await self._take_over(shards, leases)
            available = frozenset(n for n, s in shards.items() if s.state.available)
            self.shards, self.available = shards, available
            self.metrics.count_shards(self.ring.name, _counted(shards))
            ring = HashRing(available)
            if available != members:
                members = available
                self.metrics.ring_calculations_total.labels(self.ring.name).inc()
                log.info("ring %s: available shards %s", self.ring.name, sorted(available))
                next_resync = now
            if ring and clock.time() >= next_resync:
                changed = await self._resync(ring, shards)
                self.resyncs += 1
                period = self.settle_period if changed else self.resync_period
                next_resync = clock.time() + period
            if self._retry_at is not None and clock.time() >= self._retry_at:
                self._retry_at = None
            if ring and self._pending and self._retry_at is None:
                await self._assign_pending(ring, shards)
            await self._sleep(shards, next_resync)

    async def _sleep(self, shards: Mapping[str, Shard], next_resync: float) -> None:
        """Until something changes: an event, a Lease's term, the next resync or retry."""
        if self._wake.is_set():
            return
        times = [next_resync, *(t for s in shards.values() if (t := s.next_change()) is not None)]
        if self._retry_at is not None:
            times.append(self._retry_at)
        delay = max(min(times) - clock.time(), _MIN_WAIT)
        with contextlib.suppress(TimeoutError):
            await clock.wait_for(self._wake.wait(), delay)

    # Leases -------------------------------------------------------------------------------

    async def _take_over(self, shards: dict[str, Shard], leases: Informer) -> dict[str, Shard]:
        """Take over expired Leases (their shards are dead then) and delete orphaned ones."""
        result = dict(shards)
        for name, shard in shards.items():
            if shard.state not in (ShardState.EXPIRED, ShardState.ORPHANED):
                continue
            key = f"{self.ring.namespace}/{name}"
            lease = leases.store.get(key)
            if lease is None:
                continue
            try:
                if shard.state is ShardState.ORPHANED:
                    await self.client.delete(LEASE_KIND, name, namespace=self.ring.namespace)
                    del result[name]
                    log.info(
                        "ring %s: deleted the Lease of orphaned shard %s", self.ring.name, name
                    )
                    continue
                spec = dict(lease.get("spec") or {})
                now = now_micro_time()
                spec.update(
                    holderIdentity=SHARDER_IDENTITY,
                    acquireTime=now,
                    renewTime=now,
                    leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1,
                )
                updated = await self.client.update({**lease, "spec": spec})
            except NotFound:
                result.pop(name, None)
                continue
            except Conflict:
                continue  # renewed at the last moment, or changed: the watch says how
            except Exception as exc:
                log.warning("ring %s: could not take over shard %s: %s", self.ring.name, name, exc)
                self._retry_at = clock.time() + RETRY_AFTER
                continue
            log.info("ring %s: shard %s expired; its Lease is taken over", self.ring.name, name)
            result[name] = shards_of([updated], clock.time())[name]
        return result

    # assigning and moving ----------------------------------------------------------------

    def _action(
        self, kind: RingKind, obj: Mapping[str, Any], ring: HashRing, shards: Mapping[str, Shard]
    ) -> _Action | None:
        """What to do about one object (its metadata), if anything."""
        meta = meta_of(obj)
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        key = controller_key(obj) if kind.controlled else object_key(kind.gvk, namespace, name)
        if key is None:
            return None
        target = ring.shard_for(key)
        labels = labels_of(obj)
        source = labels.get(self.shard_label) or ""
        if target is None or target == source:
            return None
        version = str(meta.get("resourceVersion") or "")
        current = shards.get(source)
        live = current is not None and current.state.available
        if source and live and not kind.controlled:
            if self.drain_label in labels:
                return None  # asked already: the shard acknowledges once it is done with it
            return _Action(kind, namespace, name, version, source, target, True)
        return _Action(kind, namespace, name, version, source, target, False)

    async def _assign_pending(self, ring: HashRing, shards: Mapping[str, Shard]) -> None:
        pending, self._pending = self._pending, set()
        actions = []
        for index, key in pending:
            obj = self._unassigned[index].store.get(key)
            if obj is None:
                continue  # labelled or deleted since
            action = self._action(self.ring.kinds[index], obj, ring, shards)
            if action is not None:
                actions.append((action, index, key))
        results = await asyncio.gather(*(self._write(a) for a, _, _ in actions))
        retry = {
            (index, key) for (_, index, key), ok in zip(actions, results, strict=True) if ok is None
        }
        if retry:
            self._pending |= retry
            self._retry_at = clock.time() + RETRY_AFTER

    async def _resync(self, ring: HashRing, shards: Mapping[str, Shard]) -> bool:
        """Bring every object of the ring onto its shard; True when anything was written."""
        changed = False
        for kind in self.ring.kinds:
            for namespace in kind.namespaces or (None,):
                async for page in self.client.list_pages(
                    str(kind.gvk),
                    namespace=namespace,
                    all_namespaces=namespace is None,
                    label_selector=kind.label_selector,
                    page_size=PAGE_SIZE,
                    metadata_only=True,
                ):
                    actions = [a for o in page.items if (a := self._action(kind, o, ring, shards))]
                    if actions:
                        changed = True
                        await asyncio.gather(*(self._write(a) for a in actions))
        return changed

    async def _write(self, action: _Action) -> bool | None:
        """Carry out one action: True when written, False when the object changed or went
        (its next event or the next resync decides again), None on another error."""
        labels: dict[str, str | None]
        if action.drain:
            labels = {self.drain_label: "true"}
        else:
            labels = {self.shard_label: action.target, self.drain_label: None}
        patch = {"metadata": {"resourceVersion": action.version, "labels": labels}}
        async with self._semaphore:
            try:
                await self.client.patch(
                    str(action.kind.gvk),
                    action.name,
                    patch,
                    namespace=action.namespace or None,
                )
            except (Conflict, NotFound):
                return False
            except Exception as exc:
                log.warning(
                    "ring %s: could not label %s %s: %s",
                    self.ring.name,
                    action.kind.gvk.kind,
                    action.name,
                    exc,
                )
                return None
        kind, ring = action.kind.gvk.kind, self.ring.name
        if action.drain:
            self.metrics.drains_total.labels(ring, action.source, kind).inc()
            return True
        if action.source:
            self.metrics.movements_total.labels(ring, action.source, kind).inc()
        self.metrics.assignments_total.labels(ring, action.target, kind).inc()
        return True


def _stored(informer: Informer) -> Iterable[tuple[str, dict[str, Any]]]:
    for key in list(informer.store.keys()):
        obj = informer.store.get(key)
        if obj is not None:
            yield key, obj
