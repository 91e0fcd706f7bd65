"""kubeforge.Condition is metav1.Condition: the schema controller-gen writes for it, so that
`validate()` and an API server with the generated CRD refuse the same conditions that
kube-apiserver refuses."""

from __future__ import annotations

from typing import Annotated, Any

import pytest

import kubeforge
import kubeforge.markers
from kubeforge import Client, Invalid
from kubeforge._api.crd import crd_for
from kubeforge._api.schema import schema_of


def _bare(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema without its descriptions (those are prose, not rules)."""
    out = {k: v for k, v in schema.items() if k != "description"}
    if "properties" in out:
        out["properties"] = {k: _bare(v) for k, v in out["properties"].items()}
    return out


def test_the_schema_is_the_one_controller_gen_writes_for_metav1_condition() -> None:
    assert _bare(schema_of(kubeforge.Condition)) == {
        "type": "object",
        "properties": {
            "type": {
                "type": "string",
                "maxLength": 316,
                "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
            },
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "reason": {
                "type": "string",
                "maxLength": 1024,
                "minLength": 1,
                "pattern": r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
            },
            "message": {"type": "string", "maxLength": 32768},
        },
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
    }


class ThingSpec(kubeforge.Model):
    size: int = 1


class ThingStatus(kubeforge.Model):
    conditions: (
        Annotated[list[kubeforge.Condition], kubeforge.markers.ListMapKeys("type")] | None
    ) = None


@kubeforge.resource(group="conditions.example.com", version="v1")
class Thing(kubeforge.Resource[ThingSpec, ThingStatus]):
    """Something with conditions."""


GOOD = {
    "type": "Ready",
    "status": "True",
    "reason": "AllGood",
    "message": "",
    "lastTransitionTime": "2025-01-02T03:04:05Z",
    "observedGeneration": 1,
}
BAD: list[tuple[str, dict[str, Any], str]] = [
    ("no reason", {k: v for k, v in GOOD.items() if k != "reason"}, "reason"),
    ("empty reason", {**GOOD, "reason": ""}, "reason"),
    ("reason not CamelCase", {**GOOD, "reason": "all good"}, "reason"),
    ("reason too long", {**GOOD, "reason": "R" * 1025}, "reason"),
    ("no message", {k: v for k, v in GOOD.items() if k != "message"}, "message"),
    ("message too long", {**GOOD, "message": "m" * 32769}, "message"),
    ("status not an enum value", {**GOOD, "status": "Maybe"}, "status"),
    ("type with spaces", {**GOOD, "type": "Not Ready"}, "type"),
    ("type too long", {**GOOD, "type": "example.com/" + "T" * 305}, "type"),
    ("negative generation", {**GOOD, "observedGeneration": -1}, "observedGeneration"),
    ("no transition time", {k: v for k, v in GOOD.items() if k != "lastTransitionTime"}, "last"),
]


def thing(condition: dict[str, Any], name: str = "t") -> dict[str, Any]:
    return {
        "apiVersion": "conditions.example.com/v1",
        "kind": "Thing",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": 1},
        "status": {"conditions": [condition]},
    }


def test_validate_accepts_a_proper_condition_and_names_each_wrong_field() -> None:
    assert Thing.validate_data(thing(GOOD)) == []
    assert Thing.validate_data(thing({**GOOD, "type": "example.com/Synced-2"})) == []
    for what, condition, field in BAD:
        errors = Thing.validate_data(thing(condition))
        assert errors, what
        assert any(field in str(e.field) for e in errors), (what, errors)


async def test_the_api_server_refuses_the_same_conditions(api: Client) -> None:
    await api.create(crd_for([Thing]))
    await api.wait_established(["things.conditions.example.com"])
    kind = "conditions.example.com/v1/Thing"
    created = await api.create({k: v for k, v in thing(GOOD).items() if k != "status"})
    status = {"status": {"conditions": [GOOD]}}
    await api.patch_status(kind, "t", status)
    for what, condition, field in BAD:
        with pytest.raises(Invalid) as refused:
            await api.patch_status(kind, "t", {"status": {"conditions": [condition]}})
        assert any(field in str(c.get("field")) for c in refused.value.causes), (what, refused)
    assert created["metadata"]["name"] == "t"
