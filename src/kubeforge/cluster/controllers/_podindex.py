"""Finding a controller's pods in the cache through an index of pods by their controller's
uid, rather than reading every pod of a namespace; and a node's pods, by their node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeforge.api.machinery.access import controller_ref, namespace_of, uid_of
from kubeforge.runtime.cached_client import CachedClient
from kubeforge.runtime.manager import Manager

__all__ = [
    "CONTROLLER_INDEX",
    "NODE_NAME_INDEX",
    "ORPHAN",
    "POD",
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


async def pods_controlled_by(client: CachedClient, namespace: str, uid: str) -> list[Obj]:
    """Cached pods of `namespace` whose controller has `uid` (ORPHAN: no controller)."""
    pods: list[Obj] = await client.list(
        POD, namespace=namespace, matching_fields={CONTROLLER_INDEX: uid}
    )
    return pods


async def claimable_pods(client: CachedClient, owner: Mapping[str, Any]) -> list[Obj]:
    """The pods `owner` controls plus the orphans it might adopt."""
    namespace = namespace_of(owner)
    owned = await pods_controlled_by(client, namespace, uid_of(owner))
    return owned + await pods_controlled_by(client, namespace, ORPHAN)


def _node_name(pod: Mapping[str, Any]) -> list[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return [str(node)] if node else []


def index_pods_by_node(manager: Manager) -> None:
    """Index cached pods by the node they are bound to."""
    try:
        manager.cache.index_field(POD, NODE_NAME_INDEX, _node_name)
    except ValueError:
        pass  # another controller of this manager registered it


async def pods_on_node(client: CachedClient, node: str) -> list[Obj]:
    """Cached pods bound to `node`, of every namespace."""
    pods: list[Obj] = await client.list(POD, matching_fields={NODE_NAME_INDEX: node})
    return pods
