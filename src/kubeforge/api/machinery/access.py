"""Reading and writing Kubernetes objects, as JSON-shaped dicts or as typed kubeforge models.

The readers of JSON values and dict objects (`as_dict`, `meta_of`, `is_deleting`, ...) answer
an empty value of the expected type where a field is absent or of another type, so code
reading decoded, stored or cached objects needs no checks of its own. They are single plain
functions, as cheap as the checks they stand for: the API server calls them for every field
it validates.

Helpers that take either form (ownership, finalizers, events, upsert) go through
`get_meta`, `set_meta` and their kin instead of branching on the object's form: dicts use
the JSON field names (`ownerReferences`); typed objects carry an `ObjectMeta` (snake_case
attributes) or, for some models, a plain dict as `.metadata`.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, overload

import orjson

from kubeforge.api.meta import OwnerReference, ResourceInfo

__all__ = [
    "annotations_of",
    "api_version_kind",
    "as_dict",
    "as_int",
    "as_list",
    "as_str",
    "client_kind",
    "controller_ref",
    "get_finalizers",
    "get_meta",
    "get_owner_references",
    "is_deleting",
    "json_copy",
    "json_form",
    "labels_of",
    "meta_of",
    "name_of",
    "namespace_of",
    "set_finalizers",
    "set_meta",
    "set_owner_references",
    "spec_of",
    "status_of",
    "uid_of",
]

# -- JSON values -------------------------------------------------------------------------------


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else a new empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else a new empty one."""
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    """`value` when it is a string, else the empty string."""
    return value if isinstance(value, str) else ""


@overload
def as_int(value: Any) -> int | None: ...
@overload
def as_int(value: Any, default: int) -> int: ...
def as_int(value: Any, default: int | None = None) -> int | None:
    """`value` when it is a JSON integer (booleans are not), else `default`."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


# -- dict objects ------------------------------------------------------------------------------


def meta_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The object's `metadata` (empty when it has none)."""
    value = obj.get("metadata") if obj is not None else None
    return value if isinstance(value, Mapping) else {}


def spec_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The object's `spec` (empty when it has none)."""
    value = obj.get("spec") if obj is not None else None
    return value if isinstance(value, Mapping) else {}


def status_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The object's `status` (empty when it has none)."""
    value = obj.get("status") if obj is not None else None
    return value if isinstance(value, Mapping) else {}


def name_of(obj: Mapping[str, Any] | None) -> str:
    return str(meta_of(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any] | None) -> str:
    return str(meta_of(obj).get("namespace") or "")


def uid_of(obj: Mapping[str, Any] | None) -> str:
    return str(meta_of(obj).get("uid") or "")


def labels_of(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    value = meta_of(obj).get("labels")
    return value if isinstance(value, Mapping) else {}


def annotations_of(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    value = meta_of(obj).get("annotations")
    return value if isinstance(value, Mapping) else {}


def is_deleting(obj: Mapping[str, Any] | None) -> bool:
    """Whether the object carries a deletionTimestamp (it waits for finalizers or grace)."""
    return bool(meta_of(obj).get("deletionTimestamp"))


def controller_ref(obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The owner reference marked as the controller, or None."""
    for ref in meta_of(obj).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


# -- dicts or typed models ---------------------------------------------------------------------

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


def json_form(obj: Any) -> dict[str, Any]:
    """The object as a JSON-shaped dict (the dict itself, not a copy, for dict objects)."""
    if isinstance(obj, dict):
        return obj
    convert = getattr(obj, "to_dict", None)
    if callable(convert):
        data = convert()
        if isinstance(data, dict):
            return data
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"{type(obj).__name__} is not a Kubernetes object: give a dict or a model")


def json_copy(obj: Any) -> dict[str, Any]:
    """An independent JSON-normalised copy of the object (datetimes become strings)."""
    if isinstance(obj, Mapping):
        data: dict[str, Any] = orjson.loads(orjson.dumps(obj))
        return data
    # A model's to_dict() is already a fresh dict in JSON mode.
    return json_form(obj)
