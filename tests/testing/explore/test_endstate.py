"""End states: what differs between two runs by nature is normalised away, the noise
between the reference runs is left out, and the rest is reported as missing, leaked or
changed."""

from __future__ import annotations

from typing import Any

from kubeforge._testing.explore.endstate import (
    Difference,
    differences,
    flatten,
    noise_between,
    normalise,
)

NS = "test-x-abc123"


def child(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": "1234",
            "resourceVersion": "77",
            "creationTimestamp": "2030-01-01T00:00:00Z",
            "generateName": "w-",
            "ownerReferences": [{"kind": "Widget", "name": "w", "uid": "9"}],
            "managedFields": [{"manager": "x"}],
        },
        **extra,
    }


def test_what_differs_by_nature_is_normalised() -> None:
    obj = child("w-k2j4x", data={"seen": f"{NS}/w-k2j4x at 2030-01-01T10:00:00.5Z"})
    obj["status"] = {"observedGeneration": 3, "ip": "10.244.0.7", "when": "2030-01-02T00:00:00Z"}
    shown = normalise(obj, NS, {"w-k2j4x": "w-*"})
    assert shown["metadata"] == {
        "name": "w-*",
        "namespace": "<ns>",
        "generateName": "w-",
        "ownerReferences": [{"kind": "Widget", "name": "w"}],
    }
    assert shown["data"] == {"seen": "<ns>/w-* at <time>"}
    assert shown["status"] == {"ip": "<ip>", "when": "<time>"}


def test_of_a_pod_only_the_phase_stays() -> None:
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": NS},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1", "containerStatuses": [{}]},
    }
    assert normalise(pod, NS, {})["status"] == {"phase": "Running"}


def test_differences_say_what_is_missing_leaked_or_changed() -> None:
    reference = {
        "ConfigMap/<ns>/a": {"data": {"x": "1"}},
        "ConfigMap/<ns>/b": {"data": {"x": "1"}},
    }
    run = {
        "ConfigMap/<ns>/a": {"data": {"x": "2"}},
        "ConfigMap/<ns>/c": {"data": {}},
    }
    found = differences(reference, run, noise_between(reference, reference))
    assert found == [
        Difference("missing", "ConfigMap/<ns>/b"),
        Difference("leaked", "ConfigMap/<ns>/c"),
        Difference("changed", "ConfigMap/<ns>/a", "data.x", "1", "2"),
    ]
    assert [str(d) for d in found] == [
        "missing: ConfigMap/<ns>/b",
        "leaked:  ConfigMap/<ns>/c",
        "changed: ConfigMap/<ns>/a data.x: '1' -> '2'",
    ]


def test_what_the_references_disagree_on_is_noise() -> None:
    first = {"Pod/<ns>/p": {"status": {"phase": "Running"}}, "Job/<ns>/j": {}}
    second = {"Pod/<ns>/p": {"status": {"phase": "Succeeded"}}}
    noise = noise_between(first, second)
    assert noise.objects == {"Job/<ns>/j"}
    assert noise.fields == {("Pod/<ns>/p", "status.phase")}
    run = {"Pod/<ns>/p": {"status": {"phase": "Pending"}}}
    assert differences(first, run, noise) == []


def test_flatten_names_each_leaf_by_its_path() -> None:
    assert flatten({"a": {"b": [1, {"c": 2}], "d": {}}}) == {"a.b[0]": 1, "a.b[1].c": 2, "a.d": {}}


def test_objects_of_generated_names_pair_up_by_what_they_hold() -> None:
    reference = {
        "Switch/<ns>/switch-*#1": {"labels": {"machine": "a"}},
        "Switch/<ns>/switch-*#2": {"labels": {}},
        "Switch/<ns>/switch-*#3": {"labels": {"machine": "b"}, "spec": {"up": True}},
    }
    run = {  # made in another order, and one differs
        "Switch/<ns>/switch-*#1": {"labels": {}},
        "Switch/<ns>/switch-*#2": {"labels": {"machine": "b"}, "spec": {"up": False}},
        "Switch/<ns>/switch-*#3": {"labels": {"machine": "a"}},
        "Switch/<ns>/switch-*#4": {"labels": {"machine": "c"}},
    }
    noise = noise_between(reference, reference)
    assert differences(reference, run, noise) == [
        Difference("leaked", "Switch/<ns>/switch-*#4"),
        Difference("changed", "Switch/<ns>/switch-*#3", "spec.up", True, False),
    ]
