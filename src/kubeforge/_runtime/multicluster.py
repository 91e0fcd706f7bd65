"""The vocabulary of controllers that span clusters, after kubernetes-sigs/multicluster-runtime.

- A `ClusterRequest` is a `Request` that names its cluster (pkg/reconcile/request.go's
  mcreconcile.Request); "" is the manager's own cluster.
- A `Cluster` is one cluster as the runtime uses it: its API client, its own cache and the
  cached client a reconciler reads and writes it through (controller-runtime's
  cluster.Cluster).
- A `Provider` finds clusters and, while the manager runs, *engages* each with an `Aware`
  (the multi-cluster manager) and *disengages* it when it goes (pkg/multicluster's Provider,
  ProviderRunnable and Aware). Upstream ends an engagement by cancelling the context it
  started with; here `disengage(name)` says so.
- `current_cluster()` names the cluster of the request being reconciled (pkg/context's
  ClusterFrom), so that code below a reconciler can find its cluster.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from kubeforge._client.client import Client, KindLike
from kubeforge._client.config import ClusterConfig
from kubeforge._runtime.cache import Cache, CacheOptions
from kubeforge._runtime.cached_client import CachedClient
from kubeforge._runtime.informer import DEFAULT_RESYNC, Transform, strip_managed_fields
from kubeforge._runtime.reconcile import Request

__all__ = [
    "LOCAL_CLUSTER",
    "Aware",
    "Cluster",
    "ClusterNotFound",
    "ClusterRequest",
    "Provider",
    "current_cluster",
    "in_cluster",
]

LOCAL_CLUSTER = ""
"""The name of the manager's own cluster (multicluster-runtime's LocalCluster)."""

_CURRENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "kubeforge_cluster", default=None
)


@dataclass(frozen=True, slots=True, order=True)
class ClusterRequest(Request):
    """Which object to reconcile, and in which cluster: a Request with the cluster's name."""

    cluster: str = LOCAL_CLUSTER

    def __str__(self) -> str:
        # As mcreconcile.Request.String: cluster://<cluster>/<namespace>/<name>.
        where = Request.__str__(self)
        return f"cluster://{self.cluster}/{where}" if self.cluster else where

    @property
    def request(self) -> Request:
        """The request without its cluster, for code written for one cluster."""
        return Request(self.namespace, self.name)


class ClusterNotFound(LookupError):
    """No cluster of that name is engaged (multicluster's ErrClusterNotFound). A reconcile
    that raises it for its own cluster is done, not retried: the cluster has gone."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"cluster {name!r} not found")


def current_cluster() -> str:
    """The cluster of the request being reconciled (or whose event a handler maps);
    LookupError outside of one."""
    name = _CURRENT.get()
    if name is None:
        raise LookupError(
            "no cluster's request is being reconciled here: name the cluster "
            "(manager.get_cluster(name))"
        )
    return name


@contextmanager
def in_cluster(name: str) -> Iterator[None]:
    """Run the block as working for cluster `name` (what `current_cluster()` says)."""
    token = _CURRENT.set(name)
    try:
        yield
    finally:
        _CURRENT.reset(token)


class Cluster:
    """One cluster a multi-cluster manager works in: `api_reader` talks to its API server,
    `cache` holds what its controllers watch there, `client` reads from that cache and
    writes to the server. Its own cache and connections, started and stopped with it.

    `namespace`/`namespaces`, `cache_options`, `default_transform` and `sync_period` shape
    its cache as the Manager's options shape the manager's own.
    """

    def __init__(
        self,
        config: ClusterConfig,
        *,
        namespace: str | None = None,
        namespaces: Sequence[str] | None = None,
        cache_options: Mapping[KindLike, CacheOptions] | None = None,
        default_transform: Transform | None = strip_managed_fields,
        sync_period: float | None = DEFAULT_RESYNC,
        field_manager: str | None = None,
    ) -> None:
        self.config = config
        self.api_reader = Client(config, field_manager=field_manager)
        self.cache = Cache(
            self.api_reader,
            namespace=namespace,
            namespaces=namespaces,
            by_kind=cache_options,
            default_transform=default_transform,
            sync_period=sync_period,
        )
        self.client = CachedClient(self.api_reader, self.cache)

    def __repr__(self) -> str:
        return f"Cluster({self.config.server!r})"

    async def start(self) -> None:
        """Start the cache's informers (and any created later); nothing waits for them."""
        await self.cache.start()

    async def stop(self) -> None:
        """Stop the informers and close the connections."""
        await self.cache.stop()
        await self.api_reader.close()

    def abort(self) -> None:
        """Stop sending anything at once (the manager was killed)."""
        self.api_reader.abort()


class Aware(Protocol):
    """What a provider tells about its clusters: the multi-cluster manager."""

    async def engage(self, name: str, cluster: Cluster) -> None:
        """Start working in `cluster` under `name` (the same cluster again: nothing; another
        under that name: it replaces the first)."""
        ...

    async def disengage(self, name: str) -> None:
        """Stop working in cluster `name`."""
        ...


class Provider(Protocol):
    """Finds clusters and engages them while the manager runs.

    `run(aware, stopping)` engages the clusters it knows and follows their comings and
    goings until `stopping` is set, then disengages and stops them all. A provider that
    needs the manager's own cluster (to watch Secrets there, say) may also have a
    `setup(manager)` method, called when the multi-cluster manager is made (upstream's
    SetupWithManager).
    """

    def get(self, name: str) -> Cluster:
        """The cluster engaged as `name`; ClusterNotFound when there is none."""
        ...

    async def run(self, aware: Aware, stopping: asyncio.Event) -> None: ...
