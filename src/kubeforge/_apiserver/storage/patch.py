"""The three PATCH formats that change an object as a whole: JSON patch, merge patch, strategic
merge patch. Each is a pure function of JSON-like values that never mutates its inputs.

Server-side apply lives in `managedfields.py`, because it is as much about ownership as merging.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Hashable
from typing import Any

import orjson

from kubeforge._api.machinery.schemaview import SchemaView

__all__ = [
    "MAX_JSON_PATCH_COPY_BYTES",
    "MAX_JSON_PATCH_OPERATIONS",
    "PatchDecodeError",
    "PatchError",
    "PatchTooLarge",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "json_copy",
    "json_equal",
    "merge_patch_into",
]

MAX_JSON_PATCH_OPERATIONS = 10000
# What the `copy` operations of one JSON patch may add, in encoded bytes: kube-apiserver
# caps it at 3 MiB (JSONPatchMaxCopyBytes, k8s.io/apiserver pkg/server/config.go), so a
# short patch cannot double an object again and again.
MAX_JSON_PATCH_COPY_BYTES = 3 * 1024 * 1024

_MISSING: Any = object()


class PatchError(Exception):
    """A patch that cannot be applied; `code` is the HTTP status the server answers with."""

    code = 422

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PatchDecodeError(PatchError):
    """The patch document itself is malformed (not a list of operations, bad directive format)."""

    code = 400


class PatchTooLarge(PatchError):
    """A JSON patch with more operations than the server accepts."""

    code = 413


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON-like value."""
    if isinstance(value, dict | list):
        # A round trip through orjson is the fastest deep copy; integers beyond 64 bits are
        # the one JSON value it cannot encode.
        try:
            return orjson.loads(orjson.dumps(value))
        except TypeError:
            return copy.deepcopy(value)
    return value


def json_equal(a: Any, b: Any) -> bool:
    """JSON value equality: numbers by value, booleans never equal to numbers."""
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is dict:
        if tb is not dict or len(a) != len(b):
            return False
        for key, value in a.items():
            other = b.get(key, _MISSING)
            if other is _MISSING or not json_equal(value, other):
                return False
        return True
    if ta is list:
        if tb is not list or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in (int, float) and tb in (int, float):
        return bool(a == b)
    return ta is tb and bool(a == b)


# --- JSON patch (RFC 6902) -----------------------------------------------------------------

_INDEX = re.compile(r"0|[1-9][0-9]*")
_BAD_ESCAPE = re.compile(r"~(?![01])")


def _pointer(op: dict[str, Any], member: str) -> list[str]:
    path = op.get(member, _MISSING)
    if path is _MISSING:
        raise PatchError(f'operation missing "{member}" member')
    if not isinstance(path, str):
        raise PatchError(f'"{member}" must be a string')
    if path == "":
        return []
    if path[0] != "/":
        raise PatchError(f"JSON pointer must be empty or start with '/': {path!r}")
    tokens = path[1:].split("/")
    for i, token in enumerate(tokens):
        if "~" in token:
            if _BAD_ESCAPE.search(token):
                raise PatchError(f"invalid escape in JSON pointer: {path!r}")
            tokens[i] = token.replace("~1", "/").replace("~0", "~")
    return tokens


def _index(token: str, size: int, *, allow_end: bool) -> int:
    if _INDEX.fullmatch(token) is None:
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > size or (index == size and not allow_end):
        raise PatchError(f"array index {index} out of bounds")
    return index


def _parent(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"missing path element {token!r}")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(token, len(node), allow_end=False)]
        else:
            raise PatchError(f"cannot descend into a scalar at {token!r}")
    return node


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"missing path element {last!r}")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(last, len(parent), allow_end=False)]
    raise PatchError(f"cannot descend into a scalar at {last!r}")


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            parent.insert(_index(last, len(parent), allow_end=True), value)
    else:
        raise PatchError(f"cannot add to a scalar at {last!r}")
    return doc


def _remove(doc: Any, tokens: list[str]) -> Any:
    """Remove the target and return it."""
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"cannot remove missing key {last!r}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(last, len(parent), allow_end=False))
    raise PatchError(f"cannot remove from a scalar at {last!r}")


def _replace(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"cannot replace missing key {last!r}")
        parent[last] = value
    elif isinstance(parent, list):
        parent[_index(last, len(parent), allow_end=False)] = value
    else:
        raise PatchError(f"cannot replace inside a scalar at {last!r}")
    return doc


def _value(op: dict[str, Any]) -> Any:
    if "value" not in op:
        raise PatchError(f'"{op.get("op")}" operation missing "value" member')
    return op["value"]


class _CopyBudget:
    """What the copies of one patch have added so far."""

    __slots__ = ("used",)

    def __init__(self) -> None:
        self.used = 0


def _copied(value: Any, budget: _CopyBudget) -> Any:
    """A copy of `value` for a `copy` operation, charged to the patch's budget."""
    try:
        encoded = orjson.dumps(value)
    except TypeError:
        # Past what orjson nests (copies can double depth); far past what an object may.
        raise PatchError("the value to copy nests too deeply") from None
    budget.used += len(encoded)
    if budget.used > MAX_JSON_PATCH_COPY_BYTES:
        raise PatchError(
            f"the copy operations of this patch add {budget.used} bytes, more than the "
            f"{MAX_JSON_PATCH_COPY_BYTES} allowed"
        )
    return orjson.loads(encoded)


def _apply_operation(doc: Any, op: dict[str, Any], budget: _CopyBudget) -> Any:
    kind = op.get("op")
    if kind == "add":
        return _add(doc, _pointer(op, "path"), _value(op))
    if kind == "remove":
        _remove(doc, _pointer(op, "path"))
        return doc
    if kind == "replace":
        return _replace(doc, _pointer(op, "path"), _value(op))
    if kind == "move":
        source = _pointer(op, "from")
        target = _pointer(op, "path")
        if source == target:
            _get(doc, source)
            return doc
        if target[: len(source)] == source:
            raise PatchError("cannot move a value into one of its children")
        return _add(doc, target, _remove(doc, source))
    if kind == "copy":
        value = _copied(_get(doc, _pointer(op, "from")), budget)
        return _add(doc, _pointer(op, "path"), value)
    if kind == "test":
        if not json_equal(_get(doc, _pointer(op, "path")), _value(op)):
            raise PatchError("testing value failed")
        return doc
    raise PatchError(f"unexpected kind of operation: {kind!r}")


def apply_json_patch(doc: Any, ops: Any) -> Any:
    """Apply an RFC 6902 JSON patch (a list of operations) to a copy of `doc`."""
    if not isinstance(ops, list):
        raise PatchDecodeError("a JSON patch must be a list of operations")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchTooLarge(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
            f"got {len(ops)}"
        )
    if not all(isinstance(op, dict) for op in ops):
        raise PatchDecodeError("every JSON patch operation must be an object")
    # Copying the operations once means values can be inserted without aliasing the caller's.
    result = json_copy(doc)
    budget = _CopyBudget()
    for op in json_copy(ops):
        result = _apply_operation(result, op, budget)
    return result


# --- merge patch (RFC 7386) ----------------------------------------------------------------


def _merge_into(target: dict[str, Any], patch: dict[str, Any], copy: bool) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            if not isinstance(current, dict):
                current = {}
                target[key] = current
            _merge_into(current, value, copy)
        else:
            target[key] = json_copy(value) if copy else value


def apply_merge_patch(doc: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch: objects merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return json_copy(patch)
    target = json_copy(doc) if isinstance(doc, dict) else {}
    _merge_into(target, patch, True)
    return target


def merge_patch_into(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`apply_merge_patch` of an object patch onto an object, both the caller's own: `target`
    is changed in place and takes the patch's values as they are, nothing is copied."""
    _merge_into(target, patch, False)
    return target


# --- strategic merge patch -----------------------------------------------------------------

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_PREFIX = "$deleteFromPrimitiveList"
_ORDER_PREFIX = "$setElementOrder"


def _scalar_key(value: Any) -> Hashable:
    """A hashable identity for list elements and merge-key values (JSON equality)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    if value is None:
        return ("z",)
    return ("j", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


def _kind(value: Any) -> type:
    if isinstance(value, dict):
        return dict
    if isinstance(value, list):
        return list
    return object


def _directive_target(key: str, prefix: str, error: str) -> str:
    head, sep, field = key.partition("/")
    if head != prefix or not sep:
        raise PatchDecodeError(error)
    return field


class _Field:
    """Patch metadata of one field: its schema and strategic-merge strategy."""

    __slots__ = ("merge", "merge_key", "replace", "schema")

    def __init__(self, parent: SchemaView | None, name: str) -> None:
        schema = parent.field(name) if parent is not None and parent.known else None
        self.schema = schema if schema is not None and schema.known else None
        strategies = self.schema.patch_strategy.split(",") if self.schema is not None else []
        self.merge = "merge" in strategies
        self.replace = "replace" in strategies
        self.merge_key = self.schema.patch_merge_key if self.schema is not None else None

    @property
    def items(self) -> SchemaView | None:
        if self.schema is None:
            return None
        items = self.schema.items
        return items if items.known else None


def _smp_map(original: dict[str, Any], patch: dict[str, Any], schema: SchemaView | None) -> Any:
    """Merge `patch` into `original` (both owned by us, mutated freely); returns the result."""
    directive = patch.pop(_DIRECTIVE, _MISSING)
    if directive is not _MISSING:
        if directive == "replace":
            return _smp_map({}, patch, schema)
        if directive == "delete":
            return {}
        # An explicit "merge" is what happens anyway; anything else is meaningless.
        if directive != "merge":
            raise PatchError(f"unknown patch type: {directive} in map")

    retain = patch.pop(_RETAIN_KEYS, _MISSING)
    if retain is not _MISSING:
        _apply_retain_keys(original, patch, retain)

    order_keys = [key for key in patch if key.startswith(_ORDER_PREFIX)]
    for key in order_keys:
        _apply_element_order(original, patch, key, schema)

    for key, value in patch.items():
        if key.startswith(_DELETE_PREFIX):
            field = _directive_target(key, _DELETE_PREFIX, "invalid patch format of primitive list")
            if not isinstance(value, list):
                raise PatchDecodeError("invalid patch format of primitive list")
            current = original.get(field)
            if isinstance(current, list):
                drop = {_scalar_key(v) for v in value}
                original[field] = [v for v in current if _scalar_key(v) not in drop]
            continue
        if value is None:
            original.pop(key, None)
            continue
        meta = _Field(schema, key)
        current = original.get(key, _MISSING)
        if current is _MISSING or _kind(current) is not _kind(value):
            fresh = _fresh(value, meta)
            if fresh is _MISSING:
                original.pop(key, None)
            else:
                original[key] = fresh
        elif isinstance(value, dict):
            if meta.replace:
                original[key] = _smp_map({}, value, meta.schema)
            else:
                original[key] = _smp_map(current, value, meta.schema)
        elif isinstance(value, list):
            original[key] = _smp_list(current, value, meta)
        else:
            original[key] = value
    return original


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any], retain: Any) -> None:
    if not isinstance(retain, list):
        raise PatchDecodeError("invalid patch format of retainKeys")
    keep = {k for k in retain if isinstance(k, str)}
    for key, value in patch.items():
        if value is None or key.startswith((_DELETE_PREFIX, _ORDER_PREFIX)):
            continue
        if key not in keep:
            raise PatchDecodeError("invalid patch format of retainKeys")
    for key in [k for k in original if k not in keep]:
        del original[key]


def _fresh(value: Any, meta: _Field) -> Any:
    """The value a patch sets where the original has nothing comparable; directives and
    nulls are resolved so none of them reach the result. _MISSING means "leave it unset"."""
    if isinstance(value, dict):
        if value.get(_DIRECTIVE) == "delete":
            return _MISSING
        return _smp_map({}, value, meta.schema)
    if isinstance(value, list):
        return _smp_list([], value, meta)
    return value


def _clean_list(values: list[Any], items: SchemaView | None) -> list[Any]:
    """A replacing list with directive elements dropped and nested directives resolved."""
    out = []
    for value in values:
        if isinstance(value, dict):
            if _DIRECTIVE in value and value[_DIRECTIVE] in ("delete", "replace"):
                continue
            out.append(_smp_map({}, value, items))
        elif isinstance(value, list):
            out.append(_clean_list(value, None))
        else:
            out.append(value)
    return out


def _smp_list(original: list[Any], patch: list[Any], meta: _Field) -> list[Any]:
    items = meta.items
    if not meta.merge:
        return _clean_list(patch, items)
    if not original and not patch:
        return original
    if not any(isinstance(v, dict) for v in original) and not any(
        isinstance(v, dict) for v in patch
    ):
        return _merge_scalars(original, patch)
    key = meta.merge_key
    if not key:
        raise PatchError("cannot merge lists without merge key for type map")
    if not all(isinstance(v, dict) for v in patch) or not all(
        isinstance(v, dict) for v in original
    ):
        raise PatchError("list element types are not identical")
    original, patch, replaced = _special_elements(original, patch, key)
    if replaced:
        return [_smp_map({}, v, items) for v in original]
    merged = _merge_by_key(original, patch, key, items)
    return _ordered(merged, patch, original, _identity(key))


def _merge_scalars(original: list[Any], patch: list[Any]) -> list[Any]:
    seen: set[Hashable] = set()
    merged = []
    for value in original + patch:
        ident = _scalar_key(value)
        if ident not in seen:
            seen.add(ident)
            merged.append(value)
    return _ordered(merged, patch, original, _scalar_key)


def _identity(key: str | None) -> Callable[[Any], Hashable]:
    """How list elements are told apart: by merge key for maps, by value for scalars."""
    if not key:
        return _scalar_key
    return lambda item: _map_key(item, key)


def _map_key(item: Any, key: str) -> Hashable:
    if not isinstance(item, dict) or key not in item:
        raise PatchError(f"map: {item} does not contain declared merge key: {key}")
    return _scalar_key(item[key])


def _special_elements(
    original: list[Any], patch: list[Any], key: str
) -> tuple[list[Any], list[Any], bool]:
    """Apply `$patch` elements of a merging list: deletions by key and whole-list replacement."""
    kept = []
    replace = False
    for item in patch:
        directive = item.get(_DIRECTIVE, _MISSING)
        if directive is _MISSING:
            kept.append(item)
        elif directive == "delete":
            ident = _map_key(item, key)
            original = [v for v in original if not (key in v and _scalar_key(v[key]) == ident)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            kept.append({k: v for k, v in item.items() if k != _DIRECTIVE})
        else:
            raise PatchError(f"unknown patch type: {directive} in map")
    if replace:
        return kept, [], True
    return original, kept, False


def _merge_by_key(
    original: list[Any], patch: list[Any], key: str, items: SchemaView | None
) -> list[Any]:
    merged = list(original)
    where: dict[Hashable, int] = {}
    for i, item in enumerate(merged):
        if key in item:
            where.setdefault(_scalar_key(item[key]), i)
    for item in patch:
        ident = _map_key(item, key)
        index = where.get(ident)
        if index is None:
            where[ident] = len(merged)
            merged.append(_smp_map({}, item, items))
        else:
            merged[index] = _smp_map(merged[index], item, items)
    return merged


def _ordered(
    merged: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    ident: Callable[[Any], Hashable],
) -> list[Any]:
    """Order a merged list: items named by the patch follow the patch's order, the others keep
    the live order, and the two are interleaved by their positions in the live list."""
    in_patch: dict[Hashable, int] = {}
    for i, item in enumerate(patch_order):
        in_patch.setdefault(ident(item), i)
    in_server: dict[Hashable, int] = {}
    for i, item in enumerate(server_order):
        in_server.setdefault(ident(item), i)
    patch_items: list[tuple[Hashable, Any]] = []
    server_items: list[tuple[Hashable, Any]] = []
    for item in merged:
        key = ident(item)
        (patch_items if key in in_patch else server_items).append((key, item))
    patch_items.sort(key=lambda pair: in_patch[pair[0]])
    server_items.sort(key=lambda pair: in_server.get(pair[0], -1))
    out = []
    i = j = 0
    while i < len(server_items) or j < len(patch_items):
        if i >= len(server_items):
            out.append(patch_items[j][1])
            j += 1
        elif j >= len(patch_items):
            out.append(server_items[i][1])
            i += 1
        else:
            left = in_server.get(server_items[i][0], -1)
            right = in_server.get(patch_items[j][0], -1)
            # A server-only item goes first only when both are known to the live list and
            # it came first there; a patch item that is new to the list is taken at once.
            if left >= 0 and right >= 0 and left < right:
                out.append(server_items[i][1])
                i += 1
            else:
                out.append(patch_items[j][1])
                j += 1
    return out


def _apply_element_order(
    original: dict[str, Any], patch: dict[str, Any], directive: str, schema: SchemaView | None
) -> None:
    """Merge the list named by a `$setElementOrder/<field>` directive and order it by the
    directive's list; the field is then removed from the patch."""
    order = patch.pop(directive)
    field = _directive_target(
        directive, _ORDER_PREFIX, "invalid patch format of setElementOrder list"
    )
    if not isinstance(order, list):
        raise PatchDecodeError("invalid patch format of setElementOrder list")
    current = original.get(field, _MISSING)
    patch_list = patch.pop(field, _MISSING)
    if current is not _MISSING and not isinstance(current, list):
        raise PatchError(f"{field}: expected a list in the original object")
    if patch_list is not _MISSING and not isinstance(patch_list, list):
        raise PatchError(f"{field}: expected a list in the patch")
    meta = _Field(schema, field)
    key = meta.merge_key if any(isinstance(v, dict) for v in order) else None
    ident = _identity(key)
    if patch_list is not _MISSING:
        _check_order(patch_list, order, key)
    if current is _MISSING and patch_list is _MISSING:
        return
    if patch_list is _MISSING:
        merged = current
    elif current is _MISSING:
        merged = _smp_list([], patch_list, meta)
    else:
        merged = _smp_list(current, patch_list, meta)
    if merged:
        for item in order:
            ident(item)
        merged = _ordered(merged, order, [] if current is _MISSING else current, ident)
    original[field] = merged


def _check_order(patch_list: list[Any], order: list[Any], key: str | None) -> None:
    """The patch list (deletions aside) must follow the order of the directive list."""
    if not patch_list or not order:
        return
    items = [v for v in patch_list if not (isinstance(v, dict) and _DIRECTIVE in v)]

    def same(a: Any, b: Any) -> bool:
        if key:
            return _map_key(a, key) == _map_key(b, key)
        return _scalar_key(a) == _scalar_key(b)

    i = j = 0
    while i < len(items) and j < len(order):
        if same(items[i], order[j]):
            i += 1
        j += 1
    if i < len(items):
        raise PatchError(
            f"The order in patch list:\n{patch_list}\n doesn't match $setElementOrder list:\n"
            f"{order}\n"
        )


def apply_strategic_merge_patch(
    doc: dict[str, Any], patch: dict[str, Any], schema: SchemaView
) -> dict[str, Any]:
    """Apply a Kubernetes strategic merge patch; list strategies come from the schema's
    `x-kubernetes-patch-strategy` / `-merge-key` (unknown fields merge like a merge patch)."""
    if not isinstance(patch, dict):
        raise PatchDecodeError("a strategic merge patch must be a JSON object")
    original = json_copy(doc) if isinstance(doc, dict) else {}
    result = _smp_map(original, json_copy(patch), schema if schema.known else None)
    return result if isinstance(result, dict) else {}
