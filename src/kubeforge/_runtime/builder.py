"""Wiring a controller: what it reconciles, what it owns, what else it watches.

Builder(manager)
    .for_(Machine)
    .owns(Switch)
    .watches(Switch, lambda switch: [Request(ns, switch.metadata.labels["machine"])])
    .watches_source(channel)                 # generic events from outside the cluster
    .with_event_filter(GenerationChanged())
    .with_options(max_concurrent_reconciles=4)
    .complete(MachineReconciler())

`metadata_only=True` on `for_`, `owns` or `watches` caches only the objects' metadata
(controller-runtime's OnlyMetadata): the handlers and map functions see PartialObjectMetadata,
and the reconciler reads them with `get_metadata` / `list_metadata`.

`.sharded()` spreads the controller's objects over the manager's replicas (sharding/ring.py).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, Unpack

from kubeforge._api.meta import GroupVersionKind, PartialObjectMetadata
from kubeforge._client.client import KindLike
from kubeforge._runtime.cache import Cache, kind_key
from kubeforge._runtime.controller import Controller, ControllerOptions, ControllerOptionsArgs
from kubeforge._runtime.handler import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    EventHandler,
    MapFunc,
)
from kubeforge._runtime.metrics import Metrics
from kubeforge._runtime.predicate import Predicate
from kubeforge._runtime.reconcile import (
    ObjectAdapter,
    ObjectReconciler,
    Reconciler,
    SyncObjectAdapter,
    SyncObjectReconciler,
    SyncReconciler,
)
from kubeforge._runtime.sharding.ring import (
    ShardHost,
    ShardingOptions,
    ShardingOptionsArgs,
    ShardRing,
)

__all__ = ["AnyReconciler", "Builder", "ControllerHost"]

AnyReconciler = Reconciler | SyncReconciler | ObjectReconciler[Any] | SyncObjectReconciler[Any]
"""Any of the reconciler shapes a controller can run."""


class ControllerHost(ShardHost, Protocol):
    """What a Builder needs of the manager it registers a controller with (manager.py's
    Manager): its defaults, metrics and cache, the registration itself, and what a sharded
    controller's ring needs."""

    @property
    def controller_defaults(self) -> ControllerOptions: ...
    @property
    def metrics(self) -> Metrics: ...
    @property
    def cache(self) -> Cache: ...
    def resolve_owner_scope(self, owner: KindLike, handler: EnqueueRequestForOwner) -> None: ...
    def add_controller(self, controller: Controller) -> None: ...


@dataclass
class _Watch:
    kind: KindLike
    handler: EventHandler | None
    map_fn: MapFunc | None
    predicates: tuple[Predicate, ...]
    metadata_only: bool = False


@dataclass
class _SourceWatch:
    items: AsyncIterable[Any]
    handler: EventHandler | None
    map_fn: MapFunc | None
    predicates: tuple[Predicate, ...]


def _typed(kind: KindLike) -> type[Any] | None:
    return kind if isinstance(kind, type) and hasattr(kind, "__kubeforge__") else None


def _partial_metadata(obj: Mapping[str, Any]) -> PartialObjectMetadata:
    return PartialObjectMetadata.from_dict(dict(obj))


def _from_dict(typed: type[Any], obj: Mapping[str, Any]) -> Any:
    return typed.from_dict(dict(obj))


def _split(handler: EventHandler | MapFunc) -> tuple[EventHandler | None, MapFunc | None]:
    """An event handler (create/update/delete methods) or a map function."""
    if all(callable(getattr(handler, m, None)) for m in ("create", "update", "delete")):
        return handler, None  # type: ignore[return-value]
    if callable(handler):
        return None, handler
    raise TypeError(
        f"{handler!r} is neither an event handler nor a map function (object -> requests)"
    )


class Builder:
    """Fluent controller setup; `complete(reconciler)` registers it with the manager."""

    def __init__(self, manager: ControllerHost) -> None:
        self.manager = manager
        self._for: _Watch | None = None
        self._owns: list[tuple[_Watch, bool]] = []
        self._watches: list[_Watch] = []
        self._sources: list[_SourceWatch] = []
        self._filters: list[Predicate] = []
        self._options = replace(manager.controller_defaults)
        self._name: str | None = None
        self._sharding: tuple[str | None, ShardingOptions] | None = None

    def for_(
        self,
        kind: KindLike,
        *,
        predicates: Sequence[Predicate] = (),
        metadata_only: bool = False,
    ) -> Builder:
        """The kind this controller reconciles; events on it enqueue the object itself."""
        if self._for is not None:
            raise ValueError("for_() may be called only once")
        self._for = _Watch(kind, EnqueueRequestForObject(), None, tuple(predicates), metadata_only)
        return self

    def owns(
        self,
        kind: KindLike,
        *,
        predicates: Sequence[Predicate] = (),
        match_every_owner: bool = False,
        metadata_only: bool = False,
    ) -> Builder:
        """Objects this controller creates; their events enqueue their controller owner
        (every owner of the for_ kind with `match_every_owner`)."""
        watch = _Watch(kind, None, None, tuple(predicates), metadata_only)
        self._owns.append((watch, match_every_owner))
        return self

    def watches(
        self,
        kind: KindLike,
        handler: EventHandler | MapFunc,
        *,
        predicates: Sequence[Predicate] = (),
        metadata_only: bool = False,
    ) -> Builder:
        """Another kind whose events map to requests: through `handler`, or a map function
        receiving the object (typed for typed kinds; PartialObjectMetadata with
        `metadata_only`) and returning Requests. The map function may be `async def`."""
        event_handler, map_fn = _split(handler)
        self._watches.append(_Watch(kind, event_handler, map_fn, tuple(predicates), metadata_only))
        return self

    def watches_source(
        self,
        source: AsyncIterable[Any],
        handler: EventHandler | MapFunc | None = None,
        *,
        predicates: Sequence[Predicate] = (),
    ) -> Builder:
        """Generic events from outside the cluster: every item of `source` (a `Channel`, or
        any async iterable) is a Request, or an object mapped to requests by `handler`
        (default: the object itself; or a map function, or an event handler such as
        EnqueueRequestForOwner). The event filters apply to these too."""
        if not hasattr(source, "__aiter__"):
            raise TypeError(f"a source is an async iterable (a Channel ...), not {source!r}")
        if handler is None:
            self._sources.append(
                _SourceWatch(source, EnqueueRequestForObject(), None, tuple(predicates))
            )
        else:
            event_handler, map_fn = _split(handler)
            self._sources.append(_SourceWatch(source, event_handler, map_fn, tuple(predicates)))
        return self

    def with_event_filter(self, *predicates: Predicate) -> Builder:
        """Predicates applied to every watched kind."""
        self._filters.extend(predicates)
        return self

    def with_options(self, **options: Unpack[ControllerOptionsArgs]) -> Builder:
        """Controller options (see ControllerOptions): max_concurrent_reconciles,
        reconcile_timeout, cache_sync_timeout, need_leader_election, recover_panic,
        queue_max_wait, rate_limiter."""
        known = set(ControllerOptionsArgs.__annotations__)
        for key in options:
            if key not in known:
                raise TypeError(f"unknown controller option {key!r}")
        self._options = replace(self._options, **options)
        return self

    def sharded(self, ring: str | None = None, **options: Unpack[ShardingOptionsArgs]) -> Builder:
        """Spread the objects over the manager's replicas (decision 60): each replica holds a
        shard Lease in `ring` (default: the controller's name) and reconciles only the
        objects labelled for its shard (the for_ kind, and the owned kinds with their
        owner), which the ring's sharder assigns; no leader election applies to this
        controller. `options` are ShardingOptions' fields."""
        self._sharding = (ring, ShardingOptions(**options))
        return self

    def named(self, name: str) -> Builder:
        """The controller's name in logs and metrics (default: the for_ kind, lowercased)."""
        self._name = name
        return self

    def _map_handler(self, watch: _Watch | _SourceWatch, kind: KindLike | None) -> EventHandler:
        if watch.handler is not None:
            return watch.handler
        assert watch.map_fn is not None
        convert: Callable[[Mapping[str, Any]], Any] | None = None
        if isinstance(watch, _Watch) and watch.metadata_only:
            convert = _partial_metadata
        elif kind is not None and (typed := _typed(kind)) is not None:
            convert = functools.partial(_from_dict, typed)
        return EnqueueRequestsFromMapFunc(watch.map_fn, convert)

    def complete(self, reconciler: AnyReconciler) -> Controller:
        """Build the controller and register it with the manager."""
        if self._for is None:
            raise ValueError("a controller needs for_(kind)")
        for_kind = self._for.kind
        gvk = GroupVersionKind.parse(kind_key(for_kind))
        name = self._name or gvk.kind.lower()
        runnable = self._adapt(reconciler, for_kind, self._for.metadata_only)
        for_predicates = tuple(self._filters) + self._for.predicates
        ring: ShardRing | None = None
        if self._sharding is not None:
            # Before any informer of the ring's kinds exists: they select this shard's share.
            owned = [watch.kind for watch, _ in self._owns]
            ring_name, sharding = self._sharding
            ring = ShardRing(self.manager, ring_name or name, for_kind, owned, sharding)
            runnable = ring.reconciler(runnable)
            for_predicates = ring.predicates(for_predicates)
        controller = Controller(
            name, runnable, options=self._options, metrics=self.manager.metrics, kind=gvk.kind
        )
        cache = self.manager.cache
        filters = tuple(self._filters)

        assert self._for.handler is not None
        for_informer = cache.informer_for(for_kind, metadata_only=self._for.metadata_only)
        controller.for_informer = for_informer
        controller.watch(for_informer, self._for.handler, for_predicates)
        for watch, every_owner in self._owns:
            handler = EnqueueRequestForOwner(gvk, only_controller=not every_owner)
            self.manager.resolve_owner_scope(for_kind, handler)
            informer = cache.informer_for(watch.kind, metadata_only=watch.metadata_only)
            controller.watch(informer, handler, filters + watch.predicates)
        for watch in self._watches:
            informer = cache.informer_for(watch.kind, metadata_only=watch.metadata_only)
            controller.watch(
                informer, self._map_handler(watch, watch.kind), filters + watch.predicates
            )
        for source in self._sources:
            controller.watch_source(
                source.items, self._map_handler(source, None), filters + source.predicates
            )
        self.manager.add_controller(controller)
        if ring is not None:
            ring.attach(controller)
        return controller

    @staticmethod
    def _adapt(
        reconciler: AnyReconciler, kind: KindLike, metadata_only: bool
    ) -> Reconciler | SyncReconciler:
        if isinstance(reconciler, ObjectReconciler):
            return ObjectAdapter(reconciler, kind, metadata_only=metadata_only)
        if isinstance(reconciler, SyncObjectReconciler):
            return SyncObjectAdapter(reconciler, kind, metadata_only=metadata_only)
        if not callable(getattr(reconciler, "reconcile", None)):
            raise TypeError(f"{reconciler!r} has no reconcile method")
        return reconciler
