"""JSON Patches for mutating webhooks: from an object to the object as it should be.

`json_patch(original, desired)` is RFC 6902's diff, computed by python-json-patch (see
decision 0017). `defaulting_patch` is what a typed defaulter answers: the defaulter changed a
typed copy of the request's object, and reading JSON into a model and writing it back is not
the identity (defaults of fields the request left out appear, nulls go, timestamps are
rewritten). Only what the defaulter changed may reach the object, so the changes between the
model before and after the defaulter are carried onto the request's own JSON first, and the
patch is the diff from that JSON to the result. controller-runtime does the same for
removals only (defaulter_custom.go, dropSchemeRemovals); here it holds for every change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonpatch

__all__ = ["apply_changes", "defaulting_patch", "json_equal", "json_patch"]

_MISSING: Any = object()


def json_patch(original: Mapping[str, Any], desired: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The RFC 6902 operations that turn `original` into `desired` (empty when equal)."""
    if json_equal(original, desired):
        return []
    operations: list[dict[str, Any]] = jsonpatch.make_patch(original, desired).patch
    return operations


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values, where `true` is not `1` (Python's `==` says it is)."""
    if isinstance(a, dict):
        if not isinstance(b, dict) or a.keys() != b.keys():
            return False
        return all(json_equal(value, b[key]) for key, value in a.items())
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b  # one JSON number, however Python holds it
    return type(a) is type(b) and bool(a == b)


def apply_changes(raw: Any, before: Any, after: Any) -> Any:
    """`raw` with the changes that turned `before` into `after`.

    Objects are walked key by key: a key the change left alone keeps `raw`'s value (or its
    absence), a removed key goes, a changed one is merged further down or, where `raw` has
    nothing to merge into, takes `after`'s value. Lists of one length in all three are walked
    item by item; any other changed list is replaced whole.
    """
    if json_equal(before, after):
        return raw
    if isinstance(raw, dict) and isinstance(before, dict) and isinstance(after, dict):
        merged = dict(raw)
        for key in [*before, *(k for k in after if k not in before)]:
            old = before.get(key, _MISSING)
            new = after.get(key, _MISSING)
            if old is not _MISSING and new is not _MISSING and json_equal(old, new):
                continue
            if new is _MISSING:
                merged.pop(key, None)
            elif old is _MISSING or key not in raw:
                merged[key] = new
            else:
                merged[key] = apply_changes(raw[key], old, new)
        return merged
    if (
        isinstance(raw, list)
        and isinstance(before, list)
        and isinstance(after, list)
        and len(raw) == len(before) == len(after)
    ):
        return [apply_changes(r, b, a) for r, b, a in zip(raw, before, after, strict=True)]
    return after


def defaulting_patch(
    raw: Mapping[str, Any], before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The patch for a defaulter: `raw` is the request's object, `before` and `after` the
    typed object's JSON before and after the defaulter ran."""
    return json_patch(raw, apply_changes(dict(raw), dict(before), dict(after)))
