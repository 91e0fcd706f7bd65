"""A CRD's structural schema compiled into a tree of `Node`s, once per schema object.

Validation, pruning, defaulting and the CEL rules walk a custom object along this tree on
every request, so what they ask of a node is read from the schema once: types, value
limits, the format check, the compiled pattern and rules, and whether anything below a node
needs a walk at all (`deep_ext`, `deep_rules`, `deep_cel_convert`). At the root, metadata
keeps only the schema of name and generateName, as the server's schema has it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from kubeforge._api.machinery import cel as celrules
from kubeforge._api.machinery.formats import format_checker

__all__ = [
    "CEL_BYTES",
    "CEL_DURATION",
    "CEL_NUMBER",
    "CEL_TIMESTAMP",
    "NO_DEFAULT",
    "Node",
    "node_of",
]

# What a string or number node holds as a CEL value (`Node.cel_kind`; 0: the JSON value itself).
CEL_NUMBER, CEL_TIMESTAMP, CEL_DURATION, CEL_BYTES = 1, 2, 3, 4
# `Node.default` of a node without a default (None is a default: null).
NO_DEFAULT: Any = object()


class Node:
    """One schema node, compiled for the walks of validation, pruning and defaulting. Build
    with `node_of(schema)`."""

    __slots__ = (
        "additional",
        "additional_allows",
        "all_of",
        "any_of",
        "cel_functions",
        "cel_kind",
        "deep_cel_convert",
        "deep_ext",
        "deep_rules",
        "default",
        "embedded",
        "enum",
        "exclusive_maximum",
        "exclusive_minimum",
        "fmt",
        "fmt_check",
        "int_or_string",
        "items",
        "list_type",
        "map_keys",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "one_of",
        "pattern",
        "pattern_re",
        "preserve_unknown",
        "properties",
        "raw",
        "required",
        "rules",
        "type",
        "type_label",
        "types",
        "unique_items",
        "value_checks",
    )

    def __init__(self, raw: Mapping[str, Any], root: bool = False) -> None:
        self.raw = raw
        t = raw.get("type")
        nullable = bool(raw.get("nullable"))
        if isinstance(t, list):  # tolerate `["string", "null"]` from generic JSON schemas
            nullable = nullable or "null" in t
            kinds = [k for k in t if k != "null"]
            t = kinds[0] if len(kinds) == 1 else None
        self.type: str = t if isinstance(t, str) else ""
        self.int_or_string = bool(raw.get("x-kubernetes-int-or-string"))
        self.types: tuple[str, ...] = (
            ("integer", "string") if self.int_or_string else ((self.type,) if self.type else ())
        )
        self.type_label = ",".join(self.types)
        self.nullable = nullable
        fmt = raw.get("format")
        self.fmt_check = format_checker(fmt) if isinstance(fmt, str) and fmt else None
        self.fmt: str = fmt if isinstance(fmt, str) and self.fmt_check is not None else ""
        enum = raw.get("enum")
        self.enum: list[Any] | None = list(enum) if isinstance(enum, list) and enum else None
        self.maximum = _num(raw.get("maximum"))
        self.minimum = _num(raw.get("minimum"))
        self.exclusive_maximum = raw.get("exclusiveMaximum") is True
        self.exclusive_minimum = raw.get("exclusiveMinimum") is True
        self.multiple_of = _num(raw.get("multipleOf"))
        self.max_length = _int(raw.get("maxLength"))
        self.min_length = _int(raw.get("minLength"))
        pattern = raw.get("pattern")
        self.pattern: str = pattern if isinstance(pattern, str) and pattern else ""
        self.pattern_re = celrules.compile_go_regex(self.pattern) if self.pattern else None
        self.max_items = _int(raw.get("maxItems"))
        self.min_items = _int(raw.get("minItems"))
        self.unique_items = raw.get("uniqueItems") is True
        self.max_properties = _int(raw.get("maxProperties"))
        self.min_properties = _int(raw.get("minProperties"))
        required = raw.get("required")
        self.required: tuple[str, ...] = (
            tuple(r for r in required if isinstance(r, str)) if isinstance(required, list) else ()
        )
        props = raw.get("properties")
        self.properties: dict[str, Node] | None = None
        if isinstance(props, Mapping):
            self.properties = {k: Node(v) for k, v in props.items() if isinstance(v, Mapping)}
            if root and "metadata" in self.properties:
                # Only name and generateName of the root metadata belong to the schema.
                self.properties["metadata"] = _root_metadata(props["metadata"])
        additional = raw.get("additionalProperties")
        self.additional: Node | None = Node(additional) if isinstance(additional, Mapping) else None
        self.additional_allows: bool | None = (
            True
            if self.additional is not None
            else additional
            if isinstance(additional, bool)
            else None
        )
        items = raw.get("items")
        self.items: Node | None = Node(items) if isinstance(items, Mapping) else None
        self.all_of = _nodes(raw.get("allOf"))
        self.any_of = _nodes(raw.get("anyOf"))
        self.one_of = _nodes(raw.get("oneOf"))
        not_ = raw.get("not")
        self.not_: Node | None = Node(not_) if isinstance(not_, Mapping) else None
        self.preserve_unknown = raw.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded = raw.get("x-kubernetes-embedded-resource") is True
        list_type = raw.get("x-kubernetes-list-type")
        self.list_type: str = list_type if isinstance(list_type, str) else ""
        keys = raw.get("x-kubernetes-list-map-keys")
        self.map_keys: tuple[str, ...] = (
            tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
        )
        self.default: Any = raw.get("default", NO_DEFAULT)
        rules = raw.get("x-kubernetes-validations")
        self.rules: tuple[celrules.Rule, ...] = (
            tuple(celrules.rule_of(r) for r in rules if isinstance(r, Mapping))
            if isinstance(rules, list)
            else ()
        )
        functions: dict[str, Callable[..., Any]] = {}
        for rule in self.rules:
            functions.update(rule.functions)
        self.cel_functions = functions
        self.cel_kind = (
            CEL_NUMBER
            if self.type == "number"
            else {
                "date-time": CEL_TIMESTAMP,
                "datetime": CEL_TIMESTAMP,
                "duration": CEL_DURATION,
                "byte": CEL_BYTES,
            }.get(self.fmt, 0)
            if self.type == "string"
            else 0
        )
        self.value_checks = bool(
            self.fmt_check
            or self.enum is not None
            or self.maximum is not None
            or self.minimum is not None
            or self.multiple_of is not None
            or self.max_length is not None
            or self.min_length is not None
            or self.pattern
            or self.all_of
            or self.any_of
            or self.one_of
            or self.not_ is not None
        )
        children = [*(self.properties or {}).values()]
        if self.additional is not None:
            children.append(self.additional)
        if self.items is not None:
            children.append(self.items)
        self.deep_ext: bool = (
            self.embedded or self.list_type in ("set", "map") or any(c.deep_ext for c in children)
        )
        self.deep_rules: bool = bool(self.rules) or any(c.deep_rules for c in children)
        self.deep_cel_convert: bool = bool(self.cel_kind) or any(
            c.deep_cel_convert for c in children
        )

    def child(self, key: str) -> Node | None:
        """The schema of object field `key` (a property, else additionalProperties)."""
        props = self.properties
        if props is not None:
            node = props.get(key)
            if node is not None:
                return node
        return self.additional


def _num(value: Any) -> float | int | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _nodes(value: Any) -> tuple[Node, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(Node(v) for v in value if isinstance(v, Mapping))


def _root_metadata(raw: Mapping[str, Any]) -> Node:
    props = raw.get("properties")
    kept = (
        {k: v for k, v in (props or {}).items() if k in ("name", "generateName")}
        if isinstance(props, Mapping)
        else {}
    )
    restricted: dict[str, Any] = {k: v for k, v in raw.items() if k in ("type", "nullable")}
    if kept:
        restricted["properties"] = kept
    return Node(restricted)


_cache: OrderedDict[int, tuple[Mapping[str, Any], Node]] = OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SIZE = 512


def node_of(schema: Mapping[str, Any]) -> Node:
    """The compiled form of a CRD version's openAPIV3Schema (cached per schema object)."""
    key = id(schema)
    hit = _cache.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1]
    node = Node(schema, root=True)
    with _cache_lock:
        # Holding the schema keeps its id from being reused while cached.
        _cache[key] = (schema, node)
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return node
