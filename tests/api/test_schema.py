"""Python types -> structural schemas, and built-in definitions in their CRD form."""

from __future__ import annotations

import copy
import enum
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Literal, NewType

import orjson
import pytest
from pydantic import Field

from kubeforge._api import markers as mk
from kubeforge._api.machinery import definitions
from kubeforge._api.machinery.structural import structural_errors
from kubeforge._api.meta import Condition, ObjectMeta
from kubeforge._api.model import Model
from kubeforge._api.resource import Resource, resource
from kubeforge._api.schema import (
    API_VERSION_DESCRIPTION,
    KIND_DESCRIPTION,
    SchemaError,
    schema_for_model,
    schema_of,
)
from kubeforge._apiserver.types.builtin_schemas import BuiltinSchemas

CONTAINER = "io.k8s.api.core.v1.Container"
POD_TEMPLATE = "io.k8s.api.core.v1.PodTemplateSpec"
PROPS = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"


def rooted(schema: dict[str, Any]) -> dict[str, Any]:
    """A field schema placed under `spec` of a CRD root, for the structural checks."""
    return {"type": "object", "properties": {"spec": schema}}


def walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every schema node below `node` (property names are not keywords)."""
    yield node
    for sub in (node.get("properties") or {}).values():
        yield from walk(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from walk(node[key])
    for sub in node.get("anyOf") or ():
        yield from walk(sub)


# Scalars and containers -----------------------------------------------------------------------


class Colour(enum.StrEnum):
    """A primary colour."""

    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


Name = NewType("Name", str)


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (str, {"type": "string"}),
        (Name, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (datetime, {"type": "string", "format": "date-time"}),
        (date, {"type": "string", "format": "date"}),
        (timedelta, {"type": "number"}),
        (bytes, {"type": "string", "format": "byte"}),
        (uuid.UUID, {"type": "string", "format": "uuid"}),
        (Any, {"x-kubernetes-preserve-unknown-fields": True}),
        (object, {"x-kubernetes-preserve-unknown-fields": True}),
        (dict, {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        (dict[str, Any], {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (
            dict[Colour, list[str]],
            {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
            },
        ),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (tuple[str, ...], {"type": "array", "items": {"type": "string"}}),
        (
            set[str],
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        ),
        (
            frozenset[int],
            {"type": "array", "items": {"type": "integer"}, "x-kubernetes-list-type": "set"},
        ),
        (list, {"type": "array", "items": {"x-kubernetes-preserve-unknown-fields": True}}),
        (Literal["up", "down"], {"type": "string", "enum": ["up", "down"]}),
        (Literal[1, 2, 3], {"type": "integer", "enum": [1, 2, 3]}),
        (Literal["a"] | None, {"type": "string", "enum": ["a"]}),
        (
            Colour,
            {"type": "string", "enum": ["red", "blue"], "description": "A primary colour."},
        ),
        (Level, {"type": "integer", "enum": [1, 2]}),
        (
            int | str,
            {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            },
        ),
        (
            str | int | None,
            {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            },
        ),
        (int | float, {"type": "number"}),
        (int | None, {"type": "integer"}),
        (list[int | None], {"type": "array", "items": {"type": "integer"}}),
    ],
)
def test_python_types(tp: Any, expected: dict[str, Any]) -> None:
    schema = schema_of(tp)
    assert schema == expected
    assert structural_errors(rooted(schema)) == []


@pytest.mark.parametrize(
    ("tp", "message"),
    [
        (str | list[str], "only `X | None` and `int | str` unions"),
        (tuple[int, str], "fixed-length tuples"),
        (dict[int, str], "map keys must be strings"),
        (Literal["a", 1], "enum values must all be"),
        (complex, "complex has no OpenAPI schema"),
    ],
)
def test_types_without_a_schema(tp: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        schema_of(tp)


def test_schemaless_accepts_any_type() -> None:
    assert schema_of(Annotated[str | list[str], mk.Schemaless()]) == {
        "x-kubernetes-preserve-unknown-fields": True
    }


# Markers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (Annotated[int, mk.Minimum(1)], {"type": "integer", "minimum": 1}),
        (
            Annotated[float, mk.Minimum(0, exclusive=True), mk.Maximum(1, exclusive=True)],
            {
                "type": "number",
                "minimum": 0,
                "exclusiveMinimum": True,
                "maximum": 1,
                "exclusiveMaximum": True,
            },
        ),
        (Annotated[int, mk.Maximum(16)], {"type": "integer", "maximum": 16}),
        (Annotated[int, mk.MultipleOf(5)], {"type": "integer", "multipleOf": 5}),
        (
            Annotated[str, mk.MinLength(1), mk.MaxLength(63)],
            {"type": "string", "minLength": 1, "maxLength": 63},
        ),
        (Annotated[str, mk.Pattern("^[a-z]+$")], {"type": "string", "pattern": "^[a-z]+$"}),
        (Annotated[str, mk.Format("email")], {"type": "string", "format": "email"}),
        (
            Annotated[list[str], mk.MinItems(1), mk.MaxItems(3)],
            {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
        ),
        (
            Annotated[list[str], mk.UniqueItems()],
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        ),
        (
            Annotated[dict[str, str], mk.MinProperties(1), mk.MaxProperties(9)],
            {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "minProperties": 1,
                "maxProperties": 9,
            },
        ),
        (Annotated[str, mk.Enum("a", "b")], {"type": "string", "enum": ["a", "b"]}),
        (Annotated[str, mk.Default("x")], {"type": "string", "default": "x"}),
        (Annotated[str, mk.Nullable()], {"type": "string", "nullable": True}),
        (
            Annotated[dict[str, Any], mk.PreserveUnknownFields()],
            {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        ),
        (
            Annotated[dict[str, Any], mk.EmbeddedResource()],
            {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "x-kubernetes-embedded-resource": True,
            },
        ),
        (
            Annotated[str, mk.IntOrString()],
            {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            },
        ),
        (Annotated[int, mk.Type("number")], {"type": "number"}),
        (
            Annotated[list[str], mk.ListType("atomic")],
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"},
        ),
        (
            Annotated[dict[str, str], mk.MapType("atomic")],
            {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "x-kubernetes-map-type": "atomic",
            },
        ),
        (
            Annotated[dict[str, Any], mk.StructType("granular")],
            {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "x-kubernetes-map-type": "granular",
            },
        ),
        (
            Annotated[int, mk.Rule("self >= oldSelf", message="may only grow")],
            {
                "type": "integer",
                "x-kubernetes-validations": [
                    {"rule": "self >= oldSelf", "message": "may only grow"}
                ],
            },
        ),
        (
            Annotated[str, mk.Immutable()],
            {
                "type": "string",
                "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "field is immutable"}
                ],
            },
        ),
        (Annotated[str, mk.Title("T")], {"type": "string", "title": "T"}),
        (Annotated[str, mk.Description("D")], {"type": "string", "description": "D"}),
        (Annotated[str, mk.Example("e")], {"type": "string", "example": "e"}),
        (
            Annotated[str, mk.ExternalDocs("https://example.com", "docs")],
            {
                "type": "string",
                "externalDocs": {"url": "https://example.com", "description": "docs"},
            },
        ),
        (
            Annotated[list[str], mk.Items(mk.MinLength(1), mk.Pattern("^[a-z]+$"))],
            {"type": "array", "items": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"}},
        ),
        (
            list[Annotated[str, mk.MaxLength(5)]],
            {"type": "array", "items": {"type": "string", "maxLength": 5}},
        ),
        (Annotated[str, mk.Required()], {"type": "string"}),
        (Annotated[str, mk.Optional()], {"type": "string"}),
        (
            Annotated[int, Field(ge=1, lt=10, multiple_of=3, description="three")],
            {
                "type": "integer",
                "minimum": 1,
                "maximum": 10,
                "exclusiveMaximum": True,
                "multipleOf": 3,
                "description": "three",
            },
        ),
    ],
)
def test_markers(tp: Any, expected: dict[str, Any]) -> None:
    schema = schema_of(tp)
    assert schema == expected
    assert structural_errors(rooted(schema)) == []


def test_markers_apply_in_order() -> None:
    assert schema_of(Annotated[str, mk.Default("a"), mk.Default("b")])["default"] == "b"
    schemaless_last = schema_of(Annotated[int, mk.Minimum(1), mk.Schemaless()])
    assert schemaless_last == {"x-kubernetes-preserve-unknown-fields": True}


def test_union_markers() -> None:
    @mk.on_class(mk.ExactlyOneOf("a", "b"), mk.AtMostOneOf("c", "d"), mk.AtLeastOneOf("a", "c"))
    class Choice(Model):
        a: str | None = None
        b: str | None = None
        c: str | None = None
        d: str | None = None

    rules = schema_of(Choice)["x-kubernetes-validations"]
    assert [r["rule"] for r in rules] == [
        "(has(self.a) ? 1 : 0) + (has(self.b) ? 1 : 0) == 1",
        "(has(self.c) ? 1 : 0) + (has(self.d) ? 1 : 0) <= 1",
        "(has(self.a) ? 1 : 0) + (has(self.c) ? 1 : 0) >= 1",
    ]
    assert structural_errors(rooted(schema_of(Choice))) == []


# Models -----------------------------------------------------------------------------------------


class Port(Model):
    """A port a machine listens on."""

    name: str
    """The port's name: the list's key."""
    port: Annotated[int, mk.Minimum(1), mk.Maximum(65535)]
    protocol: Literal["TCP", "UDP"] = "TCP"


class Limits(Model):
    cpu: int = 1
    memory: str = "64Mi"


@mk.on_class(
    mk.Rule(
        "self.low <= self.high",
        message="low must not exceed high",
        field_path=".low",
        reason="FieldValueForbidden",
    )
)
class Range(Model):
    """An inclusive range."""

    low: int = 0
    high: int = 10


class Wrapper(Model):
    """The type's own description."""

    value: str = ""


class Settings(Model):
    """Every kind of field.

    The second paragraph of the description.
    """

    name: Annotated[str, mk.Pattern("^[a-z]+$"), mk.Immutable()]
    """The name, set once."""
    title: str = Field("untitled", description="A short title.", max_length=40)
    mode: Literal["fast", "slow"] = "slow"
    colour: Colour = Colour.BLUE
    level: Level | None = None
    port: int | str = 8080
    ports: Annotated[list[Port], mk.ListMapKeys("name")] = Field(default_factory=list)
    labels: dict[str, str] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    custom_limits: Limits = Limits(cpu=4)
    range: Range | None = None
    wrapped: Wrapper | None = None
    """The field's description wins over the type's."""
    untyped: Wrapper | None = None
    raw: Annotated[dict[str, Any], mk.PreserveUnknownFields()] = Field(default_factory=dict)
    embedded: Annotated[dict[str, Any], mk.EmbeddedResource()] | None = None
    nullable_note: Annotated[str | None, mk.Nullable()] = None
    replicas: Annotated[int, mk.Rule("self >= oldSelf", message="replicas may only grow")] = 1
    started: datetime = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    timeout: timedelta = timedelta(seconds=30)
    forced: Annotated[bool, mk.Required()] = False
    relaxed: Annotated[str, mk.Optional()]
    maybe: int | None
    conditions: Annotated[list[Condition], mk.ListMapKeys("type")] = Field(default_factory=list)
    extra_meta: ObjectMeta = Field(default_factory=ObjectMeta)
    renamed: str = Field("", alias="differentName")


def test_model_schema() -> None:
    schema = schema_for_model(Settings)
    props = schema["properties"]
    assert schema["type"] == "object"
    assert schema["description"] == (
        "Every kind of field.\n\nThe second paragraph of the description."
    )
    assert schema["required"] == ["forced", "name"]
    assert list(props) == [
        "name",
        "title",
        "mode",
        "colour",
        "level",
        "port",
        "ports",
        "labels",
        "limits",
        "customLimits",
        "range",
        "wrapped",
        "untyped",
        "raw",
        "embedded",
        "nullableNote",
        "replicas",
        "started",
        "timeout",
        "forced",
        "relaxed",
        "maybe",
        "conditions",
        "extraMeta",
        "differentName",
    ]
    assert props["name"] == {
        "type": "string",
        "description": "The name, set once.",
        "pattern": "^[a-z]+$",
        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "field is immutable"}],
    }
    assert props["title"] == {
        "type": "string",
        "description": "A short title.",
        "default": "untitled",
        "maxLength": 40,
    }
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"], "default": "slow"}
    assert props["colour"]["default"] == "blue"
    assert "default" not in props["level"]
    assert props["port"]["default"] == 8080
    assert props["ports"] == {
        "type": "array",
        "items": {
            "type": "object",
            "description": "A port a machine listens on.",
            "properties": {
                "name": {"type": "string", "description": "The port's name: the list's key."},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "protocol": {"type": "string", "enum": ["TCP", "UDP"], "default": "TCP"},
            },
            "required": ["name", "port"],
        },
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
    }
    assert props["labels"] == {"type": "object", "additionalProperties": {"type": "string"}}
    # A model default states only what differs from the nested schema's own defaults.
    assert props["limits"]["default"] == {}
    assert props["limits"]["properties"]["memory"]["default"] == "64Mi"
    assert props["customLimits"]["default"] == {"cpu": 4}
    assert props["range"]["x-kubernetes-validations"] == [
        {
            "rule": "self.low <= self.high",
            "message": "low must not exceed high",
            "fieldPath": ".low",
            "reason": "FieldValueForbidden",
        }
    ]
    assert props["wrapped"]["description"] == "The field's description wins over the type's."
    assert props["untyped"]["description"] == "The type's own description."
    assert props["raw"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["embedded"]["x-kubernetes-embedded-resource"] is True
    assert props["nullableNote"] == {"type": "string", "nullable": True}
    assert props["started"] == {
        "type": "string",
        "format": "date-time",
        "default": "2024-01-02T03:04:05Z",
    }
    # kubeforge.Model writes durations as seconds.
    assert props["timeout"] == {"type": "number", "default": 30.0}
    assert props["forced"] == {"type": "boolean", "default": False}
    assert props["conditions"]["items"]["required"] == [
        "lastTransitionTime",
        "message",
        "reason",
        "status",
        "type",
    ]
    assert props["extraMeta"] == {"type": "object"}
    assert structural_errors(rooted(schema)) == []


def test_field_docstrings_and_class_docstrings_are_not_inherited() -> None:
    class Base(Model):
        """Base docs."""

    class Child(Base):
        x: int = 0

    assert "description" not in schema_of(Child)
    assert schema_of(Base)["description"] == "Base docs."


def test_list_map_keys_must_be_required_or_defaulted() -> None:
    class Item(Model):
        key: str | None = None

    class Holder(Model):
        items: Annotated[list[Item], mk.ListMapKeys("key")] = Field(default_factory=list)

    errors = structural_errors(rooted(schema_of(Holder)))
    assert [e.field for e in errors] == [
        "spec.validation.openAPIV3Schema.properties[spec].properties[items].items"
        ".properties[key].default"
    ]


def test_recursive_models_are_refused() -> None:
    class Node(Model):
        children: list[Node] = Field(default_factory=list)

    Node.model_rebuild()
    with pytest.raises(SchemaError, match=r"Node contains itself \(.*Node -> .*Node\)"):
        schema_of(Node)


def test_errors_name_the_field() -> None:
    class Bad(Model):
        either: str | list[str] = ""

    with pytest.raises(SchemaError, match=r"Bad\.either: "):
        schema_of(Bad)

    class Fixed(Model):
        either: Annotated[str | list[str], mk.Schemaless()] = ""

    assert schema_of(Fixed)["properties"]["either"] == {
        "x-kubernetes-preserve-unknown-fields": True
    }


def test_schema_for_model_wants_a_model() -> None:
    with pytest.raises(TypeError, match="not a model class"):
        schema_for_model(int)  # type: ignore[arg-type]


# Resources ----------------------------------------------------------------------------------------


class GadgetSpec(Model):
    """GadgetSpec is what the gadget should do."""

    size: Annotated[int, mk.Minimum(1)] = 1


class GadgetStatus(Model):
    """GadgetStatus is what the gadget did."""

    ready: bool = False


@resource(group="schema.kubeforge.dev", version="v1")
class Gadget(Resource[GadgetSpec, GadgetStatus]):
    """A gadget."""


@resource(group="schema.kubeforge.dev", version="v1")
class Trinket(Resource[GadgetSpec, None]):
    spec: GadgetSpec = Field(default_factory=GadgetSpec)


def test_resource_root() -> None:
    schema = schema_for_model(Gadget)
    assert schema == {
        "type": "object",
        "description": "A gadget.",
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION_DESCRIPTION},
            "kind": {"type": "string", "description": KIND_DESCRIPTION},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "description": "GadgetSpec is what the gadget should do.",
                "properties": {"size": {"type": "integer", "default": 1, "minimum": 1}},
            },
            "status": {
                "type": "object",
                "description": "GadgetStatus is what the gadget did.",
                "properties": {"ready": {"type": "boolean", "default": False}},
            },
        },
        "required": ["spec"],
    }
    assert structural_errors(schema) == []


def test_a_defaulted_spec_is_optional_and_a_none_status_absent() -> None:
    schema = schema_for_model(Trinket)
    assert "required" not in schema
    assert schema["properties"]["spec"]["default"] == {}
    assert "status" not in schema["properties"]
    assert structural_errors(schema) == []


def test_schemas_are_deterministic() -> None:
    first = orjson.dumps(schema_for_model(Settings), option=orjson.OPT_SORT_KEYS)
    second = orjson.dumps(schema_for_model(Settings), option=orjson.OPT_SORT_KEYS)
    assert first == second


# Built-in types -----------------------------------------------------------------------------------


class ContainerStandIn(Model):
    """Stands in for the generated model of a core/v1 Container."""

    __kubeforge_definition__ = CONTAINER


class TemplateStandIn(Model):
    __kubeforge_definition__ = POD_TEMPLATE


class Workload(Model):
    containers: list[ContainerStandIn] = Field(default_factory=list)
    template: TemplateStandIn | None = None
    """The pods to run."""


def test_builtin_models_are_inlined() -> None:
    schema = schema_of(Workload)
    container = schema["properties"]["containers"]["items"]
    assert container["description"] == (
        "A single application container that you want to run within a pod."
    )
    ports = container["properties"]["ports"]
    assert ports["x-kubernetes-list-type"] == "map"
    assert ports["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert ports["items"]["properties"]["protocol"]["default"] == "TCP"
    template = schema["properties"]["template"]
    assert template["description"] == "The pods to run."
    assert template["properties"]["metadata"]["type"] == "object"
    assert "properties" not in template["properties"]["metadata"]
    assert structural_errors(rooted(schema)) == []


def test_generated_builtin_models_are_inlined_too() -> None:
    from kubeforge.models import Container, ObjectMeta as BuiltinObjectMeta, PodTemplateSpec

    class Job(Model):
        container: Container
        template: PodTemplateSpec | None = None
        meta: BuiltinObjectMeta | None = None

    props = schema_of(Job)["properties"]
    assert props["container"] == definitions.structural(CONTAINER)
    assert props["template"] == definitions.structural(POD_TEMPLATE)
    assert props["meta"] == {"type": "object"}


def test_embedded_object_meta_lists_what_controller_gen_keeps() -> None:
    from kubeforge.models import JobTemplateSpec

    class Crew(Model):
        job_template: JobTemplateSpec
        meta: ObjectMeta | None = None

    @resource(group="schema.example.com", version="v1", embedded_object_meta=True)
    class Gang(Resource[Crew, None]):
        """Embeds metadata."""

    schema = schema_for_model(Gang)
    assert schema["properties"]["metadata"] == {"type": "object"}  # the root's: the server's
    spec = schema["properties"]["spec"]["properties"]
    kept = dict(spec["jobTemplate"]["properties"]["metadata"])
    assert kept.pop("description").startswith("Standard object's metadata")
    assert kept == spec["meta"] == definitions.EMBEDDED_OBJECT_META
    assert list(kept["properties"]) == ["annotations", "finalizers", "labels", "name", "namespace"]
    template = spec["jobTemplate"]["properties"]["spec"]["properties"]["template"]
    assert template["properties"]["metadata"]["properties"] == kept["properties"]
    assert structural_errors(schema) == []
    # Asked for explicitly, the other way round; a plain model has it off.
    bare = schema_for_model(Gang, embedded_object_meta=False)["properties"]["spec"]
    assert bare["properties"]["meta"] == {"type": "object"}
    assert schema_for_model(Crew)["properties"]["meta"] == {"type": "object"}


# Definitions --------------------------------------------------------------------------------------


def test_definitions_are_loaded_once_and_shared() -> None:
    defs = definitions.load("1.33")
    assert definitions.load("v1.33.2") is defs
    assert BuiltinSchemas.for_version("1.33").defs is defs
    assert "enum" not in defs["io.k8s.api.apps.v1.Deployment"]["properties"]["kind"]


def test_unshipped_minors_use_the_nearest_definitions() -> None:
    minors = definitions.shipped_minors()
    key, directory = definitions.resolve("1.99")
    assert key == f"v1.{minors[-1]}.0"
    assert directory.name == f"{key}-local"
    with pytest.raises(ValueError, match=r"not a Kubernetes 1\.x version"):
        definitions.resolve("2.1")


def test_every_definition_is_a_structural_schema() -> None:
    defs = definitions.load()
    for name in defs:
        schema = definitions.structural(name)
        errors = structural_errors(rooted(schema))
        assert errors == [], (name, [str(e) for e in errors[:3]])
        for node in walk(schema):
            assert "$ref" not in node, name
            assert not isinstance(node.get("type"), list), name
            for key in node:
                assert not key.startswith("x-kubernetes-patch"), name
            assert "x-kubernetes-group-version-kind" not in node, name


def test_well_known_types() -> None:
    container = definitions.structural(CONTAINER)["properties"]
    probe_port = container["livenessProbe"]["properties"]["httpGet"]["properties"]["port"]
    assert probe_port["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert probe_port["x-kubernetes-int-or-string"] is True
    assert "type" not in probe_port
    limit = container["resources"]["properties"]["limits"]["additionalProperties"]
    assert limit == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
        "pattern": definitions.QUANTITY_PATTERN,
    }
    secret_name = container["env"]["items"]["properties"]["valueFrom"]["properties"][
        "secretKeyRef"
    ]["properties"]["name"]
    assert secret_name["default"] == ""
    meta = definitions.structural("io.k8s.apimachinery.pkg.apis.meta.v1.Condition")
    assert meta["properties"]["lastTransitionTime"] == {
        "type": "string",
        "format": "date-time",
        "description": meta["properties"]["lastTransitionTime"]["description"],
    }
    raw = definitions.structural("io.k8s.api.apps.v1.ControllerRevision")["properties"]["data"]
    assert raw["type"] == "object"
    assert raw["x-kubernetes-preserve-unknown-fields"] is True
    deployment = definitions.structural("io.k8s.api.apps.v1.Deployment")
    assert deployment["properties"]["kind"]["type"] == "string"
    assert "enum" not in deployment["properties"]["kind"]
    assert "enum" not in deployment["properties"]["apiVersion"]
    assert deployment["properties"]["metadata"]["type"] == "object"
    assert "properties" not in deployment["properties"]["metadata"]
    csr = definitions.structural("io.k8s.api.certificates.v1.CertificateSigningRequestSpec")
    assert csr["properties"]["request"] == {
        "type": "string",
        "format": "byte",
        "description": csr["properties"]["request"]["description"],
    }


def test_recursive_definitions_keep_unknown_fields_where_they_recur() -> None:
    schema = definitions.structural(PROPS)
    props = schema["properties"]
    assert props["properties"]["additionalProperties"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert props["items"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert props["default"]["x-kubernetes-preserve-unknown-fields"] is True
    assert "type" not in props["default"]
    crd = definitions.structural(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceValidation"
    )
    inner = crd["properties"]["openAPIV3Schema"]
    assert inner["properties"]["type"] == {"type": "string"}
    assert inner["properties"]["not"]["x-kubernetes-preserve-unknown-fields"] is True


def test_structural_returns_independent_copies() -> None:
    first = definitions.structural(CONTAINER)
    pristine = copy.deepcopy(first)
    first["properties"].clear()
    assert definitions.structural(CONTAINER) == pristine
    with pytest.raises(KeyError, match="no built-in definition"):
        definitions.structural("io.k8s.api.core.v1.Nope")
