"""A sharded controller in one replica: its shard Lease, its share of the cache, its place in
the sharder's election. `Builder.sharded()` is the way in (decision 60).

Each replica of the manager holds a shard Lease in the ring (named after the controller unless
given), labelled with the ring's name, whose name and holder are the shard's name; the
controller runs only while that Lease is held, in place of the manager's leader election. Its
informers of the ring's kinds (the for_ kind and the owned kinds) select only the objects
labelled for this shard. A replica that cannot renew its shard Lease stops the controller at
once, cancelling what it reconciles, and the manager stops with LeadershipLost, as it does when
it loses its leader Lease. A graceful stop lets in-flight reconciles finish, then hands the Lease
back, so the sharder moves the shard's objects at once.

Every replica also campaigns for the ring's sharder Lease; the one that leads runs the
Sharder (sharder.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import weakref
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypedDict, cast

from kubeforge import clock
from kubeforge._api.meta import GroupVersionKind
from kubeforge._client.client import Client, KindLike
from kubeforge._runtime.cache import Cache, kind_key
from kubeforge._runtime.controller import Controller
from kubeforge._runtime.leaderelection import LeaderElector, LeadershipLost
from kubeforge._runtime.metrics import Metrics
from kubeforge._runtime.predicate import Predicate
from kubeforge._runtime.reconcile import Reconciler, SyncReconciler
from kubeforge._runtime.sharding.labels import (
    RING_LABEL,
    ring_name_problems,
    shard_label,
    shard_name,
    sharder_lease_name,
)
from kubeforge._runtime.sharding.metrics import ShardingMetrics
from kubeforge._runtime.sharding.shard import (
    DrainOrPredicates,
    Membership,
    ShardedReconciler,
    SyncShardedReconciler,
)
from kubeforge._runtime.sharding.sharder import RingKind, RingSpec, Sharder

__all__ = ["ShardHost", "ShardRing", "ShardingOptions", "ShardingOptionsArgs"]

log = logging.getLogger("kubeforge.sharding")

Runnable = Callable[[asyncio.Event], Coroutine[Any, Any, None]]


class ShardHost(Protocol):
    """What a ring needs of the manager its controller runs in (manager.py's Manager)."""

    @property
    def cache(self) -> Cache: ...
    @property
    def metrics(self) -> Metrics: ...
    @property
    def api_reader(self) -> Client: ...
    @property
    def identity(self) -> str: ...
    @property
    def lease_duration(self) -> float: ...
    @property
    def renew_deadline(self) -> float: ...
    @property
    def retry_period(self) -> float: ...
    @property
    def leader_election_namespace(self) -> str | None: ...
    @property
    def graceful_shutdown_timeout(self) -> float: ...
    def add(self, runnable: Runnable, *, need_leader_election: bool = True) -> None: ...


@dataclass(frozen=True)
class ShardingOptions:
    """How a ring runs. `lease_duration`, `renew_deadline`, `retry_period`: the shard and
    sharder Leases' timing (None: the manager's leader election settings); `namespace`: where
    the Leases live (None: the manager's leader election namespace, else its client's);
    `resync_period`: how often the sharder checks every object's assignment (seconds);
    `concurrency`: the sharder's writes in flight at once."""

    lease_duration: float | None = None
    renew_deadline: float | None = None
    retry_period: float | None = None
    namespace: str | None = None
    resync_period: float = 300.0
    concurrency: int = 32


class ShardingOptionsArgs(TypedDict, total=False):
    """The keyword arguments of `Builder.sharded` (the fields of ShardingOptions)."""

    lease_duration: float | None
    renew_deadline: float | None
    retry_period: float | None
    namespace: str | None
    resync_period: float
    concurrency: int


_METRICS: weakref.WeakKeyDictionary[Metrics, ShardingMetrics] = weakref.WeakKeyDictionary()


def _metrics_of(metrics: Metrics) -> ShardingMetrics:
    """The sharding series of a manager, registered once in its registry."""
    found = _METRICS.get(metrics)
    if found is None:
        found = _METRICS[metrics] = ShardingMetrics(metrics.registry)
    return found


def _combined(*selectors: str | None) -> str:
    return ",".join(s for s in selectors if s)


class ShardRing:
    """One ring, in one replica: built by Builder.sharded() before its controller's informers
    exist (`ShardRing(...)`, which restricts the cache), then given its controller
    (`attach`), which it starts and stops with its shard Lease."""

    def __init__(
        self,
        host: ShardHost,
        ring: str,
        for_kind: KindLike,
        owned: Sequence[KindLike],
        options: ShardingOptions | None = None,
    ) -> None:
        problems = ring_name_problems(ring)
        if problems:
            raise ValueError(
                f"{ring!r} cannot name a shard ring ({'; '.join(problems)}): give "
                "sharded(ring=...) a name of lowercase letters, digits and '-'"
            )
        self.host = host
        self.name = ring
        self.options = options or ShardingOptions()
        self.shard = shard_name(ring, host.identity)
        self.label = shard_label(ring)
        self.namespace = (
            self.options.namespace or host.leader_election_namespace or host.api_reader.namespace
        )
        self.lease_duration = self.options.lease_duration or host.lease_duration
        self.renew_deadline = self.options.renew_deadline or host.renew_deadline
        self.retry_period = self.options.retry_period or host.retry_period
        # Made here, so that timings the election refuses fail the builder, not the start.
        self.member = self._elector(
            self.shard,
            self.shard,
            labels={RING_LABEL: ring},
            on_started_leading=self._serve,
            on_stopped_leading=lambda: host.metrics.set_leader(self.shard, False),
        )
        self.metrics = _metrics_of(host.metrics)
        self.kind = GroupVersionKind.parse(kind_key(for_kind))
        owned_kinds = [k for k in dict.fromkeys(owned) if kind_key(k) != kind_key(for_kind)]
        self.kinds = [
            self._restrict(host.cache, for_kind, controlled=False),
            *(self._restrict(host.cache, kind, controlled=True) for kind in owned_kinds),
        ]
        self.membership = Membership(
            ring,
            self.shard,
            self.kind,
            [k.gvk for k in self.kinds[1:]],
            active=lambda: self.active,
            on_release=self.metrics.drains_acknowledged_total.labels(ring, self.shard).inc,
        )
        self.controller: Controller | None = None
        self.candidate: LeaderElector | None = None
        self.sharder: Sharder | None = None
        self._graceful = False

    def _restrict(self, cache: Cache, kind: KindLike, *, controlled: bool) -> RingKind:
        """Have the cache hold only this shard's objects of `kind`; what the controller
        caches of it otherwise (namespaces, selector) is what the sharder shards."""
        key = kind_key(kind)
        if any(kind_key(informer.kind) == key for informer in cache.informers()):
            raise ValueError(
                f"{key} is cached already, for another controller: the kinds of a sharded "
                "controller are cached as this shard's share only, so shard it in a manager "
                "of its own or register the sharded controller first"
            )
        options = cache.options_for(kind)
        selector = f"{self.label}={self.shard}"
        cache.by_kind[key] = replace(
            options, label_selector=_combined(options.label_selector, selector)
        )
        namespaces = options.namespaces if options.namespaces is not None else cache.namespaces
        scope = None if namespaces is None or "" in namespaces else tuple(namespaces)
        return RingKind(GroupVersionKind.parse(key), controlled, scope, options.label_selector)

    # wiring, by the builder -----------------------------------------------------------------

    def predicates(self, predicates: Sequence[Predicate]) -> tuple[Predicate, ...]:
        """The for_ watch's predicates, letting every drain through."""
        return (DrainOrPredicates(self.membership.drain_label, predicates),)

    def reconciler(self, reconciler: Reconciler | SyncReconciler) -> Reconciler | SyncReconciler:
        """`reconciler` behind the shard's checks (shard.py)."""
        if isinstance(reconciler, SyncReconciler):
            return SyncShardedReconciler(reconciler, self.membership)
        if not inspect.iscoroutinefunction(reconciler.reconcile):
            # A plain `def reconcile` runs in a thread, whatever the class says (controller.py).
            return SyncShardedReconciler(cast(SyncReconciler, reconciler), self.membership)
        return ShardedReconciler(reconciler, self.membership)

    def attach(self, controller: Controller) -> None:
        """Run `controller` with the shard Lease: the manager leaves starting it to the ring."""
        assert controller.for_informer is not None
        self.controller = controller
        self.membership.informer = controller.for_informer
        controller.started_by = self
        for informer in controller.informers:
            key = kind_key(informer.kind)
            if any(str(k.gvk) == key for k in self.kinds):
                store = informer.store
                self.metrics.watch_objects(
                    self.name, self.shard, GroupVersionKind.parse(key).kind, store.__len__
                )
        self.host.add(self.run, need_leader_election=False)

    # running --------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether this replica holds its shard Lease (its controller runs)."""
        return self.member.is_leader

    @property
    def leading(self) -> bool:
        """Whether this replica runs the ring's sharder."""
        return self.candidate is not None and self.candidate.is_leader

    def _elector(self, name: str, identity: str, **callbacks: Any) -> LeaderElector:
        return LeaderElector(
            self.host.api_reader,
            name=name,
            namespace=self.namespace,
            identity=identity,
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
            release_on_cancel=True,
            **callbacks,
        )

    async def run(self, stopping: asyncio.Event) -> None:
        """Hold the shard Lease (running the controller) and campaign for the sharder until
        `stopping`; raise LeadershipLost when the shard Lease is lost."""
        ending = asyncio.Event()
        member = asyncio.create_task(self.member.run(), name=f"shard {self.shard}")
        campaign = asyncio.create_task(self._campaign(ending), name=f"sharder {self.name}")
        stop = asyncio.create_task(stopping.wait())
        try:
            await asyncio.wait({member, stop}, return_when=asyncio.FIRST_COMPLETED)
            self._graceful = stopping.is_set()
            ending.set()
            self.member.stop()
            if self.candidate is not None:
                self.candidate.stop()
            await asyncio.gather(member, campaign, return_exceptions=True)
        finally:
            for task in (member, campaign, stop):
                task.cancel()
        if not self._graceful:
            member.result()  # LeadershipLost: the manager stops with it
            raise LeadershipLost(f"shard {self.shard} of ring {self.name} stopped")

    async def _serve(self) -> None:
        """While the shard Lease is held: the controller runs."""
        assert self.controller is not None
        self.host.metrics.set_leader(self.shard, True)
        log.info("ring %s: shard %s holds its Lease", self.name, self.shard)
        await self.controller.start()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if self._graceful:
                await self.controller.stop(timeout=self.host.graceful_shutdown_timeout)
            else:
                # The Lease is lost: another shard may get these objects as soon as it
                # expires, so nothing of this one may still be running by then.
                self.controller.kill()
            raise

    async def _campaign(self, ending: asyncio.Event) -> None:
        """Stand for the ring's sharder Lease until `ending`; lead the sharder when won."""
        while not ending.is_set():
            self.sharder = Sharder(
                self.host.api_reader,
                RingSpec(self.name, self.namespace, tuple(self.kinds)),
                self.metrics,
                resync_period=self.options.resync_period,
                settle_period=self.lease_duration,
                concurrency=self.options.concurrency,
            )
            self.candidate = self._elector(
                sharder_lease_name(self.name),
                self.host.identity,
                on_started_leading=self._lead_sharder,
                on_stopped_leading=lambda: None,
                on_leading_changed=self._sharder_leading,
            )
            with contextlib.suppress(LeadershipLost):
                await self.candidate.run()
            if not ending.is_set():
                # Lost, or the sharder failed: stand again after a pause.
                with contextlib.suppress(TimeoutError):
                    await clock.wait_for(ending.wait(), self.retry_period)

    def _sharder_leading(self, leading: bool) -> None:
        self.host.metrics.set_leader(sharder_lease_name(self.name), leading)

    async def _lead_sharder(self) -> None:
        sharder, candidate = self.sharder, self.candidate
        assert sharder is not None and candidate is not None
        try:
            await sharder.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("ring %s: the sharder failed; standing again", self.name)
            candidate.stop()
