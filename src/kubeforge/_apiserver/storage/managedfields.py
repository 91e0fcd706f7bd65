"""Field ownership: `metadata.managedFields` bookkeeping and server-side apply.

A field set is a set of paths; a path is a tuple of path elements spelled as in `fieldsV1`:
`f:<field>`, `k:<list-map keys as JSON>`, `v:<set value as JSON>`, `i:<index>`. A path is in a set
when its node is owned itself; leaves always are, and so are list items and the maps and lists
an update created. Flat sets keep the set algebra (union, difference, intersection) in C.

How lists and maps are addressed comes from the schema: `x-kubernetes-list-type` (map, set,
atomic; built-in lists without it fall back to their strategic-merge strategy, as upstream's
conversion does), `x-kubernetes-list-map-keys` and `x-kubernetes-map-type`. Values the schema
does not describe are treated as granular maps and atomic lists.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

import orjson

from kubeforge._api.machinery.schemaview import SchemaView
from kubeforge._api.machinery.timestamps import parse_time_or_none
from kubeforge._apiserver.storage.patch import json_copy, json_equal

__all__ = [
    "LAST_APPLIED_ANNOTATION",
    "MAX_UPDATE_MANAGERS",
    "ApplyConflict",
    "ApplyError",
    "FieldSet",
    "Path",
    "fields_of",
    "managed_fields_error",
    "render_path",
    "server_side_apply",
    "update_managed_fields",
]

Path = tuple[str, ...]

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
# Update entries beyond this many are folded, oldest first, into one "ancient-changes" entry.
MAX_UPDATE_MANAGERS = 10
_ANCIENT = "ancient-changes"
_ANNOTATION_LIMIT = 256 * 1024

_MISSING: Any = object()


class ApplyError(ValueError):
    """An apply request the server cannot merge (bad body, duplicate list keys): 400-class."""


class ApplyConflict(Exception):
    """Applied values differ from values other managers own; `conflicts` lists
    (manager name, rendered path) pairs and `causes` the Status causes upstream sends."""

    def __init__(self, conflicts: list[tuple[str, str, str]]) -> None:
        # Each conflict is (manager name, manager label as printed, rendered path).
        self._conflicts = conflicts
        super().__init__(_conflict_message(conflicts))

    @property
    def conflicts(self) -> list[tuple[str, str]]:
        return [(manager, path) for manager, _, path in self._conflicts]

    @property
    def causes(self) -> list[dict[str, str]]:
        return [
            {"type": "FieldManagerConflict", "message": f"conflict with {label}", "field": path}
            for _, label, path in self._conflicts
        ]


def _conflict_message(conflicts: list[tuple[str, str, str]]) -> str:
    if len(conflicts) == 1:
        _, label, path = conflicts[0]
        return f"Apply failed with 1 conflict: conflict with {label}: {path}"
    lines: list[str] = []
    last = None
    for _, label, path in conflicts:
        if label != last:
            lines.append(f"conflicts with {label}:")
            last = label
        lines.append(f"- {path}")
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


# --- schema types ----------------------------------------------------------------------------

_KEY_DEFAULTS = {"protocol": "TCP"}  # the built-in schemas lack the default of port protocols

_STRING = {"type": "string"}
_STRING_MAP = {"type": "object", "additionalProperties": _STRING}
_OBJECT_META: dict[str, Any] = {
    "type": "object",
    "properties": {
        **dict.fromkeys(
            (
                "name",
                "generateName",
                "namespace",
                "selfLink",
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "deletionTimestamp",
            ),
            _STRING,
        ),
        "generation": {"type": "integer"},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
        "finalizers": {"type": "array", "items": _STRING, "x-kubernetes-list-type": "set"},
        "ownerReferences": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["uid"],
            "items": {
                "type": "object",
                "properties": {
                    "apiVersion": _STRING,
                    "kind": _STRING,
                    "name": _STRING,
                    "uid": _STRING,
                    "controller": {"type": "boolean"},
                    "blockOwnerDeletion": {"type": "boolean"},
                },
            },
        },
        "managedFields": {"type": "array", "x-kubernetes-list-type": "atomic"},
    },
}

# Paths that never belong to anyone: identity and server-set metadata.
_STRIPPED: frozenset[Path] = frozenset(
    [("f:apiVersion",), ("f:kind",), ("f:metadata",)]
    + [
        ("f:metadata", "f:" + name)
        for name in (
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        )
    ]
)


class _Type:
    """What the schema says about one node, resolved once and cached down the tree."""

    __slots__ = (
        "_fields",
        "_items",
        "_key_defaults",
        "_other",
        "atomic_map",
        "declared",
        "embedded",
        "list_keys",
        "list_kind",
        "root",
        "skip",
        "view",
    )

    def __init__(self, view: SchemaView | None, *, root: bool = False) -> None:
        self.view = view if view is not None and view.known else None
        self.root = root
        self.skip: frozenset[str] = frozenset()
        self._fields: dict[str, _Type] = {}
        self._other: _Type | None = None
        self._items: _Type | None = None
        self._key_defaults: dict[str, Any] | None = None
        v = self.view
        if v is None:
            self.declared: frozenset[str] = frozenset()
            self.atomic_map = False
            self.embedded = False
            self.list_kind = "atomic"
            self.list_keys: tuple[str, ...] = ()
            return
        self.declared = frozenset(v.properties)
        self.atomic_map = v.get("x-kubernetes-map-type") == "atomic"
        self.embedded = v.embedded_resource
        self.list_kind, self.list_keys = _list_relationship(v)

    def field(self, name: str) -> _Type:
        if self.root and name == "metadata":
            return _META
        view = self.view
        if view is None:
            return _DEDUCED
        known = self._fields.get(name)
        if known is not None:
            return known
        if name in self.declared or (self.embedded and name in ("apiVersion", "kind")):
            known = _Type(view.field(name))
            self._fields[name] = known
            return known
        if self.embedded and name == "metadata":
            return _META
        # Undeclared names all share one schema (additionalProperties or none), so one child
        # serves them all and arbitrary keys never grow the cache.
        if self._other is None:
            self._other = _Type(view.field(name))
        return self._other

    @property
    def items(self) -> _Type:
        if self._items is None:
            self._items = _DEDUCED if self.view is None else _Type(self.view.items)
        return self._items

    def key_default(self, key: str) -> Any:
        if self._key_defaults is None:
            defaults = {}
            items = self.items
            for name in self.list_keys:
                view = items.field(name).view
                default = view.get("default", _MISSING) if view is not None else _MISSING
                if default is _MISSING:
                    default = _KEY_DEFAULTS.get(name, _MISSING)
                defaults[name] = default
            self._key_defaults = defaults
        return self._key_defaults.get(key, _MISSING)


def _list_relationship(view: SchemaView) -> tuple[str, tuple[str, ...]]:
    kind = view.get("x-kubernetes-list-type")
    if kind == "map":
        return "map", tuple(view.list_map_keys)
    if kind in ("set", "atomic"):
        return kind, ()
    if "merge" in view.patch_strategy.split(","):
        key = view.patch_merge_key
        return ("map", (key,)) if key else ("set", ())
    return "atomic", ()


_DEDUCED = _Type(None)
_META = _Type(SchemaView(_OBJECT_META))
_META.skip = frozenset({"managedFields"})

_ROOTS: dict[int, tuple[SchemaView, _Type]] = {}


def _root_type(schema: SchemaView | None) -> _Type:
    """The compiled type of a top-level schema, kept while its view is in use."""
    if schema is None:
        return _Type(None, root=True)
    cached = _ROOTS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    if len(_ROOTS) > 512:
        _ROOTS.clear()
    root = _Type(schema, root=True)
    # The view is stored with its type so its id cannot be reused while cached.
    _ROOTS[id(schema)] = (schema, root)
    return root


# --- path elements -------------------------------------------------------------------------


def _plain_number(value: Any) -> Any:
    """A whole-number float as the integer it becomes once stored (Go writes 3.0 as 3 and
    reads it back as an int64); one beyond int64 stays a float, as it does there."""
    if isinstance(value, float) and value.is_integer() and -(2**63) <= value < 2**63:
        return int(value)
    return value


def _item_element(item: Any, index: int, t: _Type) -> str:
    """The path element of one element of a granular list."""
    if t.list_kind == "set":
        return "v:" + orjson.dumps(_plain_number(item), option=orjson.OPT_SORT_KEYS).decode()
    if not isinstance(item, dict):
        return f"i:{index}"
    key: dict[str, Any] = {}
    for name in t.list_keys:
        value = item.get(name)
        if value is None:
            value = t.key_default(name)
            if value is _MISSING:
                continue
        key[name] = _plain_number(value)
    return "k:" + orjson.dumps(key, option=orjson.OPT_SORT_KEYS).decode()


def _go_quote(text: str) -> str:
    return orjson.dumps(text).decode()


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return _go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


@functools.lru_cache(maxsize=8192)
def _render_element(element: str) -> str:
    kind, body = element[:2], element[2:]
    if kind == "f:":
        return "." + body
    if kind == "i:":
        return f"[{body}]"
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return f"[{body}]"
    if kind == "v:":
        return f"[={_render_value(value)}]"
    if isinstance(value, dict):
        return "[" + ",".join(f"{k}={_render_value(v)}" for k, v in sorted(value.items())) + "]"
    return f"[{body}]"


def render_path(path: Iterable[str]) -> str:
    """A path as upstream prints it: `.spec.containers[name="c"].image`, `.finalizers[="x"]`."""
    return "".join(_render_element(element) for element in path)


def _value_rank(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (3, value)
    if isinstance(value, int | float):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (4, orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


@functools.lru_cache(maxsize=8192)
def _element_order(element: str) -> tuple[Any, ...]:
    """Sort key of a path element: fields, then keys, then values, then indexes."""
    kind, body = element[:2], element[2:]
    if kind == "f:":
        return (0, body)
    if kind == "i:":
        return (3, int(body) if body.isdigit() else 0)
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return (4, body)
    if kind == "k:" and isinstance(value, dict):
        return (1, tuple((k, _value_rank(v)) for k, v in sorted(value.items())))
    return (2, _value_rank(value))


@functools.lru_cache(maxsize=8192)
def _canonical_element(element: str) -> str:
    """Re-spell a path element read from a client: compact JSON with sorted keys."""
    kind = element[:2]
    if kind == "f:":
        return element
    if kind == "i:":
        if not element[2:].isdigit():
            raise ValueError(f"invalid path element {element!r}")
        return element
    if kind not in ("k:", "v:"):
        raise ValueError(f"invalid path element {element!r}")
    value = orjson.loads(element[2:])
    if kind == "k:":
        if not isinstance(value, dict):
            raise ValueError(f"invalid path element {element!r}")
        value = {k: _plain_number(v) for k, v in value.items()}
    return kind + orjson.dumps(_plain_number(value), option=orjson.OPT_SORT_KEYS).decode()


# --- field sets ----------------------------------------------------------------------------


def _trie(paths: Iterable[Path]) -> dict[str, Any]:
    """Nested dicts of path elements; the key "." marks a node that is itself in the set."""
    root: dict[str, Any] = {}
    for path in paths:
        node = root
        for element in path:
            node = node.setdefault(element, {})
        node["."] = True
    return root


def _emit(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    children = [key for key in node if key != "."]
    if "." in node and children:
        out["."] = {}
    for key in sorted(children, key=_element_order):
        out[key] = _emit(node[key])
    return out


def _walk_sorted(node: dict[str, Any], prefix: Path, out: list[Path]) -> None:
    # Upstream lists a node's own members before descending into any child.
    keys = sorted((k for k in node if k != "."), key=_element_order)
    for key in keys:
        if "." in node[key]:
            out.append((*prefix, key))
    for key in keys:
        if any(k != "." for k in node[key]):
            _walk_sorted(node[key], (*prefix, key), out)


def _sorted_paths(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    _walk_sorted(_trie(paths), (), out)
    return out


@functools.lru_cache(maxsize=4096)
def _decode_fields_cached(encoded: bytes) -> frozenset[Path]:
    # Entries are read back on every write of an object and rarely change between writes.
    return frozenset(_decode_fields(orjson.loads(encoded)))


def _decode_fields(fields: Any) -> set[Path]:
    if not isinstance(fields, Mapping):
        raise ValueError("fieldsV1 must be an object")
    out: set[Path] = set()
    stack: list[tuple[Path, Mapping[str, Any]]] = [((), fields)]
    while stack:
        prefix, node = stack.pop()
        for key, child in node.items():
            if key == ".":
                if prefix:
                    out.add(prefix)
                continue
            if not isinstance(child, Mapping):
                raise ValueError("fieldsV1 nodes must be objects")
            path = (*prefix, _canonical_element(key))
            if child:
                stack.append((path, child))
            else:
                out.add(path)
    return out


class FieldSet:
    """An immutable set of field paths, convertible to and from the `fieldsV1` form."""

    __slots__ = ("paths",)

    def __init__(self, paths: Iterable[Path] = ()) -> None:
        self.paths: frozenset[Path] = frozenset(paths)

    @classmethod
    def from_fields_v1(cls, fields: Mapping[str, Any]) -> FieldSet:
        """Read a `fieldsV1` object; raises ValueError on a malformed one."""
        return cls(_decode_fields(fields))

    def to_fields_v1(self) -> dict[str, Any]:
        """The `fieldsV1` object: elements in upstream order, "." first where a node with
        children is itself in the set."""
        return _emit(_trie(self.paths))

    def rendered(self) -> list[str]:
        """Every path rendered as upstream prints it, in upstream order."""
        return [render_path(p) for p in _sorted_paths(self.paths)]

    def __contains__(self, path: object) -> bool:
        return path in self.paths

    def __iter__(self) -> Iterator[Path]:
        return iter(_sorted_paths(self.paths))

    def __len__(self) -> int:
        return len(self.paths)

    def __bool__(self) -> bool:
        return bool(self.paths)

    def __or__(self, other: FieldSet) -> FieldSet:
        return FieldSet(self.paths | other.paths)

    def __and__(self, other: FieldSet) -> FieldSet:
        return FieldSet(self.paths & other.paths)

    def __sub__(self, other: FieldSet) -> FieldSet:
        return FieldSet(self.paths - other.paths)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSet) and self.paths == other.paths

    def __hash__(self) -> int:
        return hash(self.paths)

    def __repr__(self) -> str:
        return f"FieldSet({self.rendered()!r})"


def _collect(value: Any, t: _Type, prefix: Path, out: set[Path], strict: bool) -> None:
    """Add the owned paths of `value` (at `prefix`) to `out`."""
    if isinstance(value, dict):
        if t.atomic_map and prefix:
            out.add(prefix)
            return
        declared = t.declared
        skip = t.skip
        for key, child in value.items():
            if key in skip:
                continue
            path = (*prefix, "f:" + key)
            _collect(child, t.field(key), path, out, strict)
            # Undeclared keys, nulls and empty maps are owned as nodes; declared fields
            # holding content are owned through their leaves only.
            if child is None or key not in declared or (isinstance(child, dict) and not child):
                out.add(path)
    elif isinstance(value, list):
        if t.list_kind == "atomic":
            out.add(prefix)
            return
        items = t.items
        seen: set[str] = set()
        for index, item in enumerate(value):
            element = _item_element(item, index, t)
            if strict:
                if element in seen:
                    raise ApplyError(
                        f"{render_path(prefix)}: duplicate entries for key "
                        f"{_render_element(element)}"
                    )
                seen.add(element)
            path = (*prefix, element)
            _collect(item, items, path, out, strict)
            out.add(path)
    elif prefix:
        out.add(prefix)


def fields_of(obj: Mapping[str, Any], schema: SchemaView | None) -> FieldSet:
    """The paths present in an object, as an apply of it would own them (before the
    identity and server-set metadata, never owned, are taken out)."""
    out: set[Path] = set()
    _collect(obj, _root_type(schema), (), out, False)
    return FieldSet(out)


def _nodes(value: Any, t: _Type, prefix: Path, out: set[Path]) -> None:
    """Add `prefix` and every node beneath it: what appears or disappears with `value`."""
    out.add(prefix)
    if isinstance(value, dict):
        if t.atomic_map:
            return
        skip = t.skip
        for key, child in value.items():
            if key in skip:
                continue
            if type(child) is str:
                out.add((*prefix, "f:" + key))  # a leaf, the common case: no call
            else:
                _nodes(child, t.field(key), (*prefix, "f:" + key), out)
    elif isinstance(value, list):
        if t.list_kind == "atomic":
            return
        items = t.items
        for index, item in enumerate(value):
            _nodes(item, items, (*prefix, _item_element(item, index, t)), out)


class _Diff:
    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:
        self.added: set[Path] = set()
        self.modified: set[Path] = set()
        self.removed: set[Path] = set()

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.removed)

    def discard(self, paths: Collection[Path], scope: _Scope) -> None:
        for part in (self.added, self.modified, self.removed):
            part.difference_update(paths)
            if scope:
                for path in [p for p in part if scope.ignores(p[0][2:])]:
                    part.discard(path)


def _index_items(values: list[Any], t: _Type) -> dict[str, Any]:
    index: dict[str, Any] = {}
    for i, item in enumerate(values):
        index.setdefault(_item_element(item, i, t), item)
    return index


def _compare(old: Any, new: Any, t: _Type, prefix: Path, diff: _Diff) -> None:
    if old is new:
        return
    if isinstance(old, dict) and isinstance(new, dict) and not (t.atomic_map and prefix):
        if old == new and (orjson.dumps(old) == orjson.dumps(new) or json_equal(old, new)):
            # The common case for most of an object: nothing below changed. Equal encodings
            # say so at once; `==` alone would take 1 and 1.0, or true and 1, for the same.
            return
        skip = t.skip
        for key, before in old.items():
            if key in skip:
                continue
            after = new.get(key, _MISSING)
            if after is before or (type(before) is str and type(after) is str and before == after):
                continue  # most leaves are unchanged strings: no path, no call
            path = (*prefix, "f:" + key)
            if after is _MISSING:
                _nodes(before, t.field(key), path, diff.removed)
            else:
                _compare(before, after, t.field(key), path, diff)
        for key, after in new.items():
            if key not in old and key not in skip:
                _nodes(after, t.field(key), (*prefix, "f:" + key), diff.added)
        return
    if isinstance(old, list) and isinstance(new, list) and t.list_kind != "atomic":
        items = t.items
        before_items = _index_items(old, t)
        after_items = _index_items(new, t)
        for element, before in before_items.items():
            path = (*prefix, element)
            after = after_items.get(element, _MISSING)
            if after is _MISSING:
                _nodes(before, items, path, diff.removed)
            else:
                _compare(before, after, items, path, diff)
        for element, after in after_items.items():
            if element not in before_items:
                _nodes(after, items, (*prefix, element), diff.added)
        return
    if json_equal(old, new):
        return
    diff.modified.add(prefix)
    # A value that changed shape: what was beneath it went away, what is beneath it is new.
    if isinstance(old, dict | list):
        _nodes(old, t, prefix, diff.removed)
        diff.removed.discard(prefix)
    if isinstance(new, dict | list):
        _nodes(new, t, prefix, diff.added)
        diff.added.discard(prefix)


def _diff(
    old: Mapping[str, Any], new: Mapping[str, Any], root: _Type, only: str | None = None
) -> _Diff:
    """What changed from `old` to `new`; of the top-level field `only` alone when given (a
    write that may own nothing else: its changes elsewhere would be discarded)."""
    diff = _Diff()
    if only is None:
        _compare(old, new, root, (), diff)
        diff.added.discard(())
        return diff
    # As _compare does at the top level, for one field.
    before = old.get(only, _MISSING)
    after = new.get(only, _MISSING)
    if only in root.skip or after is before:
        return diff
    path = ("f:" + only,)
    if after is _MISSING:
        _nodes(before, root.field(only), path, diff.removed)
    elif before is _MISSING:
        _nodes(after, root.field(only), path, diff.added)
    elif not (type(before) is str and type(after) is str and before == after):
        _compare(before, after, root.field(only), path, diff)
    return diff


# --- merging an applied configuration -------------------------------------------------------


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for child in value.values():
            _drop_nulls(child)
    elif isinstance(value, list):
        for child in value:
            _drop_nulls(child)
    return value


def _merge_value(current: Any, applied: Any, t: _Type) -> Any:
    """Merge an applied value (our own copy) into the current one (also ours)."""
    if isinstance(applied, dict):
        if isinstance(current, dict) and not t.atomic_map:
            for key, value in applied.items():
                # A null in an apply owns the field and leaves it unset.
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = _merge_value(current.get(key, _MISSING), value, t.field(key))
            return current
        return _drop_nulls(applied)
    if isinstance(applied, list):
        if isinstance(current, list) and t.list_kind != "atomic":
            return _merge_list(current, applied, t)
        return _drop_nulls(applied)
    return applied


def _merge_list(live: list[Any], applied: list[Any], t: _Type) -> list[Any]:
    """Merge list items by identity. Applied items keep their relative order; live-only items
    stay where they were between them (the structured-merge-diff ordering)."""
    items = t.items
    as_set = t.list_kind == "set"
    left = [_item_element(v, i, t) for i, v in enumerate(live)]
    right = [_item_element(v, i, t) for i, v in enumerate(applied)]
    left_at: dict[str, int] = {}
    for i, element in enumerate(left):
        left_at.setdefault(element, i)
    right_at = {element: i for i, element in enumerate(right)}
    shared = iter([e for e in right if e in left_at])
    next_shared = next(shared, None)
    done: set[str] = set()
    out: list[Any] = []

    def merged(live_index: int | None, applied_index: int) -> Any:
        value = applied[applied_index]
        if as_set:
            return value
        current = live[live_index] if live_index is not None else _MISSING
        return _merge_value(current, value, items)

    li = ri = 0
    while li < len(left) or ri < len(right):
        if li < len(left) and ri < len(right):
            element = left[li]
            if element == right[ri]:
                done.add(element)
                out.append(merged(li, ri))
                li += 1
                ri += 1
                next_shared = next(shared, None)
                continue
            if element in right_at and next_shared is not None and next_shared != element:
                # Shared, but the applied order places it later: it is emitted there.
                li += 1
                continue
        if li < len(left):
            element = left[li]
            if element not in right_at:
                out.append(live[li])
                li += 1
                continue
            if element in done:
                li += 1
                continue
        if ri < len(right):
            element = right[ri]
            done.add(element)
            out.append(merged(left_at.get(element), ri))
            ri += 1
            if next_shared is not None and next_shared == element:
                next_shared = next(shared, None)
    return out


def _remove_paths(value: Any, trie: dict[str, Any], t: _Type) -> None:
    """Delete, in place, the nodes named by a removal trie (None marks a removed node)."""
    if isinstance(value, dict):
        for element, sub in trie.items():
            if not element.startswith("f:"):
                continue
            key = element[2:]
            if key not in value:
                continue
            if sub is None:
                del value[key]
            else:
                _remove_paths(value[key], sub, t.field(key))
    elif isinstance(value, list) and t.list_kind != "atomic":
        items = t.items
        kept = []
        for index, item in enumerate(value):
            sub = trie.get(_item_element(item, index, t), _MISSING)
            if sub is None:
                continue
            if sub is not _MISSING:
                _remove_paths(item, sub, items)
            kept.append(item)
        value[:] = kept


def _removal_trie(paths: Iterable[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(paths, key=len):
        node: dict[str, Any] = root
        for element in path[:-1]:
            nxt = node.setdefault(element, {})
            if nxt is None:
                # An ancestor goes away whole; nothing beneath needs naming.
                break
            node = nxt
        else:
            node[path[-1]] = None
    return root


def _stale(previous: set[Path], managed: set[Path], root: _Type) -> set[Path]:
    """What a manager owned before and nobody owns now. Declared fields count as owned by
    whoever owns something beneath them (list items and map keys do not), so a declared field
    whose whole content went away goes too, and a list item goes whole."""
    if previous <= managed:
        return set()
    beneath: set[Path] = set()
    for path in managed:
        for i in range(1, len(path)):
            beneath.add(path[:i])
    stale: set[Path] = set()
    for path in previous - managed:
        t = root
        for i in range(len(path)):
            element = path[i]
            prefix = path[: i + 1]
            if element.startswith("f:"):
                name = element[2:]
                named = name in t.declared or (t.root and name == "metadata")
                t = t.field(name)
            else:
                named = False
                t = t.items
            if i == len(path) - 1:
                if not (named and prefix in beneath):
                    stale.add(prefix)
            elif named and prefix not in beneath and prefix not in managed:
                stale.add(prefix)
    return stale - _STRIPPED


# --- managedFields entries ------------------------------------------------------------------


class _Entry:
    __slots__ = (
        "api_version",
        "dirty",
        "fields",
        "manager",
        "operation",
        "raw",
        "subresource",
        "time",
    )

    def __init__(
        self,
        manager: str,
        operation: str,
        api_version: str,
        subresource: str,
        time: str | None,
        fields: set[Path],
        raw: dict[str, Any] | None = None,
    ) -> None:
        self.manager = manager
        self.operation = operation
        self.api_version = api_version
        self.subresource = subresource
        self.time = time
        self.fields = fields
        self.raw = raw
        self.dirty = raw is None

    @property
    def key(self) -> tuple[str, str, str, str]:
        # Appliers keep one entry whatever version they apply at; updaters one per version.
        version = self.api_version if self.operation == "Update" else ""
        return (self.manager, self.operation, version, self.subresource)

    @property
    def identifier(self) -> str:
        """The manager identifier upstream sorts conflicts by (JSON of the identity)."""
        ident: dict[str, str] = {"manager": self.manager, "operation": self.operation}
        if self.operation == "Update":
            ident["apiVersion"] = self.api_version
        if self.subresource:
            ident["subresource"] = self.subresource
        return orjson.dumps(ident).decode()

    @property
    def label(self) -> str:
        """The manager as conflict messages print it."""
        text = _go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {_go_quote(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text

    def take(self, paths: Collection[Path]) -> None:
        """Drop ownership of `paths`."""
        if paths and not self.fields.isdisjoint(paths):
            self.fields = self.fields - set(paths)
            self.dirty = True

    def encode(self) -> dict[str, Any]:
        """The entry as a dict: the one it was read from when unchanged (entries are read
        from the request's private copies of objects, whose parts the new object may
        take), else a fresh one."""
        if not self.dirty and self.raw is not None:
            return self.raw
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = orjson.loads(_fields_v1(frozenset(self.fields)))
        if self.subresource:
            out["subresource"] = self.subresource
        return out


@functools.lru_cache(maxsize=4096)
def _fields_v1(fields: frozenset[Path]) -> bytes:
    # Objects of one kind mostly share a shape, so the same field sets recur write after
    # write; building and sorting the trie once per shape keeps this off the write path.
    return orjson.dumps(_emit(_trie(fields)))


def _decode_entries(value: Any) -> list[_Entry] | None:
    """The entries of a managedFields list; None when it is not a valid one."""
    if not isinstance(value, list):
        return None
    entries: dict[tuple[str, str, str, str], _Entry] = {}
    try:
        for raw in value:
            if not isinstance(raw, dict):
                return None
            operation = raw.get("operation")
            api_version = raw.get("apiVersion")
            manager = raw.get("manager", "")
            subresource = raw.get("subresource") or ""
            time = raw.get("time")
            if operation not in ("Apply", "Update") or not isinstance(api_version, str):
                return None
            if not api_version or raw.get("fieldsType") != "FieldsV1":
                return None
            if not isinstance(manager, str) or not isinstance(subresource, str):
                return None
            fields = set(_decode_fields_cached(orjson.dumps(raw.get("fieldsV1") or {})))
            entry = _Entry(
                manager,
                operation,
                api_version,
                subresource,
                time if isinstance(time, str) else None,
                fields,
                raw,
            )
            entries[entry.key] = entry
    except (ValueError, orjson.JSONDecodeError):
        return None
    return list(entries.values())


def managed_fields_error(value: Any) -> str | None:
    """Why `value` is not a managedFields list the field manager can read, in the words of
    kube-apiserver's DecodeManagedFields (k8s.io/apimachinery
    pkg/util/managedfields/internal/managedfields.go); None when it is one (or absent)."""
    if value is None or _decode_entries(value) is not None:
        return None
    if not isinstance(value, list):
        return "managedFields must be a list"
    for index, raw in enumerate(value):
        if not isinstance(raw, dict):
            return f"managed fields entry {index} is not an object"
        if raw.get("operation") not in ("Apply", "Update"):
            return "operation must be `Apply` or `Update`"
        if not raw.get("apiVersion"):
            return "apiVersion must not be empty"
        fields_type = raw.get("fieldsType")
        if not fields_type:
            return f"missing fieldsType in managed fields entry {index}"
        if fields_type != "FieldsV1":
            return (
                f"invalid fieldsType {_go_quote(str(fields_type))} in managed fields entry {index}"
            )
        try:
            _decode_fields(raw.get("fieldsV1") or {})
        except ValueError as exc:
            return f"error decoding versioned set of managed fields entry {index}: {exc}"
    return "the managed fields entries cannot be read"


def _is_reset(value: Any) -> bool:
    """`managedFields: []` or `[{}]` in a request asks for the entries to be dropped."""
    return isinstance(value, list) and (value == [] or value == [{}])


@functools.lru_cache(maxsize=1024)
def _seconds(time: str | None) -> int:
    moment = parse_time_or_none(time)
    return 0 if moment is None else int(moment.timestamp())


def _cap_updaters(entries: list[_Entry]) -> list[_Entry]:
    updaters = [e for e in entries if e.operation == "Update" and e.manager != _ANCIENT]
    buckets = {
        e.api_version: e for e in entries if e.operation == "Update" and e.manager == _ANCIENT
    }
    count = len(updaters) + len(buckets)
    if count <= MAX_UPDATE_MANAGERS:
        return entries
    updaters.sort(key=lambda e: (_seconds(e.time), e.identifier))
    folded: set[int] = set()
    for entry in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        bucket = buckets.get(entry.api_version)
        if bucket is None:
            bucket = _Entry(_ANCIENT, "Update", entry.api_version, "", entry.time, set())
            buckets[entry.api_version] = bucket
            entries.append(bucket)
            count += 1
        bucket.fields = bucket.fields | entry.fields
        if _seconds(entry.time) > _seconds(bucket.time):
            bucket.time = entry.time
        bucket.dirty = True
        folded.add(id(entry))
        count -= 1
    return [e for e in entries if id(e) not in folded]


def _encode_entries(entries: list[_Entry]) -> list[dict[str, Any]]:
    live = _cap_updaters([e for e in entries if e.fields])
    live.sort(
        key=lambda e: (e.operation, _seconds(e.time), e.manager, e.api_version, e.subresource)
    )
    return [e.encode() for e in live]


def _store_entries(meta: dict[str, Any], entries: list[_Entry]) -> None:
    encoded = _encode_entries(entries)
    if encoded:
        meta["managedFields"] = encoded
    else:
        meta.pop("managedFields", None)


class _Scope:
    """The top-level fields a write may own: all but `ignored`, or only `only`."""

    __slots__ = ("ignored", "only")

    def __init__(self, ignored: Collection[str] | None, subresource: str | None) -> None:
        self.ignored: frozenset[str] = frozenset(ignored or ())
        # A /status write changes status alone unless the caller says otherwise.
        self.only = "status" if ignored is None and subresource == "status" else None

    def __bool__(self) -> bool:
        return bool(self.ignored) or self.only is not None

    def ignores(self, name: str) -> bool:
        return name in self.ignored or (self.only is not None and name != self.only)

    def owned(self, paths: set[Path]) -> set[Path]:
        owned = paths - _STRIPPED
        if self:
            owned = {p for p in owned if not self.ignores(p[0][2:])}
        return owned


# --- the two write paths ---------------------------------------------------------------------


def update_managed_fields(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    schema: SchemaView | None,
    api_version: str,
    subresource: str | None,
    now: str,
    *,
    ignored: Collection[str] | None = None,
) -> None:
    """Record a create, update or non-apply patch in `new["metadata"]["managedFields"]`: the
    manager takes the fields it changed, and other managers lose them."""
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        meta = new["metadata"] = {}
    requested = meta.get("managedFields")
    if old is None and requested is None and ignored is None and not subresource:
        # A plain create of an object with no granular list, the most common write, built
        # directly (the same entry the general path below writes).
        fields_v1 = _created_fields_v1(new, _root_type(schema))
        if fields_v1 is not None:
            if fields_v1:
                meta["managedFields"] = [_created_entry(manager, api_version, now, fields_v1)]
            else:
                meta.pop("managedFields", None)
            return
    old_meta = old.get("metadata") if old is not None else None
    old_fields = old_meta.get("managedFields") if isinstance(old_meta, dict) else None

    # Clients may write managedFields themselves (kubectl's client-side to server-side
    # migration does) or reset them with [] or [{}]; on subresources, and when the list is
    # absent, empty or unreadable, the stored entries stand.
    entries: list[_Entry] | None = None
    if subresource:
        entries = None
    elif _is_reset(requested):
        entries = []
    elif requested:
        entries = _decode_entries(requested) or None
    if entries is None:
        entries = _decode_entries(old_fields) or []

    # An existing object that carries no entries is not tracked until someone applies.
    if old is not None and not entries:
        meta.pop("managedFields", None)
        return

    root = _root_type(schema)
    if old is None and not entries:
        # A plain create (the common write): the manager owns every field it sent.
        own: set[Path] = set()
        skip = root.skip
        for name, value in new.items():
            if name not in skip:
                _nodes(value, root.field(name), ("f:" + name,), own)
        own.difference_update(_STRIPPED)
        scope = _Scope(ignored, subresource)
        if scope:
            own = {p for p in own if not scope.ignores(p[0][2:])}
        if own:
            created = _Entry(manager, "Update", api_version, subresource or "", now, own)
            meta["managedFields"] = [created.encode()]
        else:
            meta.pop("managedFields", None)
        return
    scope = _Scope(ignored, subresource)
    diff = _diff(old if old is not None else {}, new, root, scope.only)
    diff.discard(_STRIPPED, scope)
    if diff:
        changed = diff.added | diff.modified
        touched = changed | diff.removed
        key = (manager, "Update", api_version, subresource or "")
        own = changed - diff.removed
        previous = None
        for entry in entries:
            entry.take(touched)
            if entry.key == key:
                previous = entry
        if own:
            if previous is None:
                entries.append(_Entry(manager, "Update", api_version, subresource or "", now, own))
            else:
                previous.fields = previous.fields | own
                previous.time = now
                previous.dirty = True
    _store_entries(meta, entries)


# The metadata fields in _STRIPPED, by name.
_STRIPPED_META = frozenset(p[1][2:] for p in _STRIPPED if len(p) == 2)


def _created_fields_v1(obj: Mapping[str, Any], root: _Type) -> dict[str, Any] | None:
    """The fieldsV1 a plain create's manager gets: every node of `obj` but the identity and
    server-set metadata, built directly rather than as paths, a trie and its encoding.
    None for an object with a granular list, or with anything beneath a stripped field
    (only the field itself is stripped): the general path handles those."""
    out: dict[str, Any] = {}
    skip = root.skip
    for name in sorted(obj):
        if name in skip:
            continue
        value = obj[name]
        if name == "apiVersion" or name == "kind":
            if type(value) is not str and value and isinstance(value, (dict, list)):
                return None
            continue
        t = root.field(name)
        if name == "metadata":
            if t is not _META or type(value) is not dict:
                return None
            meta_out: dict[str, Any] = {}
            meta_skip = t.skip
            kept = []
            for key, child in value.items():
                if key in meta_skip:
                    continue
                if key in _STRIPPED_META:
                    if type(child) is not str and child and isinstance(child, (dict, list)):
                        return None
                    continue
                kept.append(key)
            kept.sort()
            for key in kept:
                child = value[key]
                if type(child) is str:
                    meta_out["f:" + key] = {}
                else:
                    sub = _owned_tree(child, t.field(key))
                    if sub is None:
                        return None
                    meta_out["f:" + key] = sub
            if meta_out:
                out["f:metadata"] = meta_out
            continue
        sub = _owned_tree(value, t)
        if sub is None:
            return None
        out["f:" + name] = sub
    return out


def _owned_tree(value: Any, t: _Type) -> dict[str, Any] | None:
    """The fieldsV1 of a node owned with everything beneath it (see _nodes and _emit: a
    node with children lists itself as "." before them, in field order); None at a
    granular list."""
    if isinstance(value, dict):
        if t.atomic_map:
            return {}
        skip = t.skip
        out: dict[str, Any] = {}
        for key in sorted(value):
            if key in skip:
                continue
            child = value[key]
            if not out:
                out["."] = {}
            if type(child) is str:
                out["f:" + key] = {}
            else:
                sub = _owned_tree(child, t.field(key))
                if sub is None:
                    return None
                out["f:" + key] = sub
        return out
    if isinstance(value, list) and value and t.list_kind != "atomic":
        return None
    return {}


def _created_entry(
    manager: str, api_version: str, now: str, fields_v1: dict[str, Any]
) -> dict[str, Any]:
    """The one managedFields entry of a plain create, as _Entry.encode writes it."""
    return {
        "manager": manager,
        "operation": "Update",
        "apiVersion": api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1,
    }


def _last_applied_allowance(live: Mapping[str, Any], root: _Type) -> set[Path] | None:
    """Fields of kubectl's last-applied annotation whose live values still match it."""
    meta = live.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    text = annotations.get(LAST_APPLIED_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(text, str) or not text:
        return None
    try:
        last = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(last, dict):
        return None
    fields: set[Path] = set()
    _collect(last, root, (), fields, False)
    diff = _diff(last, live, root)
    return fields - diff.modified


def _sync_last_applied(result: dict[str, Any], applied: Mapping[str, Any]) -> None:
    """After kubectl applies server-side, its client-side annotation follows the intent."""
    meta = result.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict) or LAST_APPLIED_ANNOTATION not in annotations:
        return
    intent = json_copy(applied)
    intent_meta = intent.get("metadata")
    if isinstance(intent_meta, dict) and isinstance(intent_meta.get("annotations"), dict):
        intent_meta["annotations"].pop(LAST_APPLIED_ANNOTATION, None)
        if not intent_meta["annotations"]:
            del intent_meta["annotations"]
    text = orjson.dumps(intent, option=orjson.OPT_SORT_KEYS).decode()
    # Encoded as Go's encoder does: HTML-significant characters escaped, newline at the end.
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"
    if len(text) > _ANNOTATION_LIMIT:
        del annotations[LAST_APPLIED_ANNOTATION]
    else:
        annotations[LAST_APPLIED_ANNOTATION] = text


def server_side_apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    manager: str,
    force: bool,
    schema: SchemaView | None,
    api_version: str,
    subresource: str | None,
    now: str,
    *,
    ignored: Collection[str] | None = None,
) -> dict[str, Any]:
    """Merge a manager's applied configuration into the live object (None: create) and return
    the result with updated managedFields. Fields the manager applied before and no longer
    applies are removed unless someone else owns them. Raises ApplyConflict, ApplyError.
    `ignored` names top-level fields the apply leaves alone (e.g. `status` on the main
    resource of a type with a status subresource)."""
    if not isinstance(applied, dict):
        raise ApplyError("an apply configuration must be an object")
    applied_meta = applied.get("metadata")
    if isinstance(applied_meta, dict) and applied_meta.get("managedFields") is not None:
        raise ApplyError("metadata.managedFields must be nil")
    scope = _Scope(ignored, subresource)
    root = _root_type(schema)
    sub = subresource or ""

    intent = json_copy(applied)
    if scope:
        for name in [k for k in intent if scope.ignores(k)]:
            del intent[name]
    intent_paths: set[Path] = set()
    _collect(intent, root, (), intent_paths, True)
    owned = scope.owned(intent_paths)

    live_body: dict[str, Any] = live if live is not None else {}
    live_meta = live_body.get("metadata")
    entries = (
        _decode_entries(live_meta.get("managedFields")) if isinstance(live_meta, dict) else None
    ) or []
    key = (manager, "Apply", "", sub)
    mine = next((e for e in entries if e.key == key), None)
    others = [e for e in entries if e is not mine]

    merged: dict[str, Any] = json_copy(live_body)
    if isinstance(merged.get("metadata"), dict):
        merged["metadata"].pop("managedFields", None)
    _merge_value(merged, intent, root)

    if mine is not None and mine.fields:
        managed = set(intent_paths)
        for entry in others:
            managed |= entry.fields
        stale = _stale(mine.fields, managed, root)
        if stale:
            _remove_paths(merged, _removal_trie(stale), root)

    diff = _diff(live_body, merged, root)
    diff.discard(_STRIPPED, scope)
    changed = diff.added | diff.modified
    clashes = [(e, e.fields & changed) for e in others]
    clashes = [(e, paths) for e, paths in clashes if paths]
    if clashes and not force:
        allowed = _last_applied_allowance(live_body, root) if manager == "kubectl" else None
        if allowed is not None:
            clashes = [(e, paths - allowed) for e, paths in clashes]
            clashes = [(e, paths) for e, paths in clashes if paths]
        if clashes:
            raise ApplyConflict(_describe(clashes))
        clashes = [(e, e.fields & changed) for e in others]
    for entry, paths in clashes:
        entry.take(paths)
    if diff.removed:
        for entry in others:
            entry.take(diff.removed)

    if mine is None:
        entries.append(_Entry(manager, "Apply", api_version, sub, now, owned))
    elif mine.fields != owned or mine.api_version != api_version or diff:
        mine.fields = owned
        mine.api_version = api_version
        if diff or mine.time is None:
            mine.time = now
        mine.dirty = True
    meta = merged.get("metadata")
    if not isinstance(meta, dict):
        meta = merged["metadata"] = {}
    _store_entries(meta, entries)
    if manager == "kubectl":
        _sync_last_applied(merged, applied)
    return merged


def _describe(clashes: list[tuple[_Entry, set[Path]]]) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for entry, paths in sorted(clashes, key=lambda pair: pair[0].identifier):
        label = entry.label
        out.extend((entry.manager, label, render_path(p)) for p in _sorted_paths(paths))
    return out
