"""The Kubernetes JSONPath dialect: syntax, evaluation and the simple-path helpers."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._api.machinery.jsonpath import JSONPathError, compile_path, get_simple, set_path

OBJ: dict[str, Any] = {
    "metadata": {
        "name": "web",
        "labels": {"app.kubernetes.io/name": "shop", "tier": "front"},
    },
    "spec": {
        "replicas": 3,
        "containers": [
            {"name": "app", "image": "shop:1", "ports": [{"containerPort": 80}]},
            {"name": "proxy", "image": "envoy:1", "ports": [{"containerPort": 9901}]},
            {"name": "log", "image": "fluent:2"},
        ],
    },
    "status": {
        "ratio": 0.5,
        "nothing": None,
        "conditions": [
            {"type": "Ready", "status": "True", "weight": 1},
            {"type": "Synced", "status": "False", "weight": 5, "reason": "Drift"},
            {"type": "Healthy", "status": "True", "weight": 2.5, "flag": False},
        ],
    },
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (".spec.replicas", [3]),
        ("$.spec.replicas", [3]),
        ("{.spec.replicas}", [3]),
        ("{$.metadata.name}", ["web"]),
        (".spec.containers[0].name", ["app"]),
        (".spec.containers[-1].name", ["log"]),
        (".spec.containers[*].name", ["app", "proxy", "log"]),
        (".spec.containers[0:2].image", ["shop:1", "envoy:1"]),
        (".spec.containers[::2].name", ["app", "log"]),
        (".spec.containers[1:].name", ["proxy", "log"]),
        (".spec.containers[0,2].name", ["app", "log"]),
        (".metadata['name']", ["web"]),
        ('.metadata["name"]', ["web"]),
        (".metadata.labels['app.kubernetes.io/name']", ["shop"]),
        (r".metadata.labels.app\.kubernetes\.io/name", ["shop"]),
        (".metadata.labels['tier','app.kubernetes.io/name']", ["front", "shop"]),
        (".metadata.labels.*", ["shop", "front"]),
        ("..containerPort", [80, 9901]),
        ("$..ports[0].containerPort", [80, 9901]),
        (".status.nothing", [None]),
        (".status.missing", []),
        (".spec.containers[7].name", []),
        (".spec.containers[0:9]", []),  # out-of-range bounds select nothing, as upstream
        (".spec.replicas[0]", []),
        (".spec.containers.name", []),  # a field does not map over a list
    ],
)
def test_find(expr: str, expected: list[Any]) -> None:
    assert compile_path(expr).find(OBJ) == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
        (".status.conditions[?(@.type=='Synced')].reason", ["Drift"]),
        ('.status.conditions[?(@.status != "True")].type', ["Synced"]),
        (".status.conditions[?(@.weight > 1)].type", ["Synced", "Healthy"]),
        (".status.conditions[?(@.weight >= 2.5)].type", ["Synced", "Healthy"]),
        (".status.conditions[?(@.weight < 2)].type", ["Ready"]),
        (".status.conditions[?(@.weight <= 1)].type", ["Ready"]),
        (".status.conditions[?(@.reason)].type", ["Synced"]),
        (".status.conditions[?(@.flag == false)].type", ["Healthy"]),
        (".status.conditions[?(@.type < 'R')].type", ["Healthy"]),
        # Values of different kinds never compare equal.
        ('.status.conditions[?(@.weight == "1")].type', []),
        ('.spec.containers[?(@.name=="proxy")].ports[0].containerPort', [9901]),
    ],
)
def test_filters(expr: str, expected: list[Any]) -> None:
    assert compile_path(expr).find(OBJ) == expected


def test_first_and_cache() -> None:
    path = compile_path(".spec.containers[*].image")
    assert path.first(OBJ) == "shop:1"
    assert compile_path(".nope").first(OBJ) is None
    assert compile_path(".spec.containers[*].image") is path
    assert path.simple_fields is None
    assert compile_path(".spec.replicas").simple_fields == ("spec", "replicas")


def test_whole_object() -> None:
    assert compile_path(".").find(OBJ) == [OBJ]
    assert compile_path("$").find(OBJ) == [OBJ]


@pytest.mark.parametrize(
    "expr",
    [
        "",
        "{}",
        "spec.replicas",  # a bare name is an identifier (range/end), not a field
        ".a[",
        ".a[x]",
        ".a[1:2:0]",
        "{.a}{.b}",
        "{.a",
        ".a..",
        ".a....b",
        ".a b",
        ".a[?(@.x=~1)]",
        ".a[?(@.x==)]",
        ".a[?(@.x=='y)]",
        ".a[?(@.x=='y'",
        "#a",
    ],
)
def test_syntax_errors(expr: str) -> None:
    with pytest.raises(JSONPathError):
        compile_path(expr)


def test_get_simple() -> None:
    assert get_simple(OBJ, ".spec.replicas") == 3
    assert get_simple(OBJ, ".status.selector") is None
    assert get_simple(OBJ, ".spec.replicas.deeper") is None
    with pytest.raises(JSONPathError):
        get_simple(OBJ, ".spec.containers[0].name")


def test_set_path_creates_parents() -> None:
    obj: dict[str, Any] = {"spec": None}
    set_path(obj, ".spec.scale.replicas", 4)
    assert obj == {"spec": {"scale": {"replicas": 4}}}
    set_path(obj, ".spec.scale.replicas", 5)
    assert get_simple(obj, ".spec.scale.replicas") == 5


def test_set_path_rejects() -> None:
    with pytest.raises(JSONPathError):
        set_path({"spec": 1}, ".spec.replicas", 1)
    with pytest.raises(JSONPathError):
        set_path({}, ".spec.containers[0].name", "x")
    with pytest.raises(JSONPathError):
        set_path({}, ".", 1)
