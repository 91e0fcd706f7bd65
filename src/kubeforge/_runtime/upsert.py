"""Create an object or bring the existing one in line: controller-runtime's CreateOrUpdate
and CreateOrPatch.

Both read the object named by `obj` through the client (a reconciler's reads its cache,
which holds its own writes). When it does not exist, `mutate(obj)` fills it in and it is
created. Otherwise `mutate` is applied to the object as read, and it is written back only
if that changed it. `mutate` receives the object to change (a dict or a typed model, as
`obj` is) and must not change the name or namespace. In the end `obj` is the object as
stored (in place, as every write leaves its argument: decision 0018) and is returned with
what was done. Status changes are lost on create, and by `create_or_update` (the main
resource ignores status); `create_or_patch` writes them through the status subresource.

With an async client (`Client`, a Reconciler's `self.client`) the helpers return a coroutine
and `mutate` may be sync or async; with a SyncClient (a SyncReconciler's) they block and
`mutate` is a plain function.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from enum import StrEnum
from typing import Any, TypeVar, overload

from kubeforge._api.machinery.access import json_copy
from kubeforge._api.objects import client_kind, get_meta
from kubeforge._client.client import adopt
from kubeforge._client.errors import NotFound
from kubeforge._client.protocols import ObjectClient, SyncObjectClient
from kubeforge._runtime._steps import ClientCall, Steps, UserCall, drive

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


def _mutate(mutate: Callable[[Any], Any], obj: Any) -> Steps[None]:
    key = _key(obj)
    yield UserCall(mutate, (obj,))
    if _key(obj) != key:
        raise ValueError("the mutate function cannot change the object's name or namespace")


def _read(obj: Any) -> Steps[Any]:
    """The live object `obj` names, or _MISSING."""
    name, namespace = _key(obj)
    if not name:
        raise ValueError("the object needs metadata.name")
    try:
        return (yield ClientCall("get", (client_kind(obj), name), {"namespace": namespace}))
    except NotFound:
        return _MISSING


def _create_or_update(obj: T, mutate: Callable[[T], Any]) -> Steps[tuple[T, OperationResult]]:
    current = yield from _read(obj)
    if current is _MISSING:
        yield from _mutate(mutate, obj)
        created = yield ClientCall("create", (obj,))
        return adopt(obj, created), OperationResult.CREATED
    before = json_copy(current)
    yield from _mutate(mutate, current)
    if json_copy(current) == before:
        return adopt(obj, current), OperationResult.UNCHANGED
    updated = yield ClientCall("update", (current,))
    return adopt(obj, updated), OperationResult.UPDATED


def _create_or_patch(obj: T, mutate: Callable[[T], Any]) -> Steps[tuple[T, OperationResult]]:
    current = yield from _read(obj)
    if current is _MISSING:
        yield from _mutate(mutate, obj)
        created = yield ClientCall("create", (obj,))
        return adopt(obj, created), OperationResult.CREATED
    before = json_copy(current)
    before_status = before.pop("status", _MISSING)
    yield from _mutate(mutate, current)
    after = json_copy(current)
    after_status = after.pop("status", _MISSING)

    kind = client_kind(current)
    name, namespace = _key(current)
    latest = current
    result = OperationResult.UNCHANGED
    if before != after:
        patch = merge_patch(before, after)
        latest = yield ClientCall("patch", (kind, name, patch), {"namespace": namespace})
        result = OperationResult.UPDATED
    if before_status != after_status:
        old = {} if before_status is _MISSING else {"status": before_status}
        new = {} if after_status is _MISSING else {"status": after_status}
        patch = merge_patch(old, new)
        latest = yield ClientCall("patch_status", (kind, name, patch), {"namespace": namespace})
        if result is OperationResult.UPDATED:
            result = OperationResult.UPDATED_STATUS
        else:
            result = OperationResult.UPDATED_STATUS_ONLY
    return adopt(obj, latest), result


@overload
def create_or_update(
    client: ObjectClient, obj: T, mutate: Mutate[T]
) -> Coroutine[Any, Any, tuple[T, OperationResult]]: ...
@overload
def create_or_update(
    client: SyncObjectClient, obj: T, mutate: Callable[[T], None]
) -> tuple[T, OperationResult]: ...


def create_or_update(
    client: ObjectClient | SyncObjectClient, obj: T, mutate: Callable[[T], Any]
) -> tuple[T, OperationResult] | Coroutine[Any, Any, tuple[T, OperationResult]]:
    """Create the object, or update it if `mutate` changed it; `obj` ends as the object as
    stored (as read, when unchanged). Returns it and what was done."""
    return drive(client, _create_or_update(obj, mutate))


@overload
def create_or_patch(
    client: ObjectClient, obj: T, mutate: Mutate[T]
) -> Coroutine[Any, Any, tuple[T, OperationResult]]: ...
@overload
def create_or_patch(
    client: SyncObjectClient, obj: T, mutate: Callable[[T], None]
) -> tuple[T, OperationResult]: ...


def create_or_patch(
    client: ObjectClient | SyncObjectClient, obj: T, mutate: Callable[[T], Any]
) -> tuple[T, OperationResult] | Coroutine[Any, Any, tuple[T, OperationResult]]:
    """Create the object, or merge-patch what `mutate` changed: the object without its status,
    then the status through its subresource; `obj` ends as the object as stored. Returns it
    and what was done."""
    return drive(client, _create_or_patch(obj, mutate))


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
