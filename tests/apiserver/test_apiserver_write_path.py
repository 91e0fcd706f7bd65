"""The write path's shortcuts give what the general code gives: a create's managedFields
built directly, parsed request paths kept, uids made in bulk."""

from __future__ import annotations

import copy
import functools
import importlib.resources
import uuid
from typing import Any

import orjson
import pytest

from kubeforge._api.machinery.schemaview import SchemaView
from kubeforge._apiserver.request import info as requestinfo
from kubeforge._apiserver.request.info import RequestInfo, parse_request_path
from kubeforge._apiserver.storage.managedfields import update_managed_fields
from kubeforge._apiserver.storage.objectmeta import new_uid

NOW = "2026-01-01T00:00:00Z"


@functools.cache
def _defs() -> dict[str, Any]:
    path = importlib.resources.files("kubernetes_validate").joinpath(
        "kubernetes-json-schema/v1.33.0-local/_definitions.json"
    )
    defs: dict[str, Any] = orjson.loads(path.read_bytes())["$defs"]
    return defs


def _view(definition: str) -> SchemaView:
    return SchemaView({"$ref": f"#/$defs/{definition}"}, _defs())


_WIDGET = SchemaView(
    {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer"},
                    "selector": {
                        "type": "object",
                        "x-kubernetes-map-type": "atomic",
                        "additionalProperties": {"type": "string"},
                    },
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object"},
                    },
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            },
        },
    }
)

_META = {
    "name": "x",
    "namespace": "default",
    "uid": "6d1f4a52-0c2e-4b8e-9a55-cf2d5e2b1a10",
    "creationTimestamp": NOW,
}

CASES: list[tuple[str, SchemaView | None, dict[str, Any]]] = [
    (
        "configmap",
        _view("io.k8s.api.core.v1.ConfigMap"),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {**_META, "labels": {"app": "a", "tier": "b"}, "annotations": {"n": "1"}},
            "data": {"b": "2", "a": "1", "": ""},
            "binaryData": {"z": "AA=="},
            "immutable": False,
        },
    ),
    (
        "configmap, identity only",
        _view("io.k8s.api.core.v1.ConfigMap"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(_META)},
    ),
    (
        "configmap, empty maps",
        _view("io.k8s.api.core.v1.ConfigMap"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {**_META, "labels": {}}, "data": {}},
    ),
    (
        "configmap, generateName and generation",
        _view("io.k8s.api.core.v1.ConfigMap"),
        {"metadata": {**_META, "generateName": "x-", "generation": 1}, "data": {"k": "v"}},
    ),
    (
        "namespace with status",
        _view("io.k8s.api.core.v1.Namespace"),
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "ns", "uid": "u", "labels": {"a": "b"}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        },
    ),
    (
        "service with a keyed list",
        _view("io.k8s.api.core.v1.Service"),
        {
            "metadata": dict(_META),
            "spec": {"ports": [{"port": 80, "protocol": "TCP"}], "selector": {"a": "b"}},
        },
    ),
    (
        "owner references and finalizers",
        _view("io.k8s.api.core.v1.ConfigMap"),
        {
            "metadata": {
                **_META,
                "finalizers": ["a/b"],
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "1", "controller": True}
                ],
            },
            "data": {"k": "v"},
        },
    ),
    (
        "custom object",
        _WIDGET,
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {**_META, "labels": {"x": "y"}},
            "spec": {
                "size": 3,
                "selector": {"a": "b", "c": "d"},
                "tags": ["t1", "t2"],
                "extra": {"deep": {"er": [1, 2], "n": None, "e": {}}},
            },
        },
    ),
    (
        "custom object with a keyed list",
        _WIDGET,
        {"metadata": dict(_META), "spec": {"ports": [{"name": "a", "port": 1}]}},
    ),
    ("no schema", None, {"metadata": dict(_META), "spec": {"a": {"b": [1, {"c": 2}]}, "n": None}}),
    (
        "a stripped field with content beneath it",
        None,
        {"metadata": {**_META, "uid": {"odd": "1"}}, "data": {"k": "v"}},
    ),
    ("apiVersion as a map", None, {"apiVersion": {"a": "b"}, "metadata": dict(_META)}),
    ("metadata that is no map", None, {"metadata": ["a"], "data": {"k": "v"}}),
]


@pytest.mark.parametrize(("schema", "obj"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_create_managed_fields_match_the_general_path(
    schema: SchemaView | None, obj: dict[str, Any]
) -> None:
    # An empty `ignored` scope is the general path's; None lets a plain create take the
    # direct one.
    direct, general = copy.deepcopy(obj), copy.deepcopy(obj)
    update_managed_fields(None, direct, "mgr", schema, "v1", None, NOW)
    update_managed_fields(None, general, "mgr", schema, "v1", None, NOW, ignored=())
    assert direct == general
    # Byte for byte: the order of keys is what clients see.
    assert orjson.dumps(direct) == orjson.dumps(general)


def test_create_managed_fields_of_a_configmap() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {**_META, "labels": {"app": "a"}},
        "data": {"key": "v"},
    }
    update_managed_fields(
        None, obj, "kubectl", _view("io.k8s.api.core.v1.ConfigMap"), "v1", None, NOW
    )
    assert obj["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "v1",
            "time": NOW,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:data": {".": {}, "f:key": {}},
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            },
        }
    ]


def test_create_entries_are_not_shared() -> None:
    view = _view("io.k8s.api.core.v1.ConfigMap")
    first: dict[str, Any] = {"metadata": dict(_META), "data": {"k": "v"}}
    second: dict[str, Any] = {"metadata": dict(_META), "data": {"k": "v"}}
    update_managed_fields(None, first, "m", view, "v1", None, NOW)
    update_managed_fields(None, second, "m", view, "v1", None, NOW)
    first["metadata"]["managedFields"][0]["fieldsV1"]["f:data"]["f:other"] = {}
    assert "f:other" not in second["metadata"]["managedFields"][0]["fieldsV1"]["f:data"]


def test_parsed_paths_are_kept_and_bounded() -> None:
    path = "/apis/apps/v1/namespaces/ns/deployments/web/scale"
    first = parse_request_path("PUT", path, False)
    assert first == RequestInfo("apps", "v1", "ns", "deployments", "web", "scale", "update")
    assert parse_request_path("PUT", path, False) is first
    assert parse_request_path("GET", path, False) == RequestInfo(
        "apps", "v1", "ns", "deployments", "web", "scale", "get"
    )
    assert parse_request_path("GET", "/api/v1/pods", True) == RequestInfo(
        "", "v1", None, "pods", None, None, "watch"
    )
    assert parse_request_path("GET", "/api/v1/pods", False) == RequestInfo(
        "", "v1", None, "pods", None, None, "list"
    )
    assert parse_request_path("GET", "/apis/apps/v1", False) is None
    for i in range(requestinfo._PARSED_MAX + 10):
        parse_request_path("GET", f"/api/v1/namespaces/n/pods/p{i}", False)
    assert len(requestinfo._PARSED) <= requestinfo._PARSED_MAX


def test_uids_are_distinct_version_4_uuids() -> None:
    uids = [new_uid() for _ in range(1000)]  # several batches
    assert len(set(uids)) == len(uids)
    for text in uids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
