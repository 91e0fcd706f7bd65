"""Owner and object references: which object owns (and which controller manages) another,
and references to objects.

These mirror controller-runtime's controllerutil helpers, metav1.GetControllerOf and
client-go's reference.GetReference. The setters change the object in memory only; write it
afterwards. Objects may be dicts or typed kubeforge resources. Two references point at the
same owner when the owner's API group, kind and name match (the version and uid are not
compared), as upstream decides.
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.meta import KubeObject, ObjectReference, split_api_version
from kubeforge._api.objects import (
    api_version_kind,
    get_meta,
    get_owner_references,
    set_owner_references,
)

__all__ = [
    "AlreadyOwnedError",
    "get_controller_of",
    "get_reference",
    "has_controller_reference",
    "has_owner_reference",
    "remove_controller_reference",
    "remove_owner_reference",
    "set_controller_reference",
    "set_owner_reference",
]


class AlreadyOwnedError(Exception):
    """The object already has a controller, and it is not the owner being set."""

    def __init__(self, obj: KubeObject, owner: dict[str, Any]) -> None:
        self.object = obj
        self.owner = owner
        namespace = get_meta(obj, "namespace") or ""
        super().__init__(
            f"Object {namespace}/{get_meta(obj, 'name')} is already owned by another "
            f"{owner.get('kind')} controller {owner.get('name')}"
        )


def _reference(owner: Any) -> dict[str, Any]:
    api_version, kind = api_version_kind(owner)
    name, uid = get_meta(owner, "name"), get_meta(owner, "uid")
    if not name:
        raise ValueError(f"the owner {kind} has no name")
    if not uid:
        raise ValueError(
            f"the owner {kind} {name!r} has no uid: use the object as read from the server"
        )
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}


def _same_owner(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (
        a.get("kind") == b.get("kind")
        and a.get("name") == b.get("name")
        and split_api_version(a.get("apiVersion") or "")[0]
        == split_api_version(b.get("apiVersion") or "")[0]
    )


def _index_of(refs: list[dict[str, Any]], ref: dict[str, Any]) -> int:
    for index, existing in enumerate(refs):
        if _same_owner(existing, ref):
            return index
    return -1


def _validate_scope(owner: Any, obj: Any) -> None:
    owner_namespace = get_meta(owner, "namespace")
    if not owner_namespace:
        return
    obj_namespace = get_meta(obj, "namespace")
    if not obj_namespace:
        raise ValueError(
            "cluster-scoped resource must not have a namespace-scoped owner, owner's "
            f"namespace {owner_namespace}"
        )
    if owner_namespace != obj_namespace:
        raise ValueError(
            "cross-namespace owner references are disallowed, owner's namespace "
            f"{owner_namespace}, obj's namespace {obj_namespace}"
        )


def _upsert(obj: Any, ref: dict[str, Any]) -> None:
    refs = get_owner_references(obj)
    index = _index_of(refs, ref)
    if index < 0:
        refs.append(ref)
    else:
        refs[index] = ref
    set_owner_references(obj, refs)


def set_controller_reference(
    owner: KubeObject, obj: KubeObject, *, block_owner_deletion: bool = True
) -> None:
    """Make `owner` the managing controller of `obj` (AlreadyOwnedError if another one is)."""
    _validate_scope(owner, obj)
    ref = _reference(owner)
    ref["controller"] = True
    ref["blockOwnerDeletion"] = block_owner_deletion
    existing = get_controller_of(obj)
    if existing is not None and not _same_owner(existing, ref):
        raise AlreadyOwnedError(obj, existing)
    _upsert(obj, ref)


def set_owner_reference(owner: KubeObject, obj: KubeObject) -> None:
    """Add `owner` as a (non-controller) owner of `obj`, replacing a reference to it."""
    _validate_scope(owner, obj)
    _upsert(obj, _reference(owner))


def _owner_key(owner: Any) -> dict[str, Any]:
    api_version, kind = api_version_kind(owner)
    return {"apiVersion": api_version, "kind": kind, "name": get_meta(owner, "name")}


def remove_owner_reference(owner: KubeObject, obj: KubeObject) -> None:
    """Remove the reference to `owner` from `obj` (ValueError when there is none)."""
    refs = get_owner_references(obj)
    if not refs:
        raise ValueError("the object does not have any owner references")
    index = _index_of(refs, _owner_key(owner))
    if index < 0:
        raise ValueError(f"the object does not have an owner reference for {_describe(owner)}")
    del refs[index]
    set_owner_references(obj, refs)


def remove_controller_reference(owner: KubeObject, obj: KubeObject) -> None:
    """Remove `owner`'s reference from `obj` provided it is the controller (ValueError if not)."""
    key = _owner_key(owner)
    controller = get_controller_of(obj)
    if controller is None:
        raise ValueError("the object does not have a controller reference")
    if not _same_owner(controller, key):
        raise ValueError(f"the object does not have a controller reference for {_describe(owner)}")
    remove_owner_reference(owner, obj)


def has_controller_reference(obj: KubeObject) -> bool:
    """Whether some owner reference of `obj` is marked as its controller."""
    return get_controller_of(obj) is not None


def has_owner_reference(owner: KubeObject, obj: KubeObject) -> bool:
    """Whether `obj` has a reference (controller or not) to `owner`."""
    return _index_of(get_owner_references(obj), _owner_key(owner)) >= 0


def get_controller_of(obj: KubeObject) -> dict[str, Any] | None:
    """The owner reference marked `controller: true`, in its JSON form (a copy), or None:
    metav1.GetControllerOf."""
    for ref in get_owner_references(obj):
        if ref.get("controller") is True:
            return dict(ref)
    return None


def get_reference(obj: KubeObject, *, field_path: str | None = None) -> ObjectReference:
    """An ObjectReference to `obj`: its apiVersion, kind, namespace, name, uid and
    resourceVersion (`field_path` names a part of it), as client-go's
    reference.GetReference / GetPartialReference make one. ValueError when the object says
    neither its apiVersion nor its kind (a typed object's class says them)."""
    if isinstance(obj, ObjectReference):
        # As GetReference does: a reference to a reference is the reference itself.
        return obj if field_path is None else obj.model_copy(update={"field_path": field_path})
    api_version, kind = api_version_kind(obj)
    values = {key: get_meta(obj, key) for key in ("namespace", "name", "uid", "resourceVersion")}
    return ObjectReference(
        api_version=api_version,
        kind=kind,
        namespace=values["namespace"] or None,
        name=values["name"] or None,
        uid=values["uid"] or None,
        resource_version=values["resourceVersion"] or None,
        field_path=field_path,
    )


def _describe(owner: Any) -> str:
    _, kind = api_version_kind(owner)
    return f"{kind} {get_meta(owner, 'name')!r}"
