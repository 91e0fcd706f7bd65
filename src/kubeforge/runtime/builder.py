"""Wiring a controller: what it reconciles, what it owns, what else it watches.

Builder(manager)
    .for_(Machine)
    .owns(Switch)
    .watches(Switch, lambda switch: [Request(ns, switch.metadata.labels["machine"])])
    .with_event_filter(GenerationChanged())
    .with_options(max_concurrent_reconciles=4)
    .complete(MachineReconciler())
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from kubeforge.api.meta import GroupVersionKind
from kubeforge.client.client import KindLike
from kubeforge.runtime.cache import kind_key
from kubeforge.runtime.controller import Controller, ControllerOptions
from kubeforge.runtime.handler import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    EventHandler,
)
from kubeforge.runtime.predicate import Predicate
from kubeforge.runtime.reconcile import Reconciler, Request, SyncReconciler

if TYPE_CHECKING:
    from kubeforge.runtime.manager import Manager

__all__ = ["Builder"]

MapFunc = Callable[[Any], Iterable[Request | tuple[str, str]] | None]


@dataclass
class _Watch:
    kind: KindLike
    handler: EventHandler | None
    map_fn: MapFunc | None
    predicates: tuple[Predicate, ...]


def _typed(kind: KindLike) -> type[Any] | None:
    return kind if isinstance(kind, type) and hasattr(kind, "__kubeforge__") else None


class Builder:
    """Fluent controller setup; `complete(reconciler)` registers it with the manager."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self._for: _Watch | None = None
        self._owns: list[tuple[_Watch, bool]] = []
        self._watches: list[_Watch] = []
        self._filters: list[Predicate] = []
        self._options = replace(manager.controller_defaults)
        self._name: str | None = None

    def for_(self, kind: KindLike, *, predicates: Sequence[Predicate] = ()) -> Builder:
        """The kind this controller reconciles; events on it enqueue the object itself."""
        if self._for is not None:
            raise ValueError("for_() may be called only once")
        self._for = _Watch(kind, EnqueueRequestForObject(), None, tuple(predicates))
        return self

    def owns(
        self,
        kind: KindLike,
        *,
        predicates: Sequence[Predicate] = (),
        match_every_owner: bool = False,
    ) -> Builder:
        """Objects this controller creates; their events enqueue their controller owner
        (every owner of the for_ kind with `match_every_owner`)."""
        self._owns.append((_Watch(kind, None, None, tuple(predicates)), match_every_owner))
        return self

    def watches(
        self,
        kind: KindLike,
        handler: EventHandler | MapFunc,
        *,
        predicates: Sequence[Predicate] = (),
    ) -> Builder:
        """Another kind whose events map to requests: through `handler`, or a map function
        receiving the object (typed for typed kinds) and returning Requests."""
        if callable(handler) and not hasattr(handler, "create"):
            self._watches.append(_Watch(kind, None, handler, tuple(predicates)))
        else:
            assert not callable(handler) or hasattr(handler, "update")
            self._watches.append(_Watch(kind, handler, None, tuple(predicates)))  # type: ignore[arg-type]
        return self

    def with_event_filter(self, *predicates: Predicate) -> Builder:
        """Predicates applied to every watched kind."""
        self._filters.extend(predicates)
        return self

    def with_options(self, **options: Any) -> Builder:
        """Controller options: max_concurrent_reconciles, reconcile_timeout, cache_sync_timeout,
        need_leader_election."""
        known = {f.name for f in fields(ControllerOptions)}
        for key in options:
            if key not in known:
                raise TypeError(f"unknown controller option {key!r}")
        self._options = replace(self._options, **options)
        return self

    def named(self, name: str) -> Builder:
        """The controller's name in logs and metrics (default: the for_ kind, lowercased)."""
        self._name = name
        return self

    def complete(self, reconciler: Reconciler | SyncReconciler) -> Controller:
        """Build the controller and register it with the manager."""
        if self._for is None:
            raise ValueError("a controller needs for_(kind)")
        for_kind = self._for.kind
        gvk = GroupVersionKind.parse(kind_key(for_kind))
        name = self._name or gvk.kind.lower()
        controller = Controller(
            name, reconciler, options=self._options, metrics=self.manager.metrics
        )
        cache = self.manager.cache
        filters = tuple(self._filters)

        assert self._for.handler is not None
        controller.watch(
            cache.informer_for(for_kind), self._for.handler, filters + self._for.predicates
        )
        for watch, every_owner in self._owns:
            handler = EnqueueRequestForOwner(gvk, only_controller=not every_owner)
            self.manager.resolve_owner_scope(for_kind, handler)
            controller.watch(cache.informer_for(watch.kind), handler, filters + watch.predicates)
        for watch in self._watches:
            if watch.handler is not None:
                handler_obj: EventHandler = watch.handler
            else:
                assert watch.map_fn is not None
                typed = _typed(watch.kind)
                handler_obj = EnqueueRequestsFromMapFunc(
                    watch.map_fn, typed.from_dict if typed is not None else None
                )
            controller.watch(
                cache.informer_for(watch.kind), handler_obj, filters + watch.predicates
            )
        self.manager.add_controller(controller)
        return controller
