"""A controller whose watches run in every engaged cluster, as multicluster-runtime's
pkg/controller (mcController) does.

One work queue and one set of workers serve every cluster. Engaging a cluster creates the
controller's informers in that cluster's own cache; once they have all listed (and the
reconciled kind's scope is known there, for `owns`), their handlers are connected, each
lifted to queue `ClusterRequest`s naming the cluster (pkg/handler/lift.go). Until then
nothing of the cluster is reconciled, so a reconcile never reads a cache that has not
listed yet; and a cluster that cannot be reached waits alone, without holding up the
others.

Disengaging a cluster disconnects its handlers, drops its requests from the queue (ready,
delayed and pending re-adds; the cluster's informers stop with its cache), and a request
of it that a worker already holds ends without retry. A request naming a cluster not
engaged, or whose reconcile raises ClusterNotFound, is done without calling the
reconciler again (multicluster-runtime's ClusterNotFoundWrapper, on by default there).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kubeforge import clock
from kubeforge._client.client import KindLike
from kubeforge._runtime.cache import kind_key
from kubeforge._runtime.cached_client import SyncClient
from kubeforge._runtime.clusterclient import ClusterRoutedClient
from kubeforge._runtime.controller import Controller, ControllerOptions
from kubeforge._runtime.handler import (
    EnqueueRequestForOwner,
    EventHandler,
    Obj,
    Queue,
    handle_generic,
)
from kubeforge._runtime.informer import Informer
from kubeforge._runtime.metrics import Metrics
from kubeforge._runtime.multicluster import (
    LOCAL_CLUSTER,
    Cluster,
    ClusterNotFound,
    ClusterRequest,
    in_cluster,
)
from kubeforge._runtime.observer import Trigger
from kubeforge._runtime.predicate import Predicate
from kubeforge._runtime.reconcile import Reconciler, Request, Result, SyncReconciler
from kubeforge._runtime.workqueue import LOW_PRIORITY

__all__ = ["ClusterWatch", "MultiClusterController", "cluster_of"]

log = logging.getLogger("kubeforge.multicluster")

# Retrying the discovery of the reconciled kind in a cluster that does not answer.
_RETRY_FIRST, _RETRY_MAX = 0.5, 30.0


def cluster_of(request: Request) -> str:
    """The cluster a request names (a plain Request: the manager's own)."""
    return request.cluster if isinstance(request, ClusterRequest) else LOCAL_CLUSTER


@dataclass(frozen=True)
class ClusterWatch:
    """One watch of a multi-cluster controller, made again in each cluster it engages:
    `handler()` gives the cluster's own event handler."""

    kind: KindLike
    handler: Callable[[], EventHandler]
    predicates: tuple[Predicate, ...] = ()
    metadata_only: bool = False
    reconciled: bool = False  # the for_ kind's watch


class _Engagement:
    """A controller's work in one cluster."""

    def __init__(self, name: str, cluster: Cluster) -> None:
        self.name = name
        self.cluster = cluster
        self.active = True
        self.connected = asyncio.Event()
        self.informers: list[Informer] = []
        self.for_informer: Informer | None = None
        self.task: asyncio.Task[None] | None = None


class _Tagged:
    """The controller's queue as one cluster's handlers see it: a request added without a
    cluster is that cluster's."""

    def __init__(self, queue: Queue, cluster: str) -> None:
        self.queue = queue
        self.cluster = cluster

    def add(self, item: Request, priority: int = 0) -> None:
        self.queue.add(self._tag(item), priority)

    def add_after(self, item: Request, delay_seconds: float, priority: int = 0) -> None:
        self.queue.add_after(self._tag(item), delay_seconds, priority)

    def _tag(self, item: Request) -> Request:
        if isinstance(item, ClusterRequest):
            return item
        return ClusterRequest(item.namespace, item.name, self.cluster)


class _Lifted:
    """A handler of one cluster's events: its requests name the cluster, handlers and map
    functions run as working for it (`current_cluster()`), and nothing is queued once the
    cluster is disengaged."""

    def __init__(self, handler: EventHandler, engagement: _Engagement) -> None:
        self.handler = handler
        self.engagement = engagement

    def create(self, obj: Obj, queue: Queue, initial: bool) -> None:
        if self.engagement.active:
            with in_cluster(self.engagement.name):
                self.handler.create(obj, _Tagged(queue, self.engagement.name), initial)

    def update(self, old: Obj, new: Obj, queue: Queue) -> None:
        if self.engagement.active:
            with in_cluster(self.engagement.name):
                self.handler.update(old, new, _Tagged(queue, self.engagement.name))

    def delete(self, obj: Obj, queue: Queue) -> None:
        if self.engagement.active:
            with in_cluster(self.engagement.name):
                self.handler.delete(obj, _Tagged(queue, self.engagement.name))

    def generic(self, obj: Obj, queue: Queue) -> None:
        if self.engagement.active:
            with in_cluster(self.engagement.name):
                handle_generic(self.handler, obj, _Tagged(queue, self.engagement.name))


def _gone(error: Exception, engagement: _Engagement) -> bool:
    """Whether a reconcile failed because its cluster went: nothing to retry."""
    return isinstance(error, ClusterNotFound) or not engagement.active


class _Scoped(Reconciler):
    """Runs an async reconciler for the requests of engaged clusters, as working for the
    request's cluster."""

    def __init__(self, inner: Reconciler, controller: MultiClusterController) -> None:
        self.inner = inner
        self.controller = controller

    async def reconcile(self, request: Request) -> Result | None:
        engagement = self.controller.engagement_of(request)
        if engagement is None:
            return None
        with in_cluster(engagement.name):
            try:
                return await self.inner.reconcile(request)
            except Exception as exc:
                if _gone(exc, engagement):
                    return None
                raise


class _SyncScoped(SyncReconciler):
    """_Scoped for a plain `def` reconciler (run in a worker thread)."""

    def __init__(self, inner: SyncReconciler, controller: MultiClusterController) -> None:
        self.inner = inner
        self.controller = controller

    def reconcile(self, request: Request) -> Result | None:
        engagement = self.controller.engagement_of(request)
        if engagement is None:
            return None
        with in_cluster(engagement.name):
            try:
                return self.inner.reconcile(request)
            except Exception as exc:
                if _gone(exc, engagement):
                    return None
                raise


class MultiClusterController(Controller):
    """Reconciles `owner` (the for_ kind) in every cluster it is engaged with; its
    reconciler's `client` reads and writes the cluster of the request at hand."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler | SyncReconciler,
        *,
        owner: KindLike,
        watches: Sequence[ClusterWatch],
        client: ClusterRoutedClient,
        options: ControllerOptions | None = None,
        metrics: Metrics | None = None,
        kind: str = "",
    ) -> None:
        scoped: Reconciler | SyncReconciler
        self._sync_client: SyncClient | None = None
        if isinstance(reconciler, SyncReconciler) or not inspect.iscoroutinefunction(
            reconciler.reconcile
        ):
            self._sync_client = SyncClient(client)
            reconciler.client = self._sync_client
            scoped = _SyncScoped(reconciler, self)  # type: ignore[arg-type]
        else:
            reconciler.client = client
            scoped = _Scoped(reconciler, self)
        super().__init__(name, scoped, options=options, metrics=metrics, kind=kind)
        self.owner = owner
        self.watches = tuple(watches)
        self._engaged: dict[str, _Engagement] = {}

    @property
    def clusters(self) -> list[str]:
        """The clusters this controller is engaged with, connected or not yet."""
        return sorted(self._engaged)

    def connected(self, name: str) -> bool:
        """Whether cluster `name`'s watches have listed and feed the queue."""
        engagement = self._engaged.get(name)
        return engagement is not None and engagement.connected.is_set()

    def engagement_of(self, request: Request) -> _Engagement | None:
        """The engagement a request belongs to; None (and the request is dropped) when its
        cluster is not engaged."""
        name = cluster_of(request)
        engagement = self._engaged.get(name)
        if engagement is None:
            log.debug(
                "controller %s: %s dropped, cluster %r is not engaged", self.name, request, name
            )
        return engagement

    async def start(self) -> None:
        if self._sync_client is not None:
            self._sync_client.bind(asyncio.get_running_loop())
        await super().start()

    # engaging -------------------------------------------------------------------------------

    async def engage(self, name: str, cluster: Cluster) -> None:
        """Watch in `cluster` under `name`; events feed the queue once its informers have
        listed. The same cluster again changes nothing; another replaces the first."""
        current = self._engaged.get(name)
        if current is not None:
            if current.cluster is cluster:
                return
            await self.disengage(name)
        engagement = _Engagement(name, cluster)
        sources: list[tuple[ClusterWatch, Informer, EventHandler]] = []
        for watch in self.watches:
            informer = cluster.cache.informer_for(watch.kind, metadata_only=watch.metadata_only)
            if watch.reconciled:
                engagement.for_informer = informer
            sources.append((watch, informer, watch.handler()))
        self._engaged[name] = engagement
        # A context of its own: not the logging context of whoever engaged the cluster (a
        # provider's reconcile, say).
        engagement.task = asyncio.create_task(
            self._connect(engagement, sources),
            name=f"{self.name} in cluster {name}",
            context=contextvars.Context(),
        )

    async def _connect(
        self,
        engagement: _Engagement,
        sources: list[tuple[ClusterWatch, Informer, EventHandler]],
    ) -> None:
        """Connect a cluster's watches to the queue once its caches have listed."""
        owners = [h for _, _, h in sources if isinstance(h, EnqueueRequestForOwner)]
        if owners:
            # Whether owners carry a namespace is the reconciled kind's scope in this cluster.
            namespaced = await self._owner_namespaced(engagement)
            for owner in owners:
                owner.owner_namespaced = namespaced
        informers = list(dict.fromkeys(informer for _, informer, _ in sources))
        timeout = self.options.cache_sync_timeout
        synced = await asyncio.gather(*(i.wait_synced(timeout) for i in informers))
        if not all(synced):
            log.warning(
                "controller %s: the caches of cluster %s did not sync within %ss; its objects "
                "are reconciled once they have",
                self.name,
                engagement.name,
                timeout,
            )
            await asyncio.gather(*(i.wait_synced() for i in informers))
        for watch, informer, handler in sources:
            self.watch(informer, _Lifted(handler, engagement), watch.predicates)
            engagement.informers.append(informer)
        engagement.connected.set()
        log.info("controller %s: cluster %s engaged", self.name, engagement.name)

    async def _owner_namespaced(self, engagement: _Engagement) -> bool:
        delay = _RETRY_FIRST
        while True:
            try:
                resource = await engagement.cluster.api_reader.resource(self.owner)
            except Exception as exc:
                log.warning(
                    "controller %s: cannot discover %s in cluster %s (%s); retrying in %ss",
                    self.name,
                    kind_key(self.owner),
                    engagement.name,
                    exc,
                    delay,
                )
                await clock.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX)
                continue
            return resource.namespaced

    async def disengage(self, name: str) -> None:
        """Stop working in cluster `name`: its events are not queued any more and its
        queued requests are dropped."""
        engagement = self._engaged.pop(name, None)
        if engagement is None:
            return
        engagement.active = False
        if engagement.task is not None:
            engagement.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await engagement.task
        still_watched = {i for e in self._engaged.values() for i in e.informers}
        for informer in engagement.informers:
            if informer in self.informers and informer not in still_watched:
                self.informers.remove(informer)

        def of_cluster(request: Request) -> bool:
            return cluster_of(request) == name

        dropped = self.queue.discard(of_cluster)
        for request in [r for r in self._triggers if of_cluster(r)]:
            del self._triggers[request]
        log.info(
            "controller %s: cluster %s disengaged, %d queued requests dropped",
            self.name,
            name,
            dropped,
        )

    def reconcile_all(self, priority: int = LOW_PRIORITY) -> int:
        """Queue every object of the reconciled kind in every connected cluster."""
        count = 0
        for engagement in list(self._engaged.values()):
            informer = engagement.for_informer
            if informer is None or not engagement.connected.is_set():
                continue
            for key in list(informer.store.keys()):
                namespace, _, name = key.rpartition("/")
                request = ClusterRequest(namespace, name, engagement.name)
                self.queue.add(request, priority)
                if self.observers:
                    self.note_trigger(request, Trigger("reconcile_all"))
                count += 1
        return count
