"""JSON Patches of mutating webhooks: applied by the API server's own RFC 6902 code, they give
exactly the object the defaulter or handler wanted, and nothing a model round trip adds."""

from __future__ import annotations

import copy
import random
from typing import Any

import kubeforge
from kubeforge._apiserver.storage.patch import apply_json_patch
from kubeforge._webhook.patch import apply_changes, defaulting_patch, json_equal, json_patch


def test_a_patch_turns_the_original_into_the_desired_object() -> None:
    original = {"spec": {"containers": [{"name": "app", "image": "a"}]}, "metadata": {"name": "p"}}
    desired = copy.deepcopy(original)
    desired["spec"]["containers"].append({"name": "sidecar", "image": "s"})
    desired["metadata"]["labels"] = {"injected": "true"}
    ops = json_patch(original, desired)
    assert apply_json_patch(original, ops) == desired
    assert json_patch(original, copy.deepcopy(original)) == []


def test_true_is_not_one() -> None:
    assert not json_equal(True, 1)
    assert not json_equal({"a": [False]}, {"a": [0]})
    assert json_equal(1, 1.0)
    ops = json_patch({"a": 1}, {"a": True})
    assert apply_json_patch({"a": 1}, ops) == {"a": True}


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(7 if depth < 3 else 4)
    if choice == 0:
        return rng.randrange(-3, 4)
    if choice == 1:
        return rng.choice(["a", "b", "", "true"])
    if choice == 2:
        return rng.choice([True, False, None])
    if choice == 3:
        return rng.choice([0.5, 2.0])
    if choice in (4, 5):
        return {rng.choice("abcdef"): _random_json(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]


def test_random_documents_round_trip_through_the_servers_patch_code() -> None:
    rng = random.Random(20260821)
    for _ in range(400):
        a = {"x": _random_json(rng), "y": _random_json(rng)}
        b = {"x": _random_json(rng), "y": a["y"] if rng.random() < 0.5 else _random_json(rng)}
        assert apply_json_patch(a, json_patch(a, b)) == b, (a, b)


def test_only_the_defaulters_changes_reach_the_object() -> None:
    # The request's object, as the API server sent it.
    raw = {
        "apiVersion": "demo/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"size": 2, "ports": [{"port": 80}], "note": None},
    }
    # Read into a model and written back: a default appears, the null and the timestamp's
    # spelling change. None of that is the defaulter's doing.
    before = {
        "apiVersion": "demo/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "creationTimestamp": "2026-01-01T00:00:00+00:00"},
        "spec": {"size": 2, "ports": [{"port": 80, "protocol": "TCP"}], "color": "red"},
    }
    after = copy.deepcopy(before)
    after["spec"]["size"] = 3
    after["spec"]["ports"][0]["name"] = "http"
    after["metadata"]["labels"] = {"sized": "yes"}
    ops = defaulting_patch(raw, before, after)
    assert apply_json_patch(raw, ops) == {
        "apiVersion": "demo/v1",
        "kind": "Widget",
        "metadata": {
            "name": "w",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"sized": "yes"},
        },
        "spec": {"size": 3, "ports": [{"port": 80, "name": "http"}], "note": None},
    }


def test_removals_and_whole_list_changes() -> None:
    raw = {"spec": {"tags": ["a", "b"], "old": 1, "keep": {"x": 1}}}
    before = copy.deepcopy(raw)
    after = {"spec": {"tags": ["a", "b", "c"], "keep": {"x": 1}}}
    merged = apply_changes(raw, before, after)
    assert merged == after
    assert apply_json_patch(raw, defaulting_patch(raw, before, after)) == after


def test_a_defaulter_that_changes_nothing_answers_no_patch() -> None:
    raw = {"spec": {"size": 1}}
    before = {"spec": {"size": 1, "color": "red"}}
    assert defaulting_patch(raw, before, copy.deepcopy(before)) == []


def test_typed_round_trip_of_a_resource() -> None:
    class Spec(kubeforge.Model):
        size: int = 1
        tags: list[str] = []

    @kubeforge.resource(group="patch.test.dev", version="v1")
    class Gadget(kubeforge.Resource[Spec, None]):
        pass

    raw = {
        "apiVersion": "patch.test.dev/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "uid": "u"},
        "spec": {"unknownField": {"kept": True}},
    }
    obj = Gadget.model_validate(raw)
    before = obj.to_dict()
    obj.spec.tags.append("new")
    ops = defaulting_patch(raw, before, obj.to_dict())
    result = apply_json_patch(raw, ops)
    # The tag is added; the model's default size is not written, the unknown field stays.
    assert result["spec"] == {"unknownField": {"kept": True}, "tags": ["new"]}
