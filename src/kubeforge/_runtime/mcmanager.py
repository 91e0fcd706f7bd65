"""The multi-cluster manager: controllers that reconcile across the clusters a provider
engages, run by an ordinary Manager (multicluster-runtime's mcmanager, which wraps a
controller-runtime manager the same way: `WithMultiCluster(mgr, provider)`).

    manager = kubeforge.Manager()                      # the manager's own cluster
    fleet = MultiClusterManager(manager, KubeconfigSecretProvider(namespace="fleet"))
    fleet.controller().for_(ConfigMap).complete(FleetReconciler())
    await manager.start()

The manager keeps what is its own: the leader election, probes, metrics, webhooks, and the
controllers of its own cluster. The multi-cluster manager adds its controllers to it (with
their names, metrics and graceful stop) and runs the provider as one of its runnables, so
that clusters are engaged only while this replica leads, as upstream adds the provider as
a runnable of the manager it wraps. Each engaged cluster has its own cache and client; every
controller of the multi-cluster manager is engaged with every cluster (upstream's basic
coordinator).

At shutdown the controllers first finish their in-flight reconciles (within the manager's
graceful-shutdown timeout); only then does the provider stop its clusters.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Any

from kubeforge._client.client import KindLike
from kubeforge._runtime.clusterclient import ClusterRoutedClient
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.mcbuilder import MultiClusterBuilder
from kubeforge._runtime.mccontroller import MultiClusterController
from kubeforge._runtime.multicluster import Cluster, ClusterNotFound, Provider

__all__ = ["MultiClusterManager"]

log = logging.getLogger("kubeforge.multicluster")


class MultiClusterManager:
    """Controllers across the clusters `provider` engages, run by `manager`.

    `client` is the client multi-cluster reconcilers get: each call goes to the cluster of
    the request being reconciled. Without a provider, clusters are engaged by calling
    `engage` and `disengage` directly.
    """

    def __init__(self, manager: Manager, provider: Provider | None = None) -> None:
        self.manager = manager
        self.provider = provider
        self.controllers: list[MultiClusterController] = []
        self.client = ClusterRoutedClient(self.get_cluster)
        self._clusters: dict[str, Cluster] = {}
        self._indexes: list[tuple[KindLike, str, Callable[[Any], Iterable[str]]]] = []
        self._lock = asyncio.Lock()
        manager.add(self._run)
        setup = getattr(provider, "setup", None)
        if callable(setup):
            setup(manager)

    # setup ----------------------------------------------------------------------------------

    def controller(self) -> MultiClusterBuilder:
        """Start building a controller that reconciles across the engaged clusters."""
        return MultiClusterBuilder(self)

    def add_controller(self, controller: MultiClusterController) -> None:
        """Register a controller with the manager; it is engaged with each cluster engaged
        from now on."""
        self.manager.add_controller(controller)
        self.controllers.append(controller)

    def index_field(self, kind: KindLike, name: str, fn: Callable[[Any], Iterable[str]]) -> None:
        """Index `kind` by `fn` in every cluster's cache, engaged now or later
        (upstream's provider IndexField); see Cache.index_field."""
        self._indexes.append((kind, name, fn))
        for cluster in self._clusters.values():
            cluster.cache.index_field(kind, name, fn)

    # clusters -------------------------------------------------------------------------------

    @property
    def clusters(self) -> list[str]:
        """The names of the engaged clusters."""
        return sorted(self._clusters)

    def get_cluster(self, name: str) -> Cluster:
        """The engaged cluster `name`; ClusterNotFound when there is none."""
        try:
            return self._clusters[name]
        except KeyError:
            raise ClusterNotFound(name) from None

    async def engage(self, name: str, cluster: Cluster) -> None:
        """Work in `cluster` under `name` with every controller (the same cluster again:
        nothing; another under that name replaces the first)."""
        async with self._lock:
            current = self._clusters.get(name)
            if current is cluster:
                return
            if current is not None:
                await self._disengage(name)
            cluster.client.observers = self.manager.observers
            self._count(cluster)
            for kind, index, fn in self._indexes:
                with contextlib.suppress(ValueError):  # indexed when engaged before
                    cluster.cache.index_field(kind, index, fn)
            self._clusters[name] = cluster
            for controller in self.controllers:
                await controller.engage(name, cluster)
            log.info("cluster %s engaged (%s)", name, cluster.config.server)

    def _count(self, cluster: Cluster) -> None:
        """Count the cluster's requests and watch restarts in the manager's metrics, as the
        manager counts its own (labelled by the API server's host)."""
        metrics = self.manager.metrics
        transport = cluster.api_reader.transport
        if transport.on_request is None:
            transport.on_request = metrics.observe_request
        if transport.on_retry is None:
            transport.on_retry = lambda verb, host, code, _s: metrics.observe_retry(
                verb, host, code
            )
        if cluster.cache.on_watch_restart is None:
            restarts = metrics.informer_watch_restarts_total
            cluster.cache.on_watch_restart = lambda kind, _why: restarts.labels(kind).inc()

    async def disengage(self, name: str) -> None:
        """Stop working in cluster `name`: its events are not watched any more and its
        queued requests are dropped. The cluster itself is its provider's to stop."""
        async with self._lock:
            await self._disengage(name)

    async def _disengage(self, name: str) -> None:
        if self._clusters.pop(name, None) is None:
            return
        for controller in self.controllers:
            await controller.disengage(name)
        log.info("cluster %s disengaged", name)

    # running --------------------------------------------------------------------------------

    async def _run(self, stopping: asyncio.Event) -> None:
        """The manager's runnable: run the provider until the manager stops, then, once the
        controllers have finished their reconciles, have it stop its clusters."""
        done = asyncio.Event()
        provider = (
            asyncio.create_task(self.provider.run(self, done), name="cluster provider")
            if self.provider is not None
            else None
        )
        try:
            stop = asyncio.create_task(stopping.wait())
            waiting: set[asyncio.Future[Any]] = {stop} if provider is None else {stop, provider}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if provider is not None and provider.done():
                provider.result()  # a provider that fails stops the manager
                return
            if self.manager.killed:
                for cluster in self._clusters.values():
                    cluster.abort()
            else:
                grace = self.manager.graceful_shutdown_timeout
                await asyncio.gather(
                    *(c.queue.shutdown_with_drain(grace) for c in self.controllers)
                )
            done.set()
            if provider is not None:
                await provider
        except asyncio.CancelledError:
            # Out of time (or killed): nothing more reaches the clusters.
            for cluster in self._clusters.values():
                cluster.abort()
            raise
        finally:
            done.set()
            if provider is not None and not provider.done():
                provider.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await provider
            for name in list(self._clusters):
                await self._disengage(name)
