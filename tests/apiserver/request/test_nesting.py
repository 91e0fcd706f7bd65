"""The nesting limit: measured exactly, iteratively, with room for ownership records."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.nesting import (
    MAX_DEPTH,
    MAX_MANAGED_FIELDS_DEPTH,
    check_body,
    check_object,
    deepest,
)


def chain(levels: int, key: str = "a") -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {key: value}
    return value


def test_depth_counts_containers_including_the_root() -> None:
    assert deepest({"a": [{"b": []}]}, 4) is None
    assert deepest({"a": [{"b": []}]}, 3) == ["a", 0, "b"]
    assert deepest("scalar", 0) is None
    assert deepest(chain(MAX_DEPTH), MAX_DEPTH) is None
    assert deepest(chain(MAX_DEPTH + 1), MAX_DEPTH) == ["a"] * MAX_DEPTH


def test_a_structure_that_contains_itself_is_too_deep_not_a_hang() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert deepest({"spec": loop}, 10) == ["spec", *[0] * 9]


def test_managed_fields_have_their_own_bound() -> None:
    # root > metadata > managedFields > entry > fieldsV1 chain
    fits = {
        "metadata": {"managedFields": [{"fieldsV1": chain(MAX_MANAGED_FIELDS_DEPTH - 4, "f:a")}]}
    }
    assert deepest(fits, MAX_DEPTH) is None
    over = {
        "metadata": {"managedFields": [{"fieldsV1": chain(MAX_MANAGED_FIELDS_DEPTH - 3, "f:a")}]}
    }
    assert deepest(over, MAX_DEPTH) is not None
    # Elsewhere in metadata the object's own limit holds.
    deep_labels = {"metadata": {"annotations": chain(MAX_DEPTH - 1)}}
    assert deepest(deep_labels, MAX_DEPTH) == ["metadata", "annotations", *["a"] * (MAX_DEPTH - 2)]


def test_the_walk_is_safe_far_past_the_recursion_limit() -> None:
    assert deepest(chain(200_000), MAX_DEPTH) == ["a"] * MAX_DEPTH


def test_bodies_and_objects_fail_with_the_status_each_gets() -> None:
    raw = b'{"a":' * (MAX_DEPTH + 1) + b"1" + b"}" * (MAX_DEPTH + 1)
    with pytest.raises(StatusError) as body:
        check_body(raw, chain(MAX_DEPTH + 1), "application/json")
    assert body.value.code == 400
    check_body(b"{}", {}, "application/json")
    # YAML is always walked: its nesting is not in brackets.
    with pytest.raises(StatusError):
        check_body(b"a:\n b: 1\n", chain(MAX_DEPTH + 1), "application/yaml")
    with pytest.raises(StatusError) as result:
        check_object("example.com", "Widget", "w", {"spec": chain(MAX_DEPTH)})
    assert result.value.code == 422
    assert result.value.details is not None
    assert result.value.details["causes"][0]["field"] == "spec" + ".a" * 11 + "..."
