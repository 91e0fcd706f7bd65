"""The CEL rules of a custom object's schema (`x-kubernetes-validations`), run node by node.

Each value reaches its rules as its CEL type, converted only where the schema has such
fields: numbers as doubles, `date-time`, `duration` and `byte` strings as timestamps,
durations and bytes. At the root, rules see metadata reduced to name and generateName.
Transition rules see the old value at the same path, list-map items matched by their keys,
as apiextensions-apiserver's schema/cel validation correlates them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from kubeforge._api.machinery import cel as celrules
from kubeforge._api.machinery.fielderror import FieldError, join_path
from kubeforge._api.machinery.formats import duration_nanos, is_date_time
from kubeforge._api.machinery.schemaextensions import list_map_identity
from kubeforge._api.machinery.schemanode import (
    CEL_BYTES,
    CEL_DURATION,
    CEL_NUMBER,
    CEL_TIMESTAMP,
    Node,
)
from kubeforge._api.machinery.timestamps import parse_time_or_none

__all__ = ["rule_errors"]


def rule_errors(
    n: Node, value: Any, old: Any, path: str, *, root: bool = False
) -> list[FieldError]:
    """The CEL rule errors of `value` under compiled node `n` (`old` enables transition
    rules); `path` is the field path of `value`, `root` says it is a whole object."""
    errors: list[FieldError] = []
    if n.deep_rules:
        _check_rules(n, value, old, old is not None, path, errors, root=root)
    return errors


def _parse_timestamp(text: str) -> datetime | None:
    if not is_date_time(text):
        return None
    if text[19:20] == ",":
        # Go's time parsing, which CEL's conversion uses, also takes a comma before a fraction.
        text = f"{text[:19]}.{text[20:]}"
    return parse_time_or_none(text)


def _to_cel(value: Any, n: Node | None) -> Any:
    """A value as its CEL type: numbers as doubles, date-time/duration/byte strings as
    timestamps/durations/bytes. Untouched (no copy) where the schema has no such fields."""
    if n is None or not n.deep_cel_convert or value is None:
        return value
    t = type(value)
    if t is dict:
        return {k: _to_cel(v, n.child(k)) for k, v in value.items()}
    if t is list:
        items = n.items
        return value if items is None else [_to_cel(v, items) for v in value]
    kind = n.cel_kind
    if kind == CEL_NUMBER and t is int:
        return float(value)
    if t is str:
        if kind == CEL_TIMESTAMP:
            parsed = _parse_timestamp(value)
            return value if parsed is None else parsed
        if kind == CEL_DURATION:
            nanos = duration_nanos(value)
            return value if nanos is None else timedelta(microseconds=nanos // 1000)
        if kind == CEL_BYTES:
            try:
                return base64.b64decode(value, validate=True)
            except ValueError:
                return value
    return value


def _cel_root(value: Any, n: Node) -> Any:
    """The root object as rules see it: metadata reduced to name and generateName."""
    if type(value) is dict and "metadata" in value:
        meta = value["metadata"]
        if isinstance(meta, Mapping):
            value = {
                **value,
                "metadata": {k: meta[k] for k in ("name", "generateName") if k in meta},
            }
    return _to_cel(value, n)


def _map_list_index(n: Node, old: Any) -> dict[Any, Any]:
    if n.list_type != "map" or not n.map_keys or type(old) is not list:
        return {}
    index: dict[Any, Any] = {}
    for item in old:
        if isinstance(item, Mapping):
            index.setdefault(list_map_identity(n, item)[0], item)
    return index


def _check_rules(
    n: Node,
    value: Any,
    old: Any,
    has_old: bool,
    path: str,
    errors: list[FieldError],
    root: bool = False,
) -> None:
    if value is None:
        return
    if n.rules:
        convert = _cel_root if root else _to_cel
        errors.extend(
            celrules.run_rules(
                n.rules,
                convert(value, n),
                convert(old, n) if has_old else None,
                has_old,
                path,
                n.type,
                n.cel_functions,
            )
        )
    t = type(value)
    if t is dict:
        old_map = old if has_old and type(old) is dict else None
        props = n.properties
        additional = n.additional
        if additional is not None and additional.deep_rules:
            for key, item in value.items():
                if props is None or key not in props:
                    previous = old_map.get(key) if old_map is not None else None
                    _check_rules(
                        additional, item, previous, previous is not None, f"{path}[{key}]", errors
                    )
        if props:
            for key, item in value.items():
                child = props.get(key)
                if child is not None and child.deep_rules:
                    previous = old_map.get(key) if old_map is not None else None
                    _check_rules(
                        child, item, previous, previous is not None, join_path(path, key), errors
                    )
    elif t is list:
        items = n.items
        if items is not None and items.deep_rules:
            index = _map_list_index(n, old) if has_old else {}
            for i, item in enumerate(value):
                previous = (
                    index.get(list_map_identity(n, item)[0])
                    if index and isinstance(item, Mapping)
                    else None
                )
                _check_rules(items, item, previous, previous is not None, f"{path}[{i}]", errors)
