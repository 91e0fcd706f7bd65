"""Decoding `metadata` as Kubernetes' typed ObjectMeta, before a write does anything else.

kube-apiserver reads every request body into Go structs (built-in kinds entirely, custom
objects' `metadata` on its own), so a value of the wrong JSON type is a decode error (400),
never an object half-understood. This module gives the server that same first step for every
kind: each ObjectMeta field has the JSON type Go expects, `null`s become the zero values Go
would hold (and leave the object), and the message is the one Go's decoder writes
(`json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type
map[string]string`). Unknown fields are left to the pruning that reports them.
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.timestamps import parse_time
from kubeforge._apiserver.request.gojson import json_kind

__all__ = ["OBJECT_META_FIELDS", "MetadataDecodeError", "decode_object_meta"]

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_TIME_LAYOUT = "2006-01-02T15:04:05Z07:00"


class MetadataDecodeError(ValueError):
    """`metadata` that Go's decoder would refuse; `detail` is that decoder's message."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


# JSON field -> the Go type its struct field has, as the decoder's errors name it.
_OBJECT_META = {
    "name": "string",
    "generateName": "string",
    "namespace": "string",
    "selfLink": "string",
    "uid": "types.UID",
    "resourceVersion": "string",
    "generation": "int64",
    "creationTimestamp": "v1.Time",
    "deletionTimestamp": "v1.Time",
    "deletionGracePeriodSeconds": "int64",
    "labels": "map[string]string",
    "annotations": "map[string]string",
    "finalizers": "[]string",
    "ownerReferences": "[]v1.OwnerReference",
    "managedFields": "[]v1.ManagedFieldsEntry",
}
OBJECT_META_FIELDS = frozenset(_OBJECT_META)
"""The JSON fields of ObjectMeta."""
_OWNER_REFERENCE = {
    "apiVersion": "string",
    "kind": "string",
    "name": "string",
    "uid": "types.UID",
    "controller": "bool",
    "blockOwnerDeletion": "bool",
}
_MANAGED_FIELDS_ENTRY = {
    "manager": "string",
    "operation": "v1.ManagedFieldsOperationType",
    "apiVersion": "string",
    "time": "v1.Time",
    "fieldsType": "string",
    "subresource": "string",
    # fieldsV1 is raw JSON to the decoder; storage/managedfields.py checks its shape.
}
_STRINGS = frozenset({"string", "types.UID", "v1.ManagedFieldsOperationType"})
_STRUCT_LISTS = {
    "[]v1.OwnerReference": ("OwnerReference", _OWNER_REFERENCE),
    "[]v1.ManagedFieldsEntry": ("ManagedFieldsEntry", _MANAGED_FIELDS_ENTRY),
}


def _mismatch(value: Any, struct: str, field: str, go_type: str) -> MetadataDecodeError:
    kind = json_kind(value)
    if kind == "number" and go_type == "int64":
        kind = f"number {value!r}"  # Go quotes the number it could not fit
    return MetadataDecodeError(
        f"json: cannot unmarshal {kind} into Go struct field {struct}.{field} of type {go_type}"
    )


def _decode_struct(obj: dict[str, Any], fields: dict[str, str], struct: str, path: str) -> None:
    """Check, in place, the fields of one struct (`path` is Go's dotted path to them), and
    drop its nulls. Fields the struct does not have are left for pruning to report."""
    nulls = None
    for key, value in obj.items():
        if value is None:
            nulls = [key] if nulls is None else [*nulls, key]
            continue
        go_type = fields.get(key)
        if go_type is None or (go_type in _STRINGS and type(value) is str):
            continue
        decoded = _decode_value(value, go_type, struct, path + key)
        if decoded is not value:
            obj[key] = decoded
    if nulls:
        for key in nulls:
            del obj[key]


def _decode_value(value: Any, go_type: str, struct: str, field: str) -> Any:
    if go_type in _STRINGS:
        raise _mismatch(value, struct, field, go_type)  # a string took the fast path
    if go_type == "int64":
        if type(value) is not int or not _INT64_MIN <= value <= _INT64_MAX:
            raise _mismatch(value, struct, field, go_type)
        return value
    if go_type == "bool":
        if type(value) is not bool:
            raise _mismatch(value, struct, field, go_type)
        return value
    if go_type == "v1.Time":
        # metav1.Time reads a JSON string and parses it as RFC 3339.
        if type(value) is not str:
            raise _mismatch(value, struct, field, "string")
        try:
            parse_time(value)
        except ValueError:
            raise MetadataDecodeError(
                f'parsing time "{value}" as "{_TIME_LAYOUT}": cannot parse "{value}" as "2006"'
            ) from None
        return value
    if go_type == "map[string]string":
        if type(value) is not dict:
            raise _mismatch(value, struct, field, go_type)
        for key, item in value.items():
            if type(item) is not str:
                if item is not None:
                    raise _mismatch(item, struct, field, "string")
                value[key] = ""  # Go stores the zero value for a null entry
        return value
    if go_type == "[]string":
        if type(value) is not list:
            raise _mismatch(value, struct, field, go_type)
        for i, item in enumerate(value):
            if type(item) is not str:
                if item is not None:
                    raise _mismatch(item, struct, field, "string")
                value[i] = ""
        return value
    item_struct, item_fields = _STRUCT_LISTS[go_type]
    if type(value) is not list:
        raise _mismatch(value, struct, field, go_type)
    for i, item in enumerate(value):
        if type(item) is dict:
            _decode_struct(item, item_fields, item_struct, field + ".")
        elif item is None:
            value[i] = {}
        else:
            raise _mismatch(item, struct, field, go_type[2:])
    return value


def decode_object_meta(meta: Any, kind: str | None = None) -> dict[str, Any]:
    """`meta` as ObjectMeta decodes it: the same dict, with nulls dropped (or, inside maps and
    lists, made empty strings), or MetadataDecodeError when a field has the wrong JSON type.

    `kind` is the built-in kind whose struct holds the metadata; None for custom objects,
    whose metadata the server decodes on its own.
    """
    if meta is None:
        return {}
    if type(meta) is not dict:
        target = "Go value" if kind is None else f"Go struct field {kind}.metadata"
        raise MetadataDecodeError(
            f"json: cannot unmarshal {json_kind(meta)} into {target} of type v1.ObjectMeta"
        )
    _decode_struct(meta, _OBJECT_META, "ObjectMeta", "" if kind is None else "metadata.")
    return meta
