"""Kubernetes objects in either form, a JSON-shaped dict or a typed kubeforge model.

Helpers that take either form (ownership, finalizers, events, upsert) go through
`get_meta`, `set_meta` and their kin instead of branching on the object's form: dicts use
the JSON field names (`ownerReferences`); typed objects carry an `ObjectMeta` (snake_case
attributes) or, for some models, a plain dict as `.metadata`. Objects known to be dicts are
read with `kubeforge._api.machinery.access`.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from kubeforge._api.meta import OwnerReference, ResourceInfo

__all__ = [
    "api_version_kind",
    "client_kind",
    "get_finalizers",
    "get_meta",
    "get_owner_references",
    "set_finalizers",
    "set_meta",
    "set_owner_references",
]

# JSON name -> attribute name on ObjectMeta, for the fields the helpers touch.
_SNAKE = {
    "name": "name",
    "namespace": "namespace",
    "uid": "uid",
    "resourceVersion": "resource_version",
    "generation": "generation",
    "finalizers": "finalizers",
    "ownerReferences": "owner_references",
    "labels": "labels",
    "annotations": "annotations",
    "deletionTimestamp": "deletion_timestamp",
}


def _metadata(obj: Any, create: bool) -> Any:
    if isinstance(obj, MutableMapping):
        meta = obj.get("metadata")
        if meta is None and create:
            meta = obj["metadata"] = {}
        return meta
    if isinstance(obj, Mapping):
        return obj.get("metadata")
    meta = getattr(obj, "metadata", None)
    if meta is None and create:
        raise TypeError(f"{type(obj).__name__} has no metadata")
    return meta


def get_meta(obj: Any, field: str) -> Any:
    """A metadata field by its JSON name (`resourceVersion`), or None when unset."""
    meta = _metadata(obj, create=False)
    if meta is None:
        return None
    if isinstance(meta, Mapping):
        return meta.get(field)
    return getattr(meta, _SNAKE.get(field, field), None)


def set_meta(obj: Any, field: str, value: Any) -> None:
    """Set a metadata field by its JSON name; None removes it from a dict."""
    meta = _metadata(obj, create=True)
    if isinstance(meta, MutableMapping):
        if value is None:
            meta.pop(field, None)
        else:
            meta[field] = value
    else:
        setattr(meta, _SNAKE.get(field, field), value)


def get_finalizers(obj: Any) -> list[str]:
    """The object's finalizers (the live list when there is one; an empty new list otherwise)."""
    value = get_meta(obj, "finalizers")
    return value if isinstance(value, list) else []


def set_finalizers(obj: Any, finalizers: list[str]) -> None:
    """Replace the finalizers; an empty list leaves the field out, as the server does."""
    set_meta(obj, "finalizers", finalizers or None)


def get_owner_references(obj: Any) -> list[dict[str, Any]]:
    """The owner references in their JSON form (new dicts for typed objects)."""
    refs = get_meta(obj, "ownerReferences")
    if not refs:
        return []
    return [ref if isinstance(ref, dict) else ref.to_dict() for ref in refs]


def set_owner_references(obj: Any, refs: list[dict[str, Any]]) -> None:
    """Replace the owner references; typed metadata gets OwnerReference models."""
    meta = _metadata(obj, create=True)
    if isinstance(meta, MutableMapping):
        if refs:
            meta["ownerReferences"] = refs
        else:
            meta.pop("ownerReferences", None)
        return
    meta.owner_references = [OwnerReference.from_dict(r) for r in refs] if refs else None


def _info(obj: Any) -> ResourceInfo | None:
    info = getattr(type(obj), "__kubeforge__", None)
    return info if isinstance(info, ResourceInfo) else None


def api_version_kind(obj: Any) -> tuple[str, str]:
    """The object's apiVersion and kind (typed: from its class; dict: from its fields)."""
    info = _info(obj)
    if info is not None:
        return info.gvk.api_version, info.gvk.kind
    if isinstance(obj, Mapping):
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
    else:
        api_version, kind = getattr(obj, "api_version", None), getattr(obj, "kind", None)
    if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
        raise ValueError("the object has no apiVersion and kind")
    return api_version, kind


def client_kind(obj: Any) -> Any:
    """What to pass the client as the object's kind: its class when typed, else a kind string."""
    if _info(obj) is not None:
        return type(obj)
    api_version, kind = api_version_kind(obj)
    return f"{api_version}/{kind}"
