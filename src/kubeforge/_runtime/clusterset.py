"""The clusters a provider has engaged, by name: what every provider does with them, once
(multicluster-runtime's pkg/clusters, which its providers share the same way).

`add` starts a cluster and engages it; adding another under a taken name first retires the
one there. `remove` disengages a cluster and then stops it, so that nothing reads a cache
that is being torn down. A cluster that fails to engage is stopped again.
"""

from __future__ import annotations

import asyncio
import logging

from kubeforge._runtime.multicluster import Aware, Cluster, ClusterNotFound

__all__ = ["ClusterSet"]

log = logging.getLogger("kubeforge.multicluster")


class ClusterSet:
    """Engaged clusters by name, started, engaged, disengaged and stopped in that order."""

    def __init__(self) -> None:
        self._clusters: dict[str, Cluster] = {}
        self._lock = asyncio.Lock()

    def __contains__(self, name: object) -> bool:
        return name in self._clusters

    def __len__(self) -> int:
        return len(self._clusters)

    def names(self) -> list[str]:
        """The clusters' names, sorted."""
        return sorted(self._clusters)

    def get(self, name: str) -> Cluster:
        """The cluster `name`; ClusterNotFound when there is none."""
        try:
            return self._clusters[name]
        except KeyError:
            raise ClusterNotFound(name) from None

    async def add(self, name: str, cluster: Cluster, aware: Aware) -> None:
        """Start `cluster` and engage it as `name`, retiring a cluster that had the name."""
        async with self._lock:
            old = self._clusters.pop(name, None)
            if old is cluster:
                self._clusters[name] = cluster
                return
            if old is not None:
                await _retire(name, old, aware)
            await cluster.start()
            try:
                await aware.engage(name, cluster)
            except BaseException:
                await cluster.stop()
                raise
            self._clusters[name] = cluster

    async def remove(self, name: str, aware: Aware) -> bool:
        """Disengage and stop cluster `name`; False when there was none."""
        async with self._lock:
            cluster = self._clusters.pop(name, None)
            if cluster is None:
                return False
            await _retire(name, cluster, aware)
            return True

    async def clear(self, aware: Aware) -> None:
        """Disengage and stop every cluster."""
        async with self._lock:
            while self._clusters:
                name, cluster = self._clusters.popitem()
                await _retire(name, cluster, aware)


async def _retire(name: str, cluster: Cluster, aware: Aware) -> None:
    try:
        await aware.disengage(name)
    finally:
        await cluster.stop()
