"""What simulated kubelets learn of their pods and their Node from: two informers.

A kubelet watches the pods bound to it (`spec.nodeName=<node>`) and its own Node
(`metadata.name=<node>`). `KubeletWatches.of_node(client, name)` does exactly that for one
node. The nodes of a development cluster share one `KubeletWatches()` instead: one watch of
every bound pod (`spec.nodeName!=`) and one of every Node, each event handed to the node it
concerns, as kwok's node simulation does. A hundred nodes then hold two watch connections
rather than two hundred (each TLS connection holds buffers of a few hundred KiB at both
ends), and the API server matches each pod event against one watcher, not one per node.

`KubeletWatches.sharing(cache)` goes one step further: the nodes read the informers of the
cluster's controllers (every pod, every Node), which the controllers' manager runs, rather
than watching the same objects again: one copy of each pod in the process, one watch of
pods, each event decoded once. A node is told of a pod from the moment it is bound to it,
as its own field selector would show it. The ConfigMaps and Secrets pods refer to are read
from the controllers' informers of them too (`cached`), as a kubelet reads them from its
watch-based caches rather than getting them for every pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeforge._client.client import Client
from kubeforge._cluster.controllers._podindex import NODE_NAME_INDEX, node_name_values
from kubeforge._runtime.cache import Cache, NotCached
from kubeforge._runtime.informer import HandlerFuncs, Informer

__all__ = ["KubeletWatches"]

Obj = dict[str, Any]

POD = "v1/Pod"
NODE = "v1/Node"


def _node_of(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


class KubeletWatches:
    """Pod and Node informers whose events go to the subscribed node they concern.

    `node`: watch that one node's pods and Node only (a kubelet's own selectors); None:
    every bound pod and every Node, for all the nodes of a cluster.
    """

    def __init__(self, client: Client | None, node: str | None = None) -> None:
        self.client = client
        self.node = node
        self._pods_of: dict[str, HandlerFuncs] = {}
        self._node_of: dict[str, HandlerFuncs] = {}
        self._pods: Informer | None = None
        self._nodes: Informer | None = None
        self._shared: Cache | None = None

    @classmethod
    def of_node(cls, client: Client, node: str) -> KubeletWatches:
        """The watches of one kubelet, as a kubelet's own field selectors have them."""
        return cls(client, node)

    @classmethod
    def sharing(cls, cache: Cache) -> KubeletWatches:
        """The watches of every node, read from the informers of a manager's `cache`: of
        every pod (indexed by NODE_NAME_INDEX here) and every Node."""
        try:
            cache.index_field(POD, NODE_NAME_INDEX, node_name_values)
        except ValueError:
            pass  # a controller of the manager indexes pods by node already
        watches = cls(None)
        watches._pods, watches._nodes = cache.informer_for(POD), cache.informer_for(NODE)
        watches._shared = cache
        watches._dispatch()
        return watches

    def cached(self, kind: str, namespace: str, name: str) -> Obj | None:
        """An object (`v1/ConfigMap`, `v1/Secret`) as the shared informers have it (a
        private copy), or None when they do not have it: none caches that kind, or has
        not seen the object yet (the caller then reads it from the API server)."""
        if self._shared is None:
            return None
        try:
            informer = self._shared.informer_serving(kind)
        except NotCached:
            return None
        if not informer.synced.is_set():
            return None
        return informer.store.get(f"{namespace}/{name}")

    def subscribe(self, node: str, pods: HandlerFuncs, node_events: HandlerFuncs) -> None:
        """Tell `pods` of the pods bound to `node` and `node_events` of its Node from now
        on; what is already known (once the first lists are in) is told at once, as an
        informer tells a handler registered late."""
        if self.node is not None and node != self.node:
            raise ValueError(f"these watches are {self.node!r}'s, not {node!r}'s")
        self._pods_of[node] = pods
        self._node_of[node] = node_events
        if self._pods is None:
            self._start()
            return
        pod_informer, node_informer = self._pods, self._nodes
        assert node_informer is not None
        if pod_informer.synced.is_set():
            for pod in self.pods_of(node):
                pods.on_add(pod, True)
        if node_informer.synced.is_set():
            known = node_informer.store.get(node)
            if known is not None:
                node_events.on_add(known, True)

    def unsubscribe(self, node: str) -> None:
        """Stop telling `node` of anything."""
        self._pods_of.pop(node, None)
        self._node_of.pop(node, None)

    def pods_of(self, node: str) -> list[Obj]:
        """The pods bound to `node`, as last seen."""
        if self._pods is None:
            return []
        store = self._pods.store
        return [
            pod
            for pod in (store.get(key) for key in store.by_index(NODE_NAME_INDEX, node))
            if pod is not None
        ]

    def _start(self) -> None:
        one = self.node
        assert self.client is not None
        self._pods = Informer(
            self.client,
            POD,
            field_selector=f"spec.nodeName={one}" if one is not None else "spec.nodeName!=",
            resync_period=None,
            indexers={NODE_NAME_INDEX: node_name_values},
        )
        self._nodes = Informer(
            self.client,
            NODE,
            field_selector=f"metadata.name={one}" if one is not None else None,
            resync_period=None,
        )
        self._dispatch()
        self._pods.start()
        self._nodes.start()

    def _dispatch(self) -> None:
        """Hand each event of the informers to the node it concerns."""
        assert self._pods is not None and self._nodes is not None
        self._pods.add_handler(
            HandlerFuncs(
                add=lambda pod, initial: self._pod_handler(pod).on_add(pod, initial),
                update=self._pod_update,
                delete=lambda pod: self._pod_handler(pod).on_delete(pod),
            )
        )
        self._nodes.add_handler(
            HandlerFuncs(
                add=lambda n, initial: self._node_handler(n).on_add(n, initial),
                update=lambda old, n: self._node_handler(n).on_update(old, n),
            )
        )

    def _pod_update(self, old: Obj, pod: Obj) -> None:
        handler = self._pod_handler(pod)
        if handler is _NOBODY:
            return
        if not _node_of(old):
            # Bound just now: new to the node, as its own selector would show it.
            handler.on_add(pod, False)
        else:
            handler.on_update(old, pod)

    def _pod_handler(self, pod: Mapping[str, Any]) -> HandlerFuncs:
        node = _node_of(pod)
        return self._pods_of.get(node) or _NOBODY if node else _NOBODY

    def _node_handler(self, node: Mapping[str, Any]) -> HandlerFuncs:
        return self._node_of.get(_name_of(node)) or _NOBODY

    async def stop(self) -> None:
        """Stop both informers (unless they are shared: their owner stops them)."""
        if self._shared is not None:
            self._pods_of.clear()
            self._node_of.clear()
            return
        for informer in (self._pods, self._nodes):
            if informer is not None:
                await informer.stop()
        self._pods = self._nodes = None


_NOBODY = HandlerFuncs()
