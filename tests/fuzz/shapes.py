"""Whether a stored object is well-formed for its kind: every integer field holds an
integer of its Go type's range (what Go's typed decoding guarantees for built-in kinds, and
what a structural schema's `type: integer` guarantees for custom resources, whose values
kube-apiserver serves as JSON integers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeforge._api.machinery.definitions import load_file, resolve

__all__ = ["integer_problems"]

_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_REF = "#/$defs/"
_DEFS: dict[str, Any] | None = None


def _defs() -> dict[str, Any]:
    global _DEFS
    if _DEFS is None:
        _, directory = resolve("1.33")
        _DEFS = load_file(directory / "_definitions.json")
    return _DEFS


def definition_of(api_version: str, kind: str) -> Mapping[str, Any] | None:
    group, _, version = api_version.rpartition("/")
    for node in _defs().values():
        for gvk in node.get("x-kubernetes-group-version-kind", ()):
            if (gvk["group"], gvk["version"], gvk["kind"]) == (group, version, kind):
                return node  # type: ignore[no-any-return]
    return None


def integer_problems(value: Any, schema: Mapping[str, Any] | None, path: str = "") -> list[str]:
    """Paths under `value` where `schema` wants an integer and something else is stored."""
    if schema is None or value is None:
        return []
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF):
        return integer_problems(value, _defs().get(ref[len(_REF) :]), path)
    types = schema.get("type")
    types = [types] if isinstance(types, str) else list(types or ())
    if "integer" in types and "string" not in types:
        low, high = _RANGES.get(str(schema.get("format")), _RANGES["int64"])
        if type(value) is not int or not low <= value <= high:
            return [f"{path}: {value!r}"]
        return []
    problems: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            child = (
                props.get(key) if key in props else extra if isinstance(extra, Mapping) else None
            )
            problems += integer_problems(item, child, f"{path}.{key}")
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                problems += integer_problems(item, items, f"{path}[{i}]")
    return problems
