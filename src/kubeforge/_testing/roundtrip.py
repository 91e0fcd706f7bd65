"""Conversions that lose nothing: an object converted to another version and back is itself.

    assert_round_trips(v1.At(...))           # v1 -> v1alpha1 -> v1, for every other version
    assert_round_trips(v1alpha1.At(...))     # v1alpha1 -> v1 -> v1alpha1, and so on

With Hypothesis, the same check is a property test (`kubeforge._testing.objects` builds the
objects):

    @given(kubeforge._testing.objects(v1alpha1.At, spec=st.builds(v1alpha1.AtSpec, ...)))
    def test_v1alpha1_round_trips(at: v1alpha1.At) -> None:
        assert_round_trips(at)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubeforge._api.conversion import convert, kind_versions

__all__ = ["assert_round_trips", "first_difference"]


def _wire(obj: Any) -> dict[str, Any]:
    """The object as the API server keeps it: its JSON, without the empty label and
    annotation maps Go leaves out (omitempty), which no client can tell from absent ones."""
    data: dict[str, Any] = obj.to_dict()
    meta = data.get("metadata")
    if isinstance(meta, dict):
        for key in ("labels", "annotations"):
            if meta.get(key) == {}:
                del meta[key]
    return data


def first_difference(expected: Any, actual: Any, path: str = "") -> str | None:
    """Where two JSON values first differ (`spec.command[1]: 'a' != 'b'`), or None."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(expected.keys() | actual.keys()):
            where = f"{path}.{key}" if path else str(key)
            if key not in actual:
                return f"{where}: missing after the round trip (was {expected[key]!r})"
            if key not in expected:
                return f"{where}: appeared after the round trip ({actual[key]!r})"
            found = first_difference(expected[key], actual[key], where)
            if found is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for i, (left, right) in enumerate(zip(expected, actual, strict=False)):
            found = first_difference(left, right, f"{path}[{i}]")
            if found is not None:
                return found
        if len(expected) != len(actual):
            return f"{path}: {expected!r} != {actual!r}"
        return None
    if expected != actual or type(expected) is not type(actual):
        return f"{path or 'the object'}: {expected!r} != {actual!r}"
    return None


def _label(cls: type) -> str:
    return str(cls.__kubeforge__.gvk.version)  # type: ignore[attr-defined]


def assert_round_trips(obj: Any, through: Iterable[type] | None = None) -> None:
    """Convert `obj` (an object of one version of a convertible kind) to each other version
    of its kind, or to each class of `through`, and back; AssertionError naming the versions
    and the first difference unless every round trip gives back an equal object.

    A hub goes out to each spoke and back (hub -> spoke -> hub); a spoke goes to the hub and
    back, and to each other spoke (through the hub) and back.
    """
    source = type(obj)
    if through is None:
        versions = kind_versions(source)
        if versions is None:
            raise TypeError(
                f"{source.__qualname__} has no other versions to convert to (no kubeforge.Hub "
                "with kubeforge.Convertible versions)"
            )
        targets = [cls for cls in versions.classes.values() if cls is not source]
    else:
        targets = list(through)
    expected = _wire(obj)
    for target in targets:
        there: Any = convert(obj, target)
        back = convert(there, source)
        difference = first_difference(expected, _wire(back))
        if difference is not None:
            route = f"{_label(source)} -> {_label(target)} -> {_label(source)}"
            raise AssertionError(
                f"{route} changed the object: {difference}\n"
                f"  started as: {expected!r}\n"
                f"  in {_label(target)}: {_wire(there)!r}\n"
                f"  came back as: {_wire(back)!r}"
            )
