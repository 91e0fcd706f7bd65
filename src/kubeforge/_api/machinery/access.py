"""Reading JSON values and Kubernetes objects held as JSON-shaped dicts.

The readers (`as_dict`, `meta_of`, `is_deleting`, ...) answer an empty value of the expected
type where a field is absent or of another type, so code reading decoded, stored or cached
objects needs no checks of its own. They are single plain functions, as cheap as the checks
they stand for: the API server calls them for every field it validates. `json_form` and
`json_copy` give any object, a dict or a typed model, as JSON.

Reading and writing the metadata of an object that may be either a dict or a typed model is
`kubeforge._api.objects`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, overload

import orjson

__all__ = [
    "annotations_of",
    "as_dict",
    "as_int",
    "as_list",
    "as_str",
    "controller_ref",
    "is_deleting",
    "json_copy",
    "json_form",
    "labels_of",
    "meta_of",
    "name_of",
    "namespace_of",
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


# -- objects as JSON ---------------------------------------------------------------------------


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
