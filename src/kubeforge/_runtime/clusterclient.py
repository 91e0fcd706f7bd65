"""The client a multi-cluster reconciler is given: each call goes to the cluster the request
being reconciled names.

A reconciler written for one cluster reads and writes through `self.client`; in a
multi-cluster controller that client is this one, which looks up `current_cluster()` at
every call and answers from that cluster's cache, writing to its API server. It is what
multicluster-runtime spells `mgr.GetCluster(ctx, req.ClusterName)` followed by
`cluster.GetClient()` (or `ClusterFromContext`), done for every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from kubeforge._client.client import Client
from kubeforge._runtime.cache import Cache
from kubeforge._runtime.cached_client import CachedClient
from kubeforge._runtime.multicluster import Cluster, current_cluster
from kubeforge._runtime.observer import Observers

__all__ = ["ClusterRoutedClient"]


def _fixed(what: str) -> NoReturn:
    raise AttributeError(f"a routed client's {what} is the current cluster's; it cannot be set")


class ClusterRoutedClient(CachedClient):
    """CachedClient's calls, each made with the cached client of the cluster the running
    reconcile works for (`lookup(current_cluster())`). Outside a reconcile, LookupError;
    for a cluster no longer engaged, ClusterNotFound."""

    def __init__(self, lookup: Callable[[str], Cluster]) -> None:
        # No CachedClient.__init__: the client, cache and observers are the cluster's.
        self._lookup = lookup

    @property
    def cluster(self) -> Cluster:
        """The cluster of the running reconcile."""
        return self._lookup(current_cluster())

    @property
    def api(self) -> Client:
        """The current cluster's live (uncached) client."""
        return self.cluster.api_reader

    @api.setter
    def api(self, value: Client) -> None:
        _fixed("api")

    @property
    def cache(self) -> Cache:
        return self.cluster.cache

    @cache.setter
    def cache(self, value: Cache) -> None:
        _fixed("cache")

    @property
    def observers(self) -> Observers:
        return self.cluster.client.observers

    @observers.setter
    def observers(self, value: Observers) -> None:
        _fixed("observers")
