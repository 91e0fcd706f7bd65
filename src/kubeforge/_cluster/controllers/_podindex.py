"""Finding a controller's pods in the cache through an index of pods by their controller's
uid, rather than reading every pod of a namespace; and a node's pods, by their node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from kubeforge._api.machinery.access import controller_ref, namespace_of, uid_of
from kubeforge._client.protocols import Reader
from kubeforge._runtime.cache import Cache
from kubeforge._runtime.manager import Manager

__all__ = [
    "CONTROLLER_INDEX",
    "NODE_NAME_INDEX",
    "ORPHAN",
    "POD",
    "DecodedPods",
    "claimable_pods",
    "index_pods_by_controller",
    "index_pods_by_node",
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


class DecodedPods:
    """The cached pods an owner may claim (`claimable_pods`), each decoded once per change
    rather than on every read. For a controller whose every sync reads all the pods of its
    object, thousands of them, and which changes none of them in place except to take the
    server's answer to its own write of that pod (`_writes.replace`), which the next change
    of the cached pod supersedes. Memory: a decoded pod is some four times its JSON."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self._decoded: dict[str, tuple[bytes, Obj]] = {}

    def claimable(self, owner: Mapping[str, Any]) -> list[Obj]:
        """As `claimable_pods`: the pods `owner` controls, then the orphans."""
        store = self.cache.informer_for(POD).store
        namespace = namespace_of(owner)
        prefix = namespace + "/"
        decoded = self._decoded
        if len(decoded) > 2 * len(store) + 100:
            # Pods gone from the cache leave their entries behind; sweep now and then.
            self._decoded = decoded = {k: v for k, v in decoded.items() if k in store}
        pods: list[Obj] = []
        for uid in (uid_of(owner), ORPHAN):
            for key in sorted(store.keys_under(CONTROLLER_INDEX, uid)):
                if not key.startswith(prefix):
                    continue
                data = store.raw(key)
                if data is None:
                    continue
                known = decoded.get(key)
                if known is None or known[0] is not data:
                    known = decoded[key] = (data, orjson.loads(data))
                pods.append(known[1])
        return pods


def _node_name(pod: Mapping[str, Any]) -> list[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return [str(node)] if node else []


def index_pods_by_node(manager: Manager) -> None:
    """Index cached pods by the node they are bound to."""
    try:
        manager.cache.index_field(POD, NODE_NAME_INDEX, _node_name)
    except ValueError:
        pass  # another controller of this manager registered it


async def pods_on_node(client: Reader, node: str) -> list[Obj]:
    """Cached pods bound to `node`, of every namespace."""
    pods: list[Obj] = await client.list(POD, matching_fields={NODE_NAME_INDEX: node})
    return pods
