"""Finalizers: keep an object from going away until its controller has cleaned up after it.

`add_finalizer` / `remove_finalizer` / `has_finalizer` work on the object in memory (like
controller-runtime's controllerutil). `ensure_finalizer` / `release_finalizer` also write the
change: a JSON patch of `metadata.finalizers` alone, guarded by a `test` of the
resourceVersion the object was read at, so a change made meanwhile by anyone else is never
overwritten. A lost race raises Conflict; read the object again and retry.

`with_finalizer` is the whole pattern in one call (kube-rs's `finalizer()`): while the
object lives it makes sure the finalizer is on it and runs `apply`; once it is being
deleted it runs `cleanup` and then takes the finalizer off, so the object goes only after
`cleanup` succeeded. If `apply` ever started, `cleanup` runs before the object is gone. Both
callbacks must be idempotent: a failure (an exception) is retried with the next reconcile.

Each takes an async client (and returns a coroutine) or a SyncClient (and blocks); the
object given becomes the object as stored, in place.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar, overload

from kubeforge._api.meta import KubeObject
from kubeforge._api.objects import (
    api_version_kind,
    client_kind,
    get_finalizers,
    get_meta,
    set_finalizers,
)
from kubeforge._client.client import adopt
from kubeforge._client.errors import Conflict, Invalid
from kubeforge._client.protocols import ObjectClient, SyncObjectClient
from kubeforge._runtime._steps import ClientCall, Steps, UserCall, drive

__all__ = [
    "add_finalizer",
    "ensure_finalizer",
    "has_finalizer",
    "release_finalizer",
    "remove_finalizer",
    "with_finalizer",
]

T = TypeVar("T")
R = TypeVar("R")


def has_finalizer(obj: KubeObject, name: str) -> bool:
    """Whether `obj` lists the finalizer `name`."""
    return name in get_finalizers(obj)


def add_finalizer(obj: KubeObject, name: str) -> bool:
    """Append the finalizer unless present; returns whether `obj` changed."""
    finalizers = get_finalizers(obj)
    if name in finalizers:
        return False
    set_finalizers(obj, [*finalizers, name])
    return True


def remove_finalizer(obj: KubeObject, name: str) -> bool:
    """Remove every occurrence of the finalizer; returns whether `obj` changed."""
    finalizers = get_finalizers(obj)
    kept = [f for f in finalizers if f != name]
    if len(kept) == len(finalizers):
        return False
    set_finalizers(obj, kept)
    return True


def _ensure(obj: T, name: str) -> Steps[T]:
    finalizers = get_finalizers(obj)
    if name in finalizers:
        return obj
    ops: list[dict[str, Any]]
    if finalizers:
        ops = [{"op": "add", "path": "/metadata/finalizers/-", "value": name}]
    else:
        ops = [{"op": "add", "path": "/metadata/finalizers", "value": [name]}]
    return (yield from _guarded_patch(obj, ops))


def _release(obj: T, name: str) -> Steps[T]:
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
    return (yield from _guarded_patch(obj, ops))


def _guarded_patch(obj: T, ops: list[dict[str, Any]]) -> Steps[T]:
    name = get_meta(obj, "name")
    version = get_meta(obj, "resourceVersion")
    if not name or not version:
        raise ValueError("the object needs a name and a resourceVersion: read it from the server")
    kind = client_kind(obj)
    namespace = get_meta(obj, "namespace")
    guard = {"op": "test", "path": "/metadata/resourceVersion", "value": version}
    try:
        result = yield ClientCall(
            "patch",
            (kind, name, [guard, *ops]),
            {"patch_type": "json", "namespace": namespace},
        )
    except Invalid:
        # A failed `test` is reported as 422 Invalid, like a real validation error; only
        # a newer resourceVersion on the server tells the two apart.
        current = yield ClientCall("get", (kind, name), {"namespace": namespace})
        if get_meta(current, "resourceVersion") == version:
            raise
        raise _conflict(obj, name) from None
    return adopt(obj, result)


def _with_finalizer(
    obj: T, name: str, apply: Callable[[T], Any], cleanup: Callable[[T], Any]
) -> Steps[Any]:
    if get_meta(obj, "deletionTimestamp"):
        if name not in get_finalizers(obj):
            return None  # cleaned up already (or never started): nothing holds it
        result = yield UserCall(cleanup, (obj,))
        yield from _release(obj, name)
        return result
    yield from _ensure(obj, name)
    return (yield UserCall(apply, (obj,)))


@overload
def ensure_finalizer(client: ObjectClient, obj: T, name: str) -> Coroutine[Any, Any, T]: ...
@overload
def ensure_finalizer(client: SyncObjectClient, obj: T, name: str) -> T: ...


def ensure_finalizer(
    client: ObjectClient | SyncObjectClient, obj: T, name: str
) -> T | Coroutine[Any, Any, T]:
    """Add the finalizer on the server (no request when `obj` has it); `obj` becomes the
    object as stored. Conflict when the object changed since `obj` was read."""
    return drive(client, _ensure(obj, name))


@overload
def release_finalizer(client: ObjectClient, obj: T, name: str) -> Coroutine[Any, Any, T]: ...
@overload
def release_finalizer(client: SyncObjectClient, obj: T, name: str) -> T: ...


def release_finalizer(
    client: ObjectClient | SyncObjectClient, obj: T, name: str
) -> T | Coroutine[Any, Any, T]:
    """Remove the finalizer on the server (no request when `obj` lacks it); `obj` becomes
    the object as stored. Conflict when the object changed since `obj` was read."""
    return drive(client, _release(obj, name))


@overload
def with_finalizer(
    client: ObjectClient,
    obj: T,
    name: str,
    *,
    apply: Callable[[T], Awaitable[R]],
    cleanup: Callable[[T], Awaitable[R]],
) -> Coroutine[Any, Any, R | None]: ...
@overload
def with_finalizer(
    client: SyncObjectClient,
    obj: T,
    name: str,
    *,
    apply: Callable[[T], R],
    cleanup: Callable[[T], R],
) -> R | None: ...


def with_finalizer(
    client: ObjectClient | SyncObjectClient,
    obj: T,
    name: str,
    *,
    apply: Callable[[T], Any],
    cleanup: Callable[[T], Any],
) -> Any:
    """Reconcile `obj` guarded by the finalizer `name` (see the module documentation):
    returns what `apply` or `cleanup` returned (a Result, say), or None when `obj` is being
    deleted and no longer holds the finalizer."""
    return drive(client, _with_finalizer(obj, name, apply, cleanup))


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
