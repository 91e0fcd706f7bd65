"""Walk an OpenAPI / JSON schema by field, with `$ref` resolved and Kubernetes extensions read.

Both schema sources the server uses look different on the surface: the built-in definitions
(`$ref` into `$defs`, nullable type arrays, `oneOf` for int-or-string) and CRD schemas (inline,
structural). `SchemaView` hides that so patching, pruning and field checks share one walker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SchemaView"]

_REF_PREFIXES = (
    "#/$defs/",
    "#/definitions/",
    "#/components/schemas/",
    "/api/_definitions.json#/$defs/",
)


class SchemaView:
    """A schema node. `defs` resolves `$ref`s; a view of None means "anything goes"."""

    __slots__ = ("defs", "node")

    def __init__(self, node: Mapping[str, Any] | None, defs: Mapping[str, Any] | None = None):
        self.defs = defs or {}
        self.node: Mapping[str, Any] | None = self._resolve(node) if node is not None else None

    def _resolve(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        seen = 0
        while True:
            ref = node.get("$ref")
            if ref is None:
                all_of = node.get("allOf")
                # OpenAPI v3 wraps a referenced type as {"allOf": [{"$ref": ...}], "default": ...}.
                if (
                    isinstance(all_of, list)
                    and len(all_of) == 1
                    and "properties" not in node
                    and "type" not in node
                ):
                    merged = {k: v for k, v in node.items() if k != "allOf"}
                    inner = self._resolve(all_of[0])
                    node = {**inner, **merged}
                return node
            seen += 1
            if seen > 64:
                return {}
            for prefix in _REF_PREFIXES:
                if ref.startswith(prefix):
                    target = self.defs.get(ref[len(prefix) :])
                    break
            else:
                target = None
            extra = {k: v for k, v in node.items() if k != "$ref"}
            node = {**(target or {}), **extra}

    def _child(self, node: Mapping[str, Any] | None) -> SchemaView:
        view = SchemaView.__new__(SchemaView)
        view.defs = self.defs
        view.node = self._resolve(node) if node is not None else None
        return view

    @property
    def known(self) -> bool:
        """False for the "anything goes" view (no schema known here)."""
        return self.node is not None

    @property
    def type(self) -> str | None:
        """The JSON type ("object", "array", "string", ...) ignoring nullability."""
        if self.node is None:
            return None
        t = self.node.get("type")
        if isinstance(t, list):
            kinds = [x for x in t if x != "null"]
            return kinds[0] if len(kinds) == 1 else None
        if t is None and "properties" in self.node:
            return "object"
        return t if isinstance(t, str) else None

    def get(self, key: str, default: Any = None) -> Any:
        return default if self.node is None else self.node.get(key, default)

    @property
    def properties(self) -> Mapping[str, Any]:
        props = self.get("properties")
        return props if isinstance(props, Mapping) else {}

    @property
    def preserves_unknown(self) -> bool:
        return bool(self.get("x-kubernetes-preserve-unknown-fields"))

    @property
    def int_or_string(self) -> bool:
        if self.get("x-kubernetes-int-or-string"):
            return True
        one_of = self.get("oneOf")
        if isinstance(one_of, list):
            kinds: set[Any] = set()
            for alt in one_of:
                t = alt.get("type") if isinstance(alt, Mapping) else None
                kinds.update(t if isinstance(t, list) else [t])
            kinds.discard("null")
            return kinds in ({"string", "integer"}, {"string", "number"})
        return False

    @property
    def embedded_resource(self) -> bool:
        return bool(self.get("x-kubernetes-embedded-resource"))

    def field(self, name: str) -> SchemaView | None:
        """The schema of object field `name`; None when the field is unknown to the schema;
        the "anything" view when the schema does not constrain it."""
        if self.node is None:
            return self._child(None)
        props = self.properties
        if name in props:
            return self._child(props[name])
        additional = self.get("additionalProperties")
        if isinstance(additional, Mapping):
            return self._child(additional)
        if additional is True or self.preserves_unknown:
            return self._child(None)
        if self.embedded_resource and name in ("apiVersion", "kind", "metadata"):
            return self._child(None)
        if not props and additional is None and self.type not in ("object", None):
            return None
        if not props and additional is None:
            # An object with no declared fields (`type: object` alone) accepts anything in
            # the built-in definitions (e.g. RawExtension); CRD pruning treats it as closed.
            return self._child(None) if "type" not in self.node else None
        return None

    @property
    def items(self) -> SchemaView:
        items = self.get("items")
        return self._child(items if isinstance(items, Mapping) else None)

    @property
    def additional_properties(self) -> SchemaView | None:
        additional = self.get("additionalProperties")
        if isinstance(additional, Mapping):
            return self._child(additional)
        return None

    @property
    def list_type(self) -> str:
        """`atomic`, `set` or `map` (x-kubernetes-list-type; atomic when absent)."""
        return str(self.get("x-kubernetes-list-type") or "atomic")

    @property
    def list_map_keys(self) -> list[str]:
        keys = self.get("x-kubernetes-list-map-keys")
        return list(keys) if isinstance(keys, list) else []

    @property
    def map_type(self) -> str:
        """`granular` or `atomic` (x-kubernetes-map-type; granular when absent)."""
        return str(self.get("x-kubernetes-map-type") or "granular")

    @property
    def patch_strategy(self) -> str:
        """Strategic-merge strategy: `merge`, `retainKeys`, `merge,retainKeys` or ``."""
        return str(self.get("x-kubernetes-patch-strategy") or "")

    @property
    def patch_merge_key(self) -> str | None:
        key = self.get("x-kubernetes-patch-merge-key")
        return key if isinstance(key, str) else None
