"""Finalizers: keep an object from going away until its controller has cleaned up after it.

`add_finalizer` / `remove_finalizer` / `has_finalizer` work on the object in memory (like
controller-runtime's controllerutil). `ensure_finalizer` / `release_finalizer` also write the
change: a JSON patch of `metadata.finalizers` alone, guarded by a `test` of the
resourceVersion the object was read at, so a change made meanwhile by anyone else is never
overwritten. A lost race raises Conflict; read the object again and retry.
"""

from __future__ import annotations

from typing import Any, TypeVar

from kubeforge.client.client import Client
from kubeforge.client.errors import Conflict, Invalid
from kubeforge.runtime._access import (
    api_version_kind,
    client_kind,
    get_finalizers,
    get_meta,
    set_finalizers,
)

__all__ = [
    "add_finalizer",
    "ensure_finalizer",
    "has_finalizer",
    "release_finalizer",
    "remove_finalizer",
]

T = TypeVar("T")


def has_finalizer(obj: Any, name: str) -> bool:
    """Whether `obj` lists the finalizer `name`."""
    return name in get_finalizers(obj)


def add_finalizer(obj: Any, name: str) -> bool:
    """Append the finalizer unless present; returns whether `obj` changed."""
    finalizers = get_finalizers(obj)
    if name in finalizers:
        return False
    set_finalizers(obj, [*finalizers, name])
    return True


def remove_finalizer(obj: Any, name: str) -> bool:
    """Remove every occurrence of the finalizer; returns whether `obj` changed."""
    finalizers = get_finalizers(obj)
    kept = [f for f in finalizers if f != name]
    if len(kept) == len(finalizers):
        return False
    set_finalizers(obj, kept)
    return True


async def ensure_finalizer(client: Client, obj: T, name: str) -> T:
    """Add the finalizer on the server (no request when `obj` has it); returns the object as
    stored. Conflict when the object changed since `obj` was read."""
    finalizers = get_finalizers(obj)
    if name in finalizers:
        return obj
    ops: list[dict[str, Any]]
    if finalizers:
        ops = [{"op": "add", "path": "/metadata/finalizers/-", "value": name}]
    else:
        ops = [{"op": "add", "path": "/metadata/finalizers", "value": [name]}]
    return await _guarded_patch(client, obj, ops)


async def release_finalizer(client: Client, obj: T, name: str) -> T:
    """Remove the finalizer on the server (no request when `obj` lacks it); returns the object
    as stored. Conflict when the object changed since `obj` was read."""
    finalizers = get_finalizers(obj)
    ops: list[dict[str, Any]] = []
    # From the end, so earlier indexes stay valid while removing.
    for index in range(len(finalizers) - 1, -1, -1):
        if finalizers[index] == name:
            path = f"/metadata/finalizers/{index}"
            ops.append({"op": "test", "path": path, "value": name})
            ops.append({"op": "remove", "path": path})
    if not ops:
        return obj
    return await _guarded_patch(client, obj, ops)


async def _guarded_patch(client: Client, obj: T, ops: list[dict[str, Any]]) -> T:
    name = get_meta(obj, "name")
    version = get_meta(obj, "resourceVersion")
    if not name or not version:
        raise ValueError("the object needs a name and a resourceVersion: read it from the server")
    kind = client_kind(obj)
    namespace = get_meta(obj, "namespace")
    guard = {"op": "test", "path": "/metadata/resourceVersion", "value": version}
    try:
        result: T = await client.patch(
            kind, name, [guard, *ops], patch_type="json", namespace=namespace
        )
    except Invalid:
        # A failed `test` is reported as 422 Invalid, like a real validation error; only
        # a newer resourceVersion on the server tells the two apart.
        current = await client.get(kind, name, namespace=namespace)
        if get_meta(current, "resourceVersion") == version:
            raise
        raise _conflict(obj, name) from None
    return result


def _conflict(obj: Any, name: str) -> Conflict:
    _, kind = api_version_kind(obj)
    return Conflict(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "Conflict",
            "code": 409,
            "message": f'Operation cannot be fulfilled on {kind} "{name}": the object has been '
            "modified; please apply your changes to the latest version and try again",
        },
        409,
    )
