"""Table responses: their shape, default and wide columns, and CRD printer columns."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._apiserver.printing.tables import column_definitions, to_table
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.types.resource import ResourceType
from tests.support.tables import NOW, meta, rt, ts

# ---------------------------------------------------------------------------------------------
# Table shape


def test_table_with_metadata_objects() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("cfg"), "data": {"a": "1"}}
    table = to_table(
        rt("", "ConfigMap"),
        [cm],
        resource_version="42",
        continue_token="tok",
        remaining=7,
        now=NOW,
    )
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {
        "resourceVersion": "42",
        "continue": "tok",
        "remainingItemCount": 7,
    }
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert set(table["columnDefinitions"][0]) == {
        "name",
        "type",
        "format",
        "description",
        "priority",
    }
    assert table["columnDefinitions"][0]["format"] == "name"
    (row,) = table["rows"]
    assert row["cells"] == ["cfg", 1, "5m"]
    assert row["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": cm["metadata"],
    }


def test_table_include_object_modes() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("cfg")}
    full = to_table(rt("", "ConfigMap"), [cm], include_object="Object", now=NOW)
    assert full["rows"][0]["object"] is cm
    bare = to_table(rt("", "ConfigMap"), [cm], include_object="None", now=NOW)
    assert "object" not in bare["rows"][0]
    beta = to_table(rt("", "ConfigMap"), [cm], table_version="v1beta1", include_object="", now=NOW)
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1"
    assert beta["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
    with pytest.raises(StatusError) as err:
        to_table(rt("", "ConfigMap"), [cm], include_object="Everything", now=NOW)
    assert err.value.code == 400


def test_table_without_headers_and_empty() -> None:
    table = to_table(rt("", "ConfigMap"), [], no_headers=True, now=NOW)
    assert table["columnDefinitions"] is None
    assert table["rows"] == []
    assert table["metadata"] == {}


def test_default_columns_for_kinds_without_printer() -> None:
    role = rt("rbac.authorization.k8s.io", "Role")
    obj = {"metadata": {"name": "r", "creationTimestamp": "2024-05-01T14:00:00+02:00"}}
    table = to_table(role, [obj, {"metadata": {"name": "bare"}}], now=NOW)
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [
        ("Name", "string"),
        ("Created At", "date"),
    ]
    assert table["rows"][0]["cells"] == ["r", "2024-05-01T12:00:00Z"]
    assert table["rows"][1]["cells"] == ["bare", "0001-01-01T00:00:00Z"]


def test_wide_columns_have_priority() -> None:
    defs = column_definitions(rt("", "Pod"))
    assert [(c["name"], c["priority"]) for c in defs] == [
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ]


# ---------------------------------------------------------------------------------------------
# CRD printer columns


CRD_COLUMNS = (
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "priority": 1},
    {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"},
    {
        "name": "Ready",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        "description": "Whether it is ready",
    },
    {"name": "Started", "type": "date", "jsonPath": ".status.startedAt", "format": "date-time"},
    {"name": "Owner", "type": "string", "jsonPath": ".spec.owner"},
)


def widget_type(columns: tuple[dict[str, Any], ...] = CRD_COLUMNS) -> ResourceType:
    return rt("example.com", "Widget", crd_name="widgets.example.com", printer_columns=columns)


def test_crd_column_definitions() -> None:
    defs = column_definitions(widget_type())
    assert defs[0]["name"] == "Name"
    assert defs[0]["format"] == "name"
    assert defs[1] == {
        "name": "Replicas",
        "type": "integer",
        "format": "",
        "description": "Custom resource definition column (in JSONPath format): .spec.replicas",
        "priority": 0,
    }
    assert defs[2]["priority"] == 1
    assert defs[4]["description"] == "Whether it is ready"
    assert defs[5]["format"] == "date-time"


def test_crd_cells_of_every_type() -> None:
    obj = {
        "metadata": meta("w1"),
        "spec": {"replicas": 3, "ratio": 2, "paused": True, "owner": {"team": "a", "id": 7}},
        "status": {
            "startedAt": ts(3 * 3600 + 600),
            "conditions": [
                {"type": "Synced", "status": "False"},
                {"type": "Ready", "status": "True"},
            ],
        },
    }
    table = to_table(widget_type(), [obj], now=NOW)
    assert table["rows"][0]["cells"] == ["w1", 3, 2.0, True, "True", "3h10m", '{"id":7,"team":"a"}']


def test_crd_cells_missing_and_mismatched_values() -> None:
    obj = {
        "metadata": meta("w2"),
        "spec": {"replicas": 2.9, "ratio": "high", "paused": "yes", "owner": None},
        "status": {"startedAt": "yesterday"},
    }
    row = to_table(widget_type(), [obj, {"metadata": meta("w3")}], now=NOW)["rows"]
    assert row[0]["cells"] == ["w2", 2, None, None, None, "<invalid>", "<no value>"]
    assert row[1]["cells"] == ["w3", None, None, None, None, None, None]


def test_crd_string_column_prints_scalars() -> None:
    columns = tuple(
        {"name": n, "type": "string", "jsonPath": f".spec.{n}"} for n in ("a", "b", "c", "d", "e")
    )
    obj = {"metadata": meta(), "spec": {"a": 5, "b": False, "c": 0.25, "d": 1e6, "e": [1, "<"]}}
    cells_ = to_table(widget_type(columns), [obj], now=NOW)["rows"][0]["cells"]
    assert cells_ == ["x", "5", "false", "0.25", "1e+06", '[1,"\\u003c"]']


def test_crd_date_column_edge_cases() -> None:
    columns = ({"name": "When", "type": "date", "jsonPath": ".spec.when"},)
    rows = to_table(
        widget_type(columns),
        [
            {"metadata": meta(), "spec": {"when": ""}},
            {"metadata": meta(), "spec": {"when": ts(-3600)}},
            {"metadata": meta(), "spec": {"when": 12}},
        ],
        now=NOW,
    )["rows"]
    assert [r["cells"][1] for r in rows] == ["<unknown>", "<invalid>", None]


def test_crd_without_columns_gets_age() -> None:
    table = to_table(widget_type(()), [{"metadata": meta("w", created=7200)}], now=NOW)
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [
        ("Name", "string"),
        ("Age", "date"),
    ]
    assert table["rows"][0]["cells"] == ["w", "120m"]


def test_crd_invalid_column_keeps_earlier_ones() -> None:
    columns = (
        {"name": "A", "type": "integer", "jsonPath": ".spec.a"},
        {"name": "B", "type": "integer", "jsonPath": ".spec[b"},
        {"name": "C", "type": "integer", "jsonPath": ".spec.c"},
    )
    assert [c["name"] for c in column_definitions(widget_type(columns))] == ["Name", "A"]
