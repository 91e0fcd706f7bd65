"""Finding a controller's pods in the cache through an index of pods by their controller's
uid, rather than reading every pod of a namespace; and a node's pods, by their node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from kubeforge._api.machinery.access import controller_ref, namespace_of, uid_of
from kubeforge._client.protocols import Reader
from kubeforge._cluster.controllers._podstate import PodSummary
from kubeforge._runtime.cache import Cache
from kubeforge._runtime.manager import Manager

__all__ = [
    "CONTROLLER_INDEX",
    "NODE_NAME_INDEX",
    "ORPHAN",
    "POD",
    "PodSummaries",
    "claimable_pods",
    "index_pods_by_controller",
    "index_pods_by_node",
    "node_name_values",
    "pods_controlled_by",
    "pods_on_node",
]

Obj = dict[str, Any]

POD = "v1/Pod"
CONTROLLER_INDEX = "kubeforge.dev/controller-uid"
# Index value of pods without a controller.
ORPHAN = "-"
# Pods by the node they are bound to, finished or not (upstream's nodeNameKeyIndex).
NODE_NAME_INDEX = "spec.nodeName"


def _controller_uid(pod: Mapping[str, Any]) -> list[str]:
    ref = controller_ref(pod)
    return [str(ref.get("uid") or "")] if ref is not None else [ORPHAN]


def index_pods_by_controller(manager: Manager) -> None:
    """Index cached pods by their controller's uid (orphans under ORPHAN), so a controller
    reads its own pods and the orphans rather than every pod of a namespace."""
    try:
        manager.cache.index_field(POD, CONTROLLER_INDEX, _controller_uid)
    except ValueError:
        pass  # another controller of this manager registered it


async def pods_controlled_by(client: Reader, namespace: str, uid: str) -> list[Obj]:
    """Cached pods of `namespace` whose controller has `uid` (ORPHAN: no controller)."""
    pods: list[Obj] = await client.list(
        POD, namespace=namespace, matching_fields={CONTROLLER_INDEX: uid}
    )
    return pods


async def claimable_pods(client: Reader, owner: Mapping[str, Any]) -> list[Obj]:
    """The pods `owner` controls plus the orphans it might adopt."""
    namespace = namespace_of(owner)
    owned = await pods_controlled_by(client, namespace, uid_of(owner))
    return owned + await pods_controlled_by(client, namespace, ORPHAN)


class PodSummaries:
    """The cached pods an owner may claim (`claimable_pods`) as `PodSummary`s, each read once
    per change of the pod rather than on every sync: for a controller whose every sync reads
    all the pods of its object, thousands of them. A summary is a few hundred bytes where a
    decoded pod is some four times its JSON; `pod()` decodes one when more is needed."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self._summaries: dict[str, tuple[bytes, PodSummary]] = {}

    def claimable(self, owner: Mapping[str, Any]) -> list[PodSummary]:
        """As `claimable_pods`: the pods `owner` controls, then the orphans (each in no
        particular order: sort them where order matters)."""
        store = self.cache.informer_for(POD).store
        namespace = namespace_of(owner)
        prefix = namespace + "/"
        summaries = self._summaries
        if len(summaries) > 2 * len(store) + 100:
            # Pods gone from the cache leave their entries behind; sweep now and then.
            self._summaries = summaries = {k: v for k, v in summaries.items() if k in store}
        found: list[PodSummary] = []
        for uid in (uid_of(owner), ORPHAN):
            for key, data in store.raw_under(CONTROLLER_INDEX, uid):
                if not key.startswith(prefix):
                    continue
                known = summaries.get(key)
                if known is None or known[0] is not data:
                    known = summaries[key] = (data, PodSummary(key, orjson.loads(data)))
                found.append(known[1])
        return found

    def pod(self, summary: PodSummary) -> Obj | None:
        """The pod a summary is of, as the cache has it now (a private copy; None once it
        is gone)."""
        return self.cache.informer_for(POD).store.get(summary.key)


def node_name_values(pod: Mapping[str, Any]) -> list[str]:
    """What NODE_NAME_INDEX finds a pod under: the node it is bound to, if any."""
    node = (pod.get("spec") or {}).get("nodeName")
    return [str(node)] if node else []


def index_pods_by_node(manager: Manager) -> None:
    """Index cached pods by the node they are bound to."""
    try:
        manager.cache.index_field(POD, NODE_NAME_INDEX, node_name_values)
    except ValueError:
        pass  # another controller of this manager registered it


async def pods_on_node(client: Reader, node: str) -> list[Obj]:
    """Cached pods bound to `node`, of every namespace."""
    pods: list[Obj] = await client.list(POD, matching_fields={NODE_NAME_INDEX: node})
    return pods
