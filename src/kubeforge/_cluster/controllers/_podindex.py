"""Finding a controller's pods in the cache through an index of pods by their controller's
uid, rather than reading every pod of a namespace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeforge._api.machinery.access import controller_ref, namespace_of, uid_of
from kubeforge._client.protocols import Reader
from kubeforge._runtime.manager import Manager

__all__ = [
    "CONTROLLER_INDEX",
    "ORPHAN",
    "POD",
    "claimable_pods",
    "index_pods_by_controller",
    "pods_controlled_by",
]

Obj = dict[str, Any]

POD = "v1/Pod"
CONTROLLER_INDEX = "kubeforge.dev/controller-uid"
# Index value of pods without a controller.
ORPHAN = "-"


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
