"""Decoding custom objects as apiextensions-apiserver does, beyond pruning and defaulting.

- Embedded resources (`x-kubernetes-embedded-resource`): their `metadata` is read as an
  ObjectMeta (apiextensions-apiserver's objectmeta.Coerce, called while a request body is
  decoded): a field of the wrong JSON type is a 400 naming the field, and what Coerce writes
  back is the typed ObjectMeta, so nulls leave and `creationTimestamp` is written, as null
  when unset (metav1.Time encodes its zero value so).
- Numbers: a custom object travels as unstructured JSON, and kube-apiserver stores it
  encoded by Go, which writes a whole-number float without a fraction (`2.0` as `2`); read
  back, that is an integer; and an integer too wide for an int64 was read as a float64 in
  the first place. `settle_numbers` gives a validated object that form, so it is stored and
  served as a cluster would serve it.
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import shown_value
from kubeforge._api.machinery.schemanode import Node, node_of
from kubeforge._apiserver.request.metadecoding import (
    OBJECT_META_FIELDS,
    MetadataDecodeError,
    decode_object_meta,
)

__all__ = ["EmbeddedMetadataError", "decode_embedded_metadata", "settle_numbers"]

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


class EmbeddedMetadataError(ValueError):
    """An embedded resource's metadata that ObjectMeta cannot hold; `error` names it."""

    def __init__(self, error: FieldError) -> None:
        super().__init__(str(error))
        self.error = error


def decode_embedded_metadata(obj: Any, schema: dict[str, Any]) -> None:
    """Decode, in place, the metadata of every embedded resource in `obj` (a pruned custom
    object), or raise EmbeddedMetadataError."""
    root = node_of(schema)
    if root.deep_ext:
        _walk(obj, root, "")


def _walk(value: Any, n: Node, path: str) -> None:
    if type(value) is dict:
        if n.embedded and "metadata" in value:
            where = f"{path}.metadata" if path else "metadata"
            meta = value["metadata"]
            try:
                decoded = decode_object_meta(meta)
            except MetadataDecodeError as exc:
                shown = shown_value(meta)
                raise EmbeddedMetadataError(FieldError.invalid(where, shown, exc.detail)) from None
            typed = {k: v for k, v in decoded.items() if k in OBJECT_META_FIELDS}
            typed.setdefault("creationTimestamp", None)
            value["metadata"] = typed
        props = n.properties
        additional = n.additional
        for key, item in value.items():
            child = props.get(key) if props is not None else None
            if child is None:
                child = additional
            if child is not None and child.deep_ext:
                _walk(item, child, f"{path}.{key}" if path else key)
    elif type(value) is list:
        items = n.items
        if items is not None and items.deep_ext:
            for i, item in enumerate(value):
                _walk(item, items, f"{path}[{i}]")


def settle_numbers(value: Any) -> Any:
    """`value` with every whole-number float in int64 range made an integer and every
    integer beyond int64 a float, in place where it can be (the form a Go JSON round trip
    gives: sigs.k8s.io/json reads an integer that does not fit an int64 as a float64)."""
    if type(value) is dict:
        for key, item in value.items():
            cls = item.__class__
            if cls is float:
                if item.is_integer() and _INT64_MIN <= item <= _INT64_MAX:
                    value[key] = int(item)
            elif cls is int:
                if not _INT64_MIN <= item <= _INT64_MAX:
                    value[key] = float(item)
            elif cls is dict or cls is list:
                settle_numbers(item)
    elif type(value) is list:
        for i, item in enumerate(value):
            cls = item.__class__
            if cls is float:
                if item.is_integer() and _INT64_MIN <= item <= _INT64_MAX:
                    value[i] = int(item)
            elif cls is int:
                if not _INT64_MIN <= item <= _INT64_MAX:
                    value[i] = float(item)
            elif cls is dict or cls is list:
                settle_numbers(item)
    return value
