"""Which objects a controller controls: adopting matching orphans by owner reference,
releasing children that no longer match, and finding the controllers a child's events concern.

Like client-go's ControllerRefManager, a controller never touches an object another
controller controls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kubeforge._api.machinery.access import (
    controller_ref,
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    uid_of,
)
from kubeforge._api.machinery.selectors import label_selector_matches
from kubeforge._client.errors import Invalid, NotFound
from kubeforge._client.protocols import ObjectClient, Reader
from kubeforge._runtime.cache import Cache
from kubeforge._runtime.reconcile import Request

__all__ = ["claim", "controllers_of", "owner_reference"]

Obj = dict[str, Any]


def controllers_of(cache: Cache, child: Mapping[str, Any], kind: str) -> list[Request]:
    """The `kind` object ("group/version/Kind") controlling `child`; for an orphan, every
    `kind` object in its namespace whose selector matches it, so one can adopt it."""
    namespace = namespace_of(child)
    group = kind.rsplit("/", 2)[0] if kind.count("/") == 2 else ""
    ref = controller_ref(child)
    if ref is not None:
        api_version = str(ref.get("apiVersion", ""))
        if ref.get("kind") == kind.rsplit("/", 1)[1] and api_version.startswith(f"{group}/"):
            return [Request(namespace, str(ref.get("name")))]
        return []
    if is_deleting(child):
        return []
    labels = labels_of(child)
    requests = []
    for owner in cache.list(kind, namespace=namespace):
        spec = owner.get("spec")
        selector = spec.get("selector") if isinstance(spec, Mapping) else None
        if label_selector_matches(selector, labels):
            requests.append(Request(namespace, name_of(owner)))
    return requests


def owner_reference(owner: Mapping[str, Any]) -> Obj:
    return {
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


async def claim(
    client: ObjectClient,
    live: Reader,
    owner: Obj,
    kind: str,
    candidates: Iterable[Obj],
    matches: Callable[[Obj], bool],
    *,
    release_finalizers: Sequence[str] = (),
) -> list[Obj]:
    """The children `owner` controls: adopt matching orphans, release non-matching children.

    Like client-go's ControllerRefManager: objects controlled by someone else are left
    alone; before the first adoption the owner is read afresh from the server (through
    `live`, the manager's uncached reader), so an owner deleted (or replaced) meanwhile adopts
    nothing. Patches carry the child's uid so they
    apply to the object seen, not a namesake.
    """
    owner_uid = uid_of(owner)
    owner_kind = f"{owner.get('apiVersion')}/{owner.get('kind')}"
    claimed: list[Obj] = []
    adoption_checked: bool | None = None
    for child in candidates:
        ref = controller_ref(child)
        if ref is not None:
            if ref.get("uid") != owner_uid:
                continue
            if matches(child):
                claimed.append(child)
            elif not is_deleting(owner):
                await _release(client, kind, child, owner_uid, release_finalizers)
            continue
        if is_deleting(owner) or is_deleting(child) or not matches(child):
            continue
        if adoption_checked is None:
            adoption_checked = await _can_adopt(live, owner, owner_kind)
        if not adoption_checked:
            continue
        adopted = await _adopt(client, kind, child, owner)
        if adopted is not None:
            claimed.append(adopted)
    return claimed


async def _can_adopt(live: Reader, owner: Obj, owner_kind: str) -> bool:
    try:
        fresh = await live.get(owner_kind, name_of(owner), namespace=namespace_of(owner))
    except NotFound:
        return False
    return uid_of(fresh) == uid_of(owner) and not is_deleting(fresh)


async def _adopt(client: ObjectClient, kind: str, child: Obj, owner: Obj) -> Obj | None:
    patch = {"metadata": {"ownerReferences": [owner_reference(owner)], "uid": uid_of(child)}}
    try:
        result: Obj = await client.patch(
            kind, name_of(child), patch, patch_type="strategic", namespace=namespace_of(child)
        )
    except (NotFound, Invalid):
        return None  # gone, or replaced by a namesake
    return result


async def _release(
    client: ObjectClient,
    kind: str,
    child: Obj,
    owner_uid: str,
    finalizers: Sequence[str],
) -> None:
    metadata: Obj = {
        "ownerReferences": [{"$patch": "delete", "uid": owner_uid}],
        "uid": uid_of(child),
    }
    present = [f for f in finalizers if f in (meta_of(child).get("finalizers") or ())]
    if present:
        metadata["$deleteFromPrimitiveList/finalizers"] = present
    try:
        await client.patch(
            kind,
            name_of(child),
            {"metadata": metadata},
            patch_type="strategic",
            namespace=namespace_of(child),
        )
    except (NotFound, Invalid):
        pass
