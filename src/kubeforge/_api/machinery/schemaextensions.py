"""What the Kubernetes extensions of a structural schema require of a custom object.

An embedded resource (`x-kubernetes-embedded-resource`) needs an apiVersion and a kind and
valid metadata; a list of `x-kubernetes-list-type: set` may not repeat an item, nor one of
type `map` the key values of an item. As apiextensions-apiserver's schema/objectmeta and
schema/listtype validation check them, with their messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from kubeforge._api.machinery.fielderror import FieldError, join_path
from kubeforge._api.machinery.govalues import GoValue, go_repr, shown_value
from kubeforge._api.machinery.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_path_segment_name,
    validate_annotations,
    validate_labels,
)
from kubeforge._api.machinery.schemanode import NO_DEFAULT, Node

__all__ = ["check_extensions", "embedded_errors", "list_map_identity"]


def check_extensions(
    n: Node, value: Any, path: str, meta_errs: list[FieldError], list_errs: list[FieldError]
) -> None:
    """Embedded-resource errors of `value` under node `n` into `meta_errs`, list-type errors
    into `list_errs` (field paths use `[key]` below a map)."""
    if type(value) is dict:
        if n.embedded:
            meta_errs.extend(_embedded_errors(value, path))
        additional = n.additional
        props = n.properties
        for key, item in value.items():
            child = props.get(key) if props is not None else None
            if child is not None:
                if child.deep_ext:
                    check_extensions(
                        child, item, f"{path}.{key}" if path else key, meta_errs, list_errs
                    )
            elif additional is not None and additional.deep_ext:
                check_extensions(additional, item, f"{path}[{key}]", meta_errs, list_errs)
    elif type(value) is list:
        if n.list_type == "set":
            list_errs.extend(_set_duplicates(value, path))
        elif n.list_type == "map":
            list_errs.extend(_map_duplicates(n, value, path))
        items = n.items
        if items is not None and items.deep_ext:
            for i, item in enumerate(value):
                check_extensions(items, item, f"{path}[{i}]", meta_errs, list_errs)


def _embedded_errors(obj: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if "apiVersion" not in obj:
        errs.append(FieldError.required(join_path(path, "apiVersion"), "must not be empty"))
    if "kind" not in obj:
        errs.append(FieldError.required(join_path(path, "kind"), "must not be empty"))
    for key, value in obj.items():
        where = join_path(path, key)
        if key == "apiVersion":
            if not isinstance(value, str):
                errs.append(FieldError.invalid(where, shown_value(value), "must be a string"))
            elif not value:
                errs.append(FieldError.invalid(where, value, "must not be empty"))
            elif value.count("/") > 1 or value.startswith("/") or value.endswith("/"):
                errs.append(
                    FieldError.invalid(where, value, f"unexpected GroupVersion string: {value}")
                )
        elif key == "kind":
            if not isinstance(value, str):
                errs.append(FieldError.invalid(where, shown_value(value), "must be a string"))
            elif not value:
                errs.append(FieldError.invalid(where, value, "must not be empty"))
            else:
                problems = is_dns1035_label(value.lower())
                if problems:
                    errs.append(
                        FieldError.invalid(
                            where,
                            value,
                            "may have mixed case, but should otherwise match: "
                            + ",".join(problems),
                        )
                    )
        elif key == "metadata":
            errs.extend(_embedded_meta_errors(value, where))
    return errs


def _embedded_meta_errors(meta: Any, path: str) -> list[FieldError]:
    if not isinstance(meta, Mapping):
        return [FieldError.invalid(path, shown_value(meta), "must be an object")]
    errs: list[FieldError] = []
    for key, prefix in (("name", False), ("generateName", True)):
        value = meta.get(key)
        if isinstance(value, str) and value:
            errs.extend(
                FieldError.invalid(join_path(path, key), value, m)
                for m in is_path_segment_name(value, prefix)
            )
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        errs.extend(
            FieldError.invalid(join_path(path, "namespace"), namespace, m)
            for m in is_dns1123_label(namespace)
        )
    errs.extend(validate_labels(meta.get("labels"), join_path(path, "labels")))
    errs.extend(validate_annotations(meta.get("annotations"), join_path(path, "annotations")))
    return errs


def _set_duplicates(items: list[Any], path: str) -> list[FieldError]:
    seen: dict[Any, int] = {}
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        key = _hashable(item)
        times = seen.get(key, 0)
        seen[key] = times + 1
        if times == 1:
            errs.append(FieldError.duplicate(f"{path}[{i}]", shown_value(item)))
    return errs


def _hashable(value: Any) -> Any:
    if isinstance(value, dict | list):
        return ("json", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    return (type(value).__name__, value)


def list_map_identity(n: Node, item: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The identity of an item of list-map `n`: its key values (defaults for missing keys),
    hashable, and the same keys as shown in a duplicate error."""
    shown: dict[str, Any] = {}
    parts = []
    item_schema = n.items
    for k in n.map_keys:
        if k in item:
            v = item[k]
        else:
            child = item_schema.child(k) if item_schema is not None else None
            v = child.default if child is not None else NO_DEFAULT
            if v is NO_DEFAULT:
                parts.append(("unspecified",))
                continue
        shown[k] = v
        parts.append(_hashable(v))
    return tuple(parts), shown


def _map_duplicates(n: Node, items: list[Any], path: str) -> list[FieldError]:
    for i, item in enumerate(items):
        if item is not None and not isinstance(item, Mapping):
            return [
                FieldError.invalid(
                    f"{path}[{i}]",
                    shown_value(item),
                    "must be an object for an array of list-type map",
                )
            ]
    if len(items) <= 1 or not n.map_keys:
        return []
    seen: dict[Any, int] = {}
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        if item is None:
            continue
        key, shown = list_map_identity(n, item)
        times = seen.get(key, 0)
        seen[key] = times + 1
        if times == 1:
            errs.append(FieldError.duplicate(f"{path}[{i}]", GoValue(go_repr(shown))))
    return errs


def embedded_errors(n: Node, value: Any, path: str) -> list[FieldError]:
    """Embedded-resource (apiVersion, kind, metadata) errors of `value` under node `n`."""
    meta_errs: list[FieldError] = []
    if n.deep_ext:
        check_extensions(n, value, path, meta_errs, [])
    return meta_errs
