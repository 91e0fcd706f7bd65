"""Create an object or bring the existing one in line: controller-runtime's CreateOrUpdate
and CreateOrPatch.

Both read the object named by `obj` from the server. When it does not exist, `mutate(obj)`
fills it in and it is created. Otherwise `mutate` is applied to the object as read, and it is
written back only if that changed it. `mutate` receives the object to change (a dict or a
typed model, as `obj` is), may be sync or async, and must not change the name or namespace.
Status changes are lost on create, and by `create_or_update` (the main resource ignores
status); `create_or_patch` writes them through the status subresource.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any, TypeVar

from kubeforge.client.client import Client
from kubeforge.client.errors import NotFound
from kubeforge.runtime._access import client_kind, get_meta, json_copy

__all__ = ["Mutate", "OperationResult", "create_or_patch", "create_or_update", "merge_patch"]

T = TypeVar("T")
Mutate = Callable[[T], Awaitable[None] | None]


class OperationResult(StrEnum):
    """What create_or_update / create_or_patch did."""

    UNCHANGED = "unchanged"
    CREATED = "created"
    UPDATED = "updated"
    UPDATED_STATUS = "updatedStatus"
    UPDATED_STATUS_ONLY = "updatedStatusOnly"


_MISSING: Any = object()


def _key(obj: Any) -> tuple[Any, Any]:
    return get_meta(obj, "name"), get_meta(obj, "namespace")


async def _mutate(mutate: Mutate[T], obj: T) -> None:
    key = _key(obj)
    result = mutate(obj)
    if inspect.isawaitable(result):
        await result
    if _key(obj) != key:
        raise ValueError("the mutate function cannot change the object's name or namespace")


async def _read(client: Client, obj: Any) -> Any:
    """The live object `obj` names, or _MISSING."""
    name, namespace = _key(obj)
    if not name:
        raise ValueError("the object needs metadata.name")
    try:
        return await client.get(client_kind(obj), name, namespace=namespace)
    except NotFound:
        return _MISSING


async def create_or_update(client: Client, obj: T, mutate: Mutate[T]) -> tuple[T, OperationResult]:
    """Create the object, or update it if `mutate` changed it; returns the object as stored
    (as read and mutated when unchanged) and what was done."""
    current = await _read(client, obj)
    if current is _MISSING:
        await _mutate(mutate, obj)
        return await client.create(obj), OperationResult.CREATED
    before = json_copy(current)
    await _mutate(mutate, current)
    if json_copy(current) == before:
        return current, OperationResult.UNCHANGED
    updated: T = await client.update(current)
    return updated, OperationResult.UPDATED


async def create_or_patch(client: Client, obj: T, mutate: Mutate[T]) -> tuple[T, OperationResult]:
    """Create the object, or merge-patch what `mutate` changed: the object without its status,
    then the status through its subresource; returns the object as stored and what was done."""
    current = await _read(client, obj)
    if current is _MISSING:
        await _mutate(mutate, obj)
        return await client.create(obj), OperationResult.CREATED
    before = json_copy(current)
    before_status = before.pop("status", _MISSING)
    await _mutate(mutate, current)
    after = json_copy(current)
    after_status = after.pop("status", _MISSING)

    kind = client_kind(current)
    name, namespace = _key(current)
    latest: T = current
    result = OperationResult.UNCHANGED
    if before != after:
        latest = await client.patch(kind, name, merge_patch(before, after), namespace=namespace)
        result = OperationResult.UPDATED
    if before_status != after_status:
        old = {} if before_status is _MISSING else {"status": before_status}
        new = {} if after_status is _MISSING else {"status": after_status}
        latest = await client.patch_status(kind, name, merge_patch(old, new), namespace=namespace)
        if result is OperationResult.UPDATED:
            result = OperationResult.UPDATED_STATUS
        else:
            result = OperationResult.UPDATED_STATUS_ONLY
    return latest, result


def merge_patch(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The JSON merge patch (RFC 7386) that turns `before` into `after`."""
    patch: dict[str, Any] = {}
    for key in before:
        if key not in after:
            patch[key] = None
    for key, new in after.items():
        old = before.get(key, _MISSING)
        if isinstance(old, dict) and isinstance(new, dict):
            nested = merge_patch(old, new)
            if nested:
                patch[key] = nested
        elif old is _MISSING or old != new:
            patch[key] = new
    return patch
