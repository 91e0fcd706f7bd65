"""The OpenAPI v2 document: its shape, CRD schemas in their v2 form, and its protobuf encoding
read back with a wire reader written from gnostic's OpenAPIv2.proto."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import yaml

from kubeforge._apiserver.discovery.openapiv2 import MAX_SCHEMA_DEPTH, OpenAPIV2
from kubeforge._apiserver.types.builtin_schemas import BuiltinSchemas
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import ResourceType, Subresource

DEFS = "#/definitions/"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
GADGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A gadget.",
    "properties": {
        "spec": {
            "type": "object",
            "description": "What the gadget should be.",
            "required": ["size", "note", "labels"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
                "note": {"type": "string", "nullable": True},
                "port": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                },
                "extra": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"kept": {"type": "string"}},
                },
                "anything": {"type": "array", "x-kubernetes-preserve-unknown-fields": True,
                             "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object"}},
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}},
                        "x-kubernetes-validations": [{"rule": "self.name != ''"}],
                    },
                },
                "choice": {
                    "type": "object",
                    "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
                    "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                },
            },
        },
        "metadata": {"type": "object"},
    },
}  # fmt: skip


def gadget_type(version: str = "v1", schema: dict[str, Any] | None = None) -> ResourceType:
    return ResourceType(
        group="example.com",
        version=version,
        kind="Gadget",
        plural="gadgets",
        singular="gadget",
        namespaced=True,
        subresources=(
            Subresource("status", "Gadget", ("get", "patch", "update")),
            Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling", "v1"),
        ),
        schema=schema or GADGET_SCHEMA,
        crd_name="gadgets.example.com",
    )


@pytest.fixture(scope="module")
def schemas() -> BuiltinSchemas:
    return BuiltinSchemas.for_version("1.33")


@pytest.fixture
def registry() -> Registry:
    reg = Registry()
    reg.add(gadget_type())
    return reg


@pytest.fixture
def openapi(registry: Registry, schemas: BuiltinSchemas) -> OpenAPIV2:
    return OpenAPIV2(registry, schemas)


def load(openapi: OpenAPIV2) -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads(openapi.current().json)
    return doc


def walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def schema_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every schema node below (and including) `node`, not looking into extension values."""
    yield node
    for sub in (node.get("properties") or {}).values():
        yield from schema_nodes(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from schema_nodes(node[key])
    for sub in node.get("allOf") or ():
        yield from schema_nodes(sub)


# The document ------------------------------------------------------------------------------


def test_swagger_document_with_patch_operations_kubectl_checks(openapi: OpenAPIV2) -> None:
    doc = load(openapi)
    assert doc["swagger"] == "2.0"
    assert doc["info"] == {"title": "Kubernetes", "version": "v1.33.0"}
    item = doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]
    patch = item["patch"]
    assert patch["operationId"] == "patchCoreV1NamespacedConfigMap"
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "",
        "kind": "ConfigMap",
        "version": "v1",
    }
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    body, *query = patch["parameters"]
    assert body == {
        "name": "body",
        "in": "body",
        "required": True,
        "schema": {"$ref": DEFS + "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"},
    }
    names = {p["name"]: p for p in query}
    assert names["fieldValidation"]["in"] == "query"
    assert names["fieldValidation"]["type"] == "string"
    assert patch["responses"]["200"]["schema"] == {"$ref": DEFS + "io.k8s.api.core.v1.ConfigMap"}
    assert {p["name"] for p in item["parameters"]} == {"name", "namespace", "pretty"}
    create = doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["post"]
    assert create["consumes"] == ["*/*"]
    assert create["parameters"][0]["schema"] == {"$ref": DEFS + "io.k8s.api.core.v1.ConfigMap"}
    # kubectl stops at the first PATCH of a kind: every one must declare fieldValidation.
    for item in doc["paths"].values():
        if item.get("patch", {}).get("x-kubernetes-action") == "patch":
            assert "fieldValidation" in [p["name"] for p in item["patch"]["parameters"]]


def test_custom_kinds_have_paths_without_strategic_merge(openapi: OpenAPIV2) -> None:
    paths = load(openapi)["paths"]
    patch = paths["/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "example.com",
        "kind": "Gadget",
        "version": "v1",
    }
    assert patch["consumes"] == [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ]
    scale = paths["/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}/scale"]["get"]
    assert scale["responses"]["200"]["schema"] == {"$ref": DEFS + "io.k8s.api.autoscaling.v1.Scale"}


def test_definitions_are_complete_and_v2_only(openapi: OpenAPIV2) -> None:
    doc = load(openapi)
    defs = doc["definitions"]
    assert list(defs) == sorted(defs)
    assert "io.k8s.api.apps.v1.Deployment" in defs
    assert "io.k8s.api.autoscaling.v1.Scale" in defs
    refs = [n["$ref"] for n in walk(doc) if isinstance(n.get("$ref"), str)]
    assert refs and all(r.startswith(DEFS) and r[len(DEFS) :] in defs for r in refs)
    for schema in defs.values():
        for node in schema_nodes(schema):
            assert not {"oneOf", "anyOf", "not", "nullable", "$defs"} & set(node)
            if "$ref" in node:  # kubectl refuses a typed or structured reference
                assert set(node) <= {"$ref", "description"}
            if "type" in node:
                assert node["type"] in ("object", "array", "string", "integer", "number", "boolean")
            if node.get("type") == "array":
                assert isinstance(node.get("items"), dict)


def test_builtin_definitions_in_published_form(openapi: OpenAPIV2) -> None:
    defs = load(openapi)["definitions"]
    deployment = defs["io.k8s.api.apps.v1.Deployment"]
    assert deployment["type"] == "object"
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    assert deployment["properties"]["metadata"]["$ref"] == DEFS + OBJECT_META
    containers = defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["items"] == {"$ref": DEFS + "io.k8s.api.core.v1.Container"}
    assert defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {
        "type": "string",
        "format": "int-or-string",
    }
    assert defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == "string"
    data = defs["io.k8s.api.core.v1.ConfigMap"]["properties"]["data"]
    assert data["type"] == "object" and data["additionalProperties"] == {"type": "string"}


def test_crd_schema_converted_as_kube_apiserver_publishes_v2(openapi: OpenAPIV2) -> None:
    defs = load(openapi)["definitions"]
    gadget = defs["com.example.v1.Gadget"]
    assert gadget["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "kind": "Gadget", "version": "v1"}
    ]
    props = gadget["properties"]
    assert props["metadata"]["$ref"] == DEFS + OBJECT_META
    assert props["apiVersion"]["type"] == props["kind"]["type"] == "string"
    spec = props["spec"]["properties"]
    assert props["spec"]["required"] == ["size", "labels"]  # nullable `note` is not required
    assert spec["size"] == {"type": "integer", "minimum": 1, "maximum": 10}
    assert spec["color"] == {"type": "string", "enum": ["red", "green"], "default": "red"}
    assert spec["note"] == {}
    assert spec["port"] == {"x-kubernetes-int-or-string": True}
    assert spec["extra"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert spec["anything"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert spec["labels"] == {"type": "object", "additionalProperties": {"type": "string"}}
    template = spec["template"]
    assert template["properties"]["metadata"]["$ref"] == DEFS + OBJECT_META
    assert set(template["properties"]) == {"spec", "apiVersion", "kind", "metadata"}
    assert template["required"] == ["kind", "apiVersion"]
    ports = spec["ports"]
    assert ports["x-kubernetes-list-map-keys"] == ["name"]
    assert ports["items"]["x-kubernetes-validations"] == [{"rule": "self.name != ''"}]
    assert "oneOf" not in spec["choice"] and set(spec["choice"]["properties"]) == {"a", "b"}
    items = defs["com.example.v1.GadgetList"]["properties"]["items"]
    assert items == {
        "description": "The Gadget objects.",
        "type": "array",
        "items": {"$ref": DEFS + "com.example.v1.Gadget"},
    }


def test_crd_preserving_unknown_fields_at_the_root_is_a_bare_object(
    registry: Registry, openapi: OpenAPIV2
) -> None:
    registry.add(
        gadget_type("v2", {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    )
    assert load(openapi)["definitions"]["com.example.v2.Gadget"] == {
        "type": "object",
        "x-kubernetes-group-version-kind": [
            {"group": "example.com", "kind": "Gadget", "version": "v2"}
        ],
    }


def test_deep_crd_schemas_are_cut_off(registry: Registry, openapi: OpenAPIV2) -> None:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(100):
        node = {"type": "object", "properties": {"a": node}}
    registry.add(gadget_type("v3", node))
    doc = load(openapi)
    proto = openapi.current().protobuf()
    depth, schema = 0, doc["definitions"]["com.example.v3.Gadget"]
    while "a" in schema.get("properties", {}):
        schema, depth = schema["properties"]["a"], depth + 1
    assert depth == MAX_SCHEMA_DEPTH and schema == {}
    assert Document(proto).definition("com.example.v3.Gadget") == openapi_definition(
        doc, "com.example.v3.Gadget"
    )


# Caching and changes -----------------------------------------------------------------------


def test_document_follows_registry_changes(registry: Registry, openapi: OpenAPIV2) -> None:
    first = openapi.current()
    assert openapi.current() is first  # nothing changed: nothing rebuilt
    registry.remove_crd("gadgets.example.com")
    without = openapi.current()
    assert without.etag != first.etag
    assert "com.example.v1.Gadget" not in load(openapi)["definitions"]
    assert not any("/example.com/" in p for p in load(openapi)["paths"])
    registry.add(gadget_type())
    again = openapi.current()
    assert again.etag == first.etag and again.json == first.json
    changed = {**GADGET_SCHEMA, "description": "Changed."}
    registry.remove_crd("gadgets.example.com")
    registry.add(gadget_type(schema=changed))
    assert load(openapi)["definitions"]["com.example.v1.Gadget"]["description"] == "Changed."


def test_other_servers_share_built_documents(schemas: BuiltinSchemas) -> None:
    first = OpenAPIV2(Registry(), schemas).current()
    second = OpenAPIV2(Registry(), schemas).current()
    assert first.json is second.json
    assert first.protobuf() is second.protobuf()


def test_etag_is_the_sha512_of_the_json(openapi: OpenAPIV2) -> None:
    import hashlib

    doc = openapi.current()
    assert doc.etag == hashlib.sha512(doc.json).hexdigest().upper()


# The protobuf encoding ---------------------------------------------------------------------
# Field numbers below are read from gnostic-models' openapiv2/OpenAPIv2.proto.


def wire_fields(buf: bytes) -> list[tuple[int, Any]]:
    """A message's fields in order: varints as ints, fixed64 as 8 bytes, others as bytes."""

    def varint(i: int) -> tuple[int, int]:
        shift = value = 0
        while True:
            byte = buf[i]
            value |= (byte & 0x7F) << shift
            i += 1
            if byte < 0x80:
                return value, i
            shift += 7

    out: list[tuple[int, Any]] = []
    i = 0
    while i < len(buf):
        key, i = varint(i)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, i = varint(i)
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 2:
            size, i = varint(i)
            value, i = buf[i : i + size], i + size
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.append((number, value))
    assert i == len(buf)
    return out


def one(buf: bytes, number: int) -> Any:
    found = [v for n, v in wire_fields(buf) if n == number]
    assert len(found) == 1, (number, found)
    return found[0]


def many(buf: bytes, number: int) -> list[Any]:
    return [v for n, v in wire_fields(buf) if n == number]


def named(buf: bytes, number: int) -> dict[str, bytes]:
    """Repeated Named<X>{name = 1; value = 2} pairs."""
    return {one(e, 1).decode(): one(e, 2) for e in many(buf, number)}


def any_value(buf: bytes) -> Any:
    return yaml.safe_load(one(buf, 2).decode())  # Any.yaml


SCHEMA_STRINGS = {1: "$ref", 2: "format", 3: "title", 4: "description", 13: "pattern"}
SCHEMA_DOUBLES = {6: "multipleOf", 7: "maximum", 9: "minimum"}
SCHEMA_BOOLS = {8: "exclusiveMaximum", 10: "exclusiveMinimum", 16: "uniqueItems", 27: "readOnly"}
SCHEMA_INTS = {11: "maxLength", 12: "minLength", 14: "maxItems", 15: "minItems",
               17: "maxProperties", 18: "minProperties"}  # fmt: skip


def decode_schema(buf: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, value in wire_fields(buf):
        if number in SCHEMA_STRINGS:
            out[SCHEMA_STRINGS[number]] = value.decode()
        elif number in SCHEMA_DOUBLES:
            out[SCHEMA_DOUBLES[number]] = struct.unpack("<d", value)[0]
        elif number in SCHEMA_BOOLS:
            out[SCHEMA_BOOLS[number]] = bool(value)
        elif number in SCHEMA_INTS:
            out[SCHEMA_INTS[number]] = value
        elif number == 5:
            out["default"] = any_value(value)
        elif number == 19:
            out.setdefault("required", []).append(value.decode())
        elif number == 20:
            out.setdefault("enum", []).append(any_value(value))
        elif number == 21:  # AdditionalPropertiesItem: oneof schema = 1, boolean = 2
            ((member, inner),) = wire_fields(value)
            out["additionalProperties"] = decode_schema(inner) if member == 1 else bool(inner)
        elif number == 22:  # TypeItem
            (out["type"],) = (v.decode() for v in many(value, 1))
        elif number == 23:  # ItemsItem
            (out["items"],) = (decode_schema(v) for v in many(value, 1))
        elif number == 24:
            out.setdefault("allOf", []).append(decode_schema(value))
        elif number == 25:  # Properties of NamedSchema
            out["properties"] = {k: decode_schema(v) for k, v in named(value, 1).items()}
        elif number == 31:  # NamedAny vendor extensions
            out[one(value, 1).decode()] = any_value(one(value, 2))
        else:
            raise AssertionError(f"unexpected Schema field {number}")
    return out


def without_zero_scalars(node: Any) -> Any:
    """A JSON schema as proto3 carries it: scalars equal to their zero value are left out
    (a boolean `additionalProperties` is a oneof member, kept; YAML-carried values are kept)."""
    if isinstance(node, list):
        return [without_zero_scalars(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-") or key in ("default", "enum", "example", "additionalProperties"):
            out[key] = without_zero_scalars(value) if key == "additionalProperties" else value
        elif isinstance(value, bool | int | float | str) and not value:
            continue
        else:
            out[key] = without_zero_scalars(value)
    return out


class Document:
    """An encoded openapi.v2.Document, read with the helpers above."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def paths(self) -> dict[str, bytes]:
        return named(one(self.data, 8), 2)  # Document.paths -> Paths.path

    def definitions(self) -> dict[str, bytes]:
        return named(one(self.data, 9), 1)  # Document.definitions -> Definitions

    def definition(self, name: str) -> dict[str, Any]:
        return decode_schema(self.definitions()[name])


def openapi_definition(doc: dict[str, Any], name: str) -> Any:
    return without_zero_scalars(doc["definitions"][name])


def test_protobuf_carries_every_path_and_definition(openapi: OpenAPIV2) -> None:
    current = openapi.current()
    doc = orjson.loads(current.json)
    proto = Document(current.protobuf())
    assert one(proto.data, 1) == b"2.0"
    info = one(proto.data, 2)
    assert (one(info, 1), one(info, 2)) == (b"Kubernetes", b"v1.33.0")
    assert list(proto.paths()) == list(doc["paths"])
    definitions = proto.definitions()
    assert list(definitions) == list(doc["definitions"])
    for name, encoded in definitions.items():
        assert decode_schema(encoded) == openapi_definition(doc, name), name


def test_protobuf_patch_operation_as_kubectl_reads_it(openapi: OpenAPIV2) -> None:
    proto = Document(openapi.current().protobuf())
    item = proto.paths()["/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}"]
    patch = one(item, 8)  # PathItem.patch
    assert one(patch, 5) == b"patchExampleComV1NamespacedGadget"  # Operation.operation_id
    assert [c.decode() for c in many(patch, 7)] == [  # Operation.consumes
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ]
    extensions = {one(e, 1).decode(): any_value(one(e, 2)) for e in many(patch, 13)}
    assert extensions["x-kubernetes-action"] == "patch"
    assert extensions["x-kubernetes-group-version-kind"] == {
        "group": "example.com",
        "kind": "Gadget",
        "version": "v1",
    }
    query: dict[str, bytes] = {}
    for entry in many(patch, 8):  # ParametersItem
        parameter = one(entry, 1)  # .parameter
        if 1 in dict(wire_fields(parameter)):  # Parameter.body_parameter
            body = one(parameter, 1)
            assert (one(body, 2), one(body, 3), one(body, 4)) == (b"body", b"body", 1)
            schema = decode_schema(one(body, 5))
            assert schema == {"$ref": DEFS + "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}
            continue
        sub = one(one(parameter, 2), 3)  # NonBodyParameter.query_parameter_sub_schema
        query[one(sub, 4).decode()] = sub  # QueryParameterSubSchema.name
    assert set(query) == {"dryRun", "fieldManager", "fieldValidation", "force"}
    assert one(query["fieldValidation"], 2) == b"query"  # .in
    assert one(query["fieldValidation"], 6) == b"string"  # .type
    assert one(query["force"], 20) == 1  # .unique_items
    responses = named(one(patch, 9), 1)  # Responses.response_code
    ok = one(one(one(responses["200"], 1), 2), 1)  # ResponseValue.response.schema.schema
    assert decode_schema(ok) == {"$ref": DEFS + "com.example.v1.Gadget"}


def test_protobuf_security_and_boolean_additional_properties(
    registry: Registry, openapi: OpenAPIV2
) -> None:
    closed = {
        "type": "object",
        "properties": {"spec": {"type": "object", "additionalProperties": False}},
    }
    registry.add(gadget_type("v2", closed))
    proto = Document(openapi.current().protobuf())
    spec = proto.definition("com.example.v2.Gadget")["properties"]["spec"]
    assert spec == {"type": "object", "additionalProperties": False}
    (requirement,) = many(proto.data, 12)
    assert named(requirement, 1) == {"BearerToken": b""}
    (scheme,) = named(one(proto.data, 13), 1).values()
    api_key = one(scheme, 2)  # SecurityDefinitionsItem.api_key_security
    assert (one(api_key, 1), one(api_key, 2), one(api_key, 3)) == (
        b"apiKey",
        b"authorization",
        b"header",
    )
