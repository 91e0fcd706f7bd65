"""How deeply an object may nest, checked on every request body and every patched result.

Much of the write path walks objects recursively (validation, pruning, defaulting, CEL,
patches, field ownership), and orjson refuses to encode more than 255 levels. A bound checked
before any of that runs keeps every such walk far from Python's recursion limit, so depth is
a clear 4xx, never a crash. See docs/decisions/0014-write-preconditions-and-object-shape.md.

The walk here is iterative, so the check itself is safe at any depth.
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._apiserver.request.errors import StatusError

__all__ = ["MAX_DEPTH", "MAX_MANAGED_FIELDS_DEPTH", "check_body", "check_object", "deepest"]

# Containers (objects and arrays) along any path of an object, the object itself counting as
# one: `{"a": {"b": []}}` has depth 3. Real objects stay far below it; a CRD's schema, the
# deepest common case, spends two levels per nested type (`properties`, then the field).
MAX_DEPTH = 100

# `metadata.managedFields` mirrors the object one level deeper per field (plus the entry and
# its list), so an object at MAX_DEPTH has ownership records a few levels deeper; their own
# bound leaves room for that and no more.
MAX_MANAGED_FIELDS_DEPTH = MAX_DEPTH + 8

_PATH_SHOWN = 12  # path segments a message shows before eliding the rest


def _managed_fields(value: Any) -> list[Any] | None:
    if type(value) is dict:
        meta = value.get("metadata")
        if type(meta) is dict:
            managed = meta.get("managedFields")
            if type(managed) is list and managed:
                return managed
    return None


def _within(value: Any, limit: int) -> bool:
    """Whether `value` nests at most `limit` containers deep (its managedFields at most
    MAX_MANAGED_FIELDS_DEPTH)."""
    if type(value) is not dict and type(value) is not list:
        return True
    managed = _managed_fields(value)
    # Each entry: a container and how many levels it and what it holds may still use.
    stack: list[tuple[Any, int]] = [(value, limit)]
    pop, push = stack.pop, stack.append
    while stack:
        node, budget = pop()
        if budget <= 0:
            return False
        below = budget - 1
        for child in node.values() if type(node) is dict else node:
            t = type(child)
            if t is dict or t is list:
                if child is managed:
                    # root (1) > metadata (2) > managedFields (3)
                    push((child, max(limit, MAX_MANAGED_FIELDS_DEPTH) - 2))
                else:
                    push((child, below))
    return True


def deepest(value: Any, limit: int) -> list[str | int] | None:
    """The path to the first container deeper than `limit`, or None when `value` fits.

    The object's own `metadata.managedFields` is measured against MAX_MANAGED_FIELDS_DEPTH.
    """
    if _within(value, limit):
        return None
    # Too deep: walk again, keeping paths this time, to say where.
    managed = _managed_fields(value)
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        allowed = limit
        if managed is not None and path[:2] == ("metadata", "managedFields"):
            allowed = max(limit, MAX_MANAGED_FIELDS_DEPTH)
        if depth > allowed:
            return list(path)
        items = node.items() if type(node) is dict else enumerate(node)
        for key, child in items:
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1, (*path, key)))
    return None  # pragma: no cover - _within said otherwise


def _shown(path: list[str | int]) -> str:
    text = ""
    for part in path[:_PATH_SHOWN]:
        text = f"{text}[{part}]" if isinstance(part, int) else (f"{text}.{part}" if text else part)
    if len(path) > _PATH_SHOWN:
        text += "..."
    return text or "<root>"


def _container_count(raw: bytes) -> int:
    return raw.count(b"{") + raw.count(b"[")


def check_body(raw: bytes, decoded: Any, content_type: str | None, limit: int = MAX_DEPTH) -> None:
    """A request body nesting deeper than `limit` is a 400.

    A JSON body's containers are its brackets, so one with no more brackets than the limit
    cannot nest deeper and is not walked at all. YAML (and protobuf) need the walk:
    indentation nests too, and a YAML alias can make a structure contain itself.
    """
    if _container_count(raw) <= limit and (content_type is None or "json" in content_type):
        return
    path = deepest(decoded, limit)
    if path is not None:
        raise StatusError.bad_request(
            f"the request body nests more than {limit} levels deep (at {_shown(path)}); "
            f"this server accepts at most {limit}"
        )


def check_object(rt_group: str, kind: str, name: str, obj: Any, limit: int = MAX_DEPTH) -> None:
    """An object built by the server from a request (a patched or applied result) nesting
    deeper than `limit` is invalid (422): a patch can build depth out of shallow pieces."""
    path = deepest(obj, limit)
    if path is not None:
        raise StatusError.invalid(
            rt_group,
            kind,
            name,
            [FieldError.forbidden(_shown(path), f"may not nest more than {limit} levels deep")],
        )
