"""Wiring a controller that spans clusters, spelt as a single-cluster one (multicluster-
runtime's mcbuilder):

    fleet.controller().for_(Machine).owns(Switch).complete(MachineReconciler())

`for_`, `owns`, `watches`, `watches_source`, `with_event_filter`, `with_options` and `named`
mean what they mean for one cluster; the watches are made again in every cluster the
manager engages, and their requests name that cluster (`ClusterRequest`). A generic source's
requests should name their cluster: one that does not is the manager's own cluster's.
"""

from __future__ import annotations

import functools
from typing import Protocol

from kubeforge._api.meta import GroupVersionKind
from kubeforge._runtime.builder import AnyReconciler, Builder
from kubeforge._runtime.cache import kind_key
from kubeforge._runtime.clusterclient import ClusterRoutedClient
from kubeforge._runtime.handler import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EventHandler,
)
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.mccontroller import ClusterWatch, MultiClusterController

__all__ = ["FleetHost", "MultiClusterBuilder"]


class FleetHost(Protocol):
    """What the builder needs of the multi-cluster manager (mcmanager.py): the manager
    that runs its controllers, the client they get, and the registration."""

    @property
    def manager(self) -> Manager: ...
    @property
    def client(self) -> ClusterRoutedClient: ...
    def add_controller(self, controller: MultiClusterController) -> None: ...


def _same(handler: EventHandler) -> EventHandler:
    return handler


class MultiClusterBuilder(Builder):
    """Builder for a controller of a MultiClusterManager; `complete(reconciler)` registers
    it (its defaults, metrics and name space are the host manager's)."""

    def __init__(self, fleet: FleetHost) -> None:
        super().__init__(fleet.manager)
        self.fleet = fleet

    def complete(self, reconciler: AnyReconciler) -> MultiClusterController:
        """Build the controller and register it with the multi-cluster manager."""
        if self._for is None:
            raise ValueError("a controller needs for_(kind)")
        for_kind = self._for.kind
        gvk = GroupVersionKind.parse(kind_key(for_kind))
        filters = tuple(self._filters)
        watches = [
            ClusterWatch(
                for_kind,
                functools.partial(_same, EnqueueRequestForObject()),
                filters + self._for.predicates,
                self._for.metadata_only,
                reconciled=True,
            )
        ]
        for watch, every_owner in self._owns:
            # A handler per cluster: the owners' scope is learnt from each cluster.
            owner = functools.partial(EnqueueRequestForOwner, gvk, only_controller=not every_owner)
            watches.append(
                ClusterWatch(watch.kind, owner, filters + watch.predicates, watch.metadata_only)
            )
        for watch in self._watches:
            mapped = functools.partial(_same, self._map_handler(watch, watch.kind))
            watches.append(
                ClusterWatch(watch.kind, mapped, filters + watch.predicates, watch.metadata_only)
            )
        controller = MultiClusterController(
            self._name or gvk.kind.lower(),
            self._adapt(reconciler, for_kind, self._for.metadata_only),
            owner=for_kind,
            watches=watches,
            client=self.fleet.client,
            options=self._options,
            metrics=self.fleet.manager.metrics,
            kind=gvk.kind,
        )
        for source in self._sources:
            controller.watch_source(
                source.items, self._map_handler(source, None), filters + source.predicates
            )
        self.fleet.add_controller(controller)
        return controller
