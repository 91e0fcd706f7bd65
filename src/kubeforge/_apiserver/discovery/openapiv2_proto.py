"""Encoding an OpenAPI v2 (Swagger 2.0) document as gnostic's `openapi.v2.Document` protobuf.

kubectl 1.27 and 1.28 read `/openapi/v2` only in this form
(`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`). The messages and field
numbers are those of `openapiv2/OpenAPIv2.proto` in github.com/google/gnostic-models; the
mapping from JSON follows gnostic's own reader: JSON objects become lists of named pairs in
document order, `x-` keys become vendor extensions, their values and those of `default`, `enum`
and `example` travel as YAML text in an `Any` (we write JSON, which YAML readers accept and
which keeps strings quoted), and each JSON-keyed choice (a parameter's `in`, a `$ref`, a
boolean `additionalProperties`) selects one member of a oneof.

Only what a served Kubernetes document uses is mapped; other keys are left out. Scalars equal
to their zero value are left out as proto3 does. Why this is hand-written rather than generated
with the `protobuf` package: docs/decisions/0016-openapi-v2-protobuf-encoder.md.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

import orjson

__all__ = ["Encoded", "definition_entries", "document", "path_entries"]


class Encoded(bytes):
    """A message body that is already encoded (placed as is where a message is expected)."""


_VARINT, _FIXED64, _LEN = 0, 1, 2

_Codec = Callable[[int, Any], bytes]
# JSON key -> (field number, codec); `_EXT` marks the vendor-extension field.
_Spec = dict[str, tuple[int, _Codec]]
_EXT = "x-"


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _tag(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _len_field(field: int, body: bytes) -> bytes:
    return _tag(field, _LEN) + _varint(len(body)) + body


# Scalars ---------------------------------------------------------------------------------


def _string(field: int, value: Any) -> bytes:
    if not isinstance(value, str) or not value:
        return b""
    return _len_field(field, value.encode())


def _strings(field: int, value: Any) -> bytes:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return b""
    # Repeated strings keep empty elements.
    return b"".join(_len_field(field, v.encode()) for v in value if isinstance(v, str))


def _bool(field: int, value: Any) -> bytes:
    return _tag(field, _VARINT) + b"\x01" if value is True else b""


def _double(field: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value:
        return b""
    return _tag(field, _FIXED64) + struct.pack("<d", float(value))


def _int64(field: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int) or not value:
        return b""
    return _tag(field, _VARINT) + _varint(value)


def _yaml_any(value: Any) -> bytes:
    """An `Any` holding `value` as YAML text (`Any.yaml`, field 2)."""
    return _len_field(2, orjson.dumps(value))


def _any(field: int, value: Any) -> bytes:
    return _len_field(field, _yaml_any(value))


def _anys(field: int, value: Any) -> bytes:
    if not isinstance(value, list):
        return b""
    return b"".join(_any(field, v) for v in value)


# Messages ----------------------------------------------------------------------------------


def _encode(spec: _Spec, obj: Mapping[str, Any]) -> bytes:
    """The body of one message, fields in field-number order as Go's encoder writes them."""
    parts: list[bytes] = []
    for key, (field, codec) in spec.items():
        if key == _EXT:
            parts.extend(
                _len_field(field, _string(1, name) + _len_field(2, _yaml_any(value)))
                for name, value in obj.items()
                if name.startswith("x-")
            )
        elif key in obj:
            parts.append(codec(field, obj[key]))
    return b"".join(parts)


def _body(spec: _Spec | Callable[[Any], bytes], value: Any) -> bytes:
    if isinstance(value, Encoded):
        return bytes(value)
    if callable(spec):
        return spec(value)
    return _encode(spec, value) if isinstance(value, Mapping) else b""


def _message(spec: _Spec | Callable[[Any], bytes]) -> _Codec:
    """A singular message field (present fields are written even when empty)."""

    def codec(field: int, value: Any) -> bytes:
        if value is None:
            return b""
        return _len_field(field, _body(spec, value))

    return codec


def _messages(spec: _Spec | Callable[[Any], bytes]) -> _Codec:
    def codec(field: int, value: Any) -> bytes:
        if not isinstance(value, list):
            return b""
        return b"".join(_len_field(field, _body(spec, v)) for v in value)

    return codec


def _named(value_codec: _Codec, keep: Callable[[str], bool] = lambda _: True) -> _Codec:
    """A JSON object as repeated `Named<X>{name = 1; value = 2}` pairs, in document order."""

    def codec(field: int, value: Any) -> bytes:
        if not isinstance(value, Mapping):
            return b""
        return b"".join(
            _len_field(field, _string(1, name) + value_codec(2, item))
            for name, item in value.items()
            if keep(name)
        )

    return codec


def _not_extension(name: str) -> bool:
    return not name.startswith("x-")


_EXTERNAL_DOCS: _Spec = {"description": (1, _string), "url": (2, _string), _EXT: (3, _string)}
_XML: _Spec = {
    "name": (1, _string),
    "namespace": (2, _string),
    "prefix": (3, _string),
    "attribute": (4, _bool),
    "wrapped": (5, _bool),
    _EXT: (6, _string),
}

_SCHEMA: _Spec = {}


def _type_item(value: Any) -> bytes:
    return _strings(1, value)


_SCHEMA_FIELD = _message(_SCHEMA)
_SCHEMA_FIELDS = _messages(_SCHEMA)
_SCHEMA_ENTRIES = _named(_SCHEMA_FIELD)


def _items_item(value: Any) -> bytes:
    schemas = value if isinstance(value, list) else [value]
    return _SCHEMA_FIELDS(1, [s for s in schemas if isinstance(s, Mapping)])


def _additional_properties_item(value: Any) -> bytes:
    if isinstance(value, bool):
        # A oneof member is written even when it holds its zero value.
        return _tag(2, _VARINT) + (b"\x01" if value else b"\x00")
    return _SCHEMA_FIELD(1, value)


def _properties(value: Any) -> bytes:
    return _SCHEMA_ENTRIES(1, value)


_SCHEMA.update(
    {
        "$ref": (1, _string),
        "format": (2, _string),
        "title": (3, _string),
        "description": (4, _string),
        "default": (5, _any),
        "multipleOf": (6, _double),
        "maximum": (7, _double),
        "exclusiveMaximum": (8, _bool),
        "minimum": (9, _double),
        "exclusiveMinimum": (10, _bool),
        "maxLength": (11, _int64),
        "minLength": (12, _int64),
        "pattern": (13, _string),
        "maxItems": (14, _int64),
        "minItems": (15, _int64),
        "uniqueItems": (16, _bool),
        "maxProperties": (17, _int64),
        "minProperties": (18, _int64),
        "required": (19, _strings),
        "enum": (20, _anys),
        "additionalProperties": (21, _message(_additional_properties_item)),
        "type": (22, _message(_type_item)),
        "items": (23, _message(_items_item)),
        "allOf": (24, _SCHEMA_FIELDS),
        "properties": (25, _message(_properties)),
        "discriminator": (26, _string),
        "readOnly": (27, _bool),
        "xml": (28, _message(_XML)),
        "externalDocs": (29, _message(_EXTERNAL_DOCS)),
        "example": (30, _any),
        _EXT: (31, _string),
    }
)

_PRIMITIVES_ITEMS: _Spec = {}
_PRIMITIVES_ITEMS.update(
    {
        "type": (1, _string),
        "format": (2, _string),
        "items": (3, _message(_PRIMITIVES_ITEMS)),
        "collectionFormat": (4, _string),
        "default": (5, _any),
        "maximum": (6, _double),
        "exclusiveMaximum": (7, _bool),
        "minimum": (8, _double),
        "exclusiveMinimum": (9, _bool),
        "maxLength": (10, _int64),
        "minLength": (11, _int64),
        "pattern": (12, _string),
        "maxItems": (13, _int64),
        "minItems": (14, _int64),
        "uniqueItems": (15, _bool),
        "enum": (16, _anys),
        "multipleOf": (17, _double),
        _EXT: (18, _string),
    }
)


def _sub_schema(allow_empty: bool) -> _Spec:
    """The fields of a non-body parameter: query and form parameters have
    `allowEmptyValue` as field 5, path and header parameters do not."""
    spec: _Spec = {
        "required": (1, _bool),
        "in": (2, _string),
        "description": (3, _string),
        "name": (4, _string),
    }
    n = 5
    if allow_empty:
        spec["allowEmptyValue"] = (n, _bool)
        n += 1
    for name, codec in (
        ("type", _string),
        ("format", _string),
        ("items", _message(_PRIMITIVES_ITEMS)),
        ("collectionFormat", _string),
        ("default", _any),
        ("maximum", _double),
        ("exclusiveMaximum", _bool),
        ("minimum", _double),
        ("exclusiveMinimum", _bool),
        ("maxLength", _int64),
        ("minLength", _int64),
        ("pattern", _string),
        ("maxItems", _int64),
        ("minItems", _int64),
        ("uniqueItems", _bool),
        ("enum", _anys),
        ("multipleOf", _double),
        (_EXT, _string),
    ):
        spec[name] = (n, codec)
        n += 1
    return spec


_QUERY = _sub_schema(allow_empty=True)  # also formData
_PATH = _sub_schema(allow_empty=False)  # also header
_NON_BODY_MEMBER = {"header": (1, _PATH), "formData": (2, _QUERY), "query": (3, _QUERY)}
_NON_BODY_MEMBER["path"] = (4, _PATH)

_BODY: _Spec = {
    "description": (1, _string),
    "name": (2, _string),
    "in": (3, _string),
    "required": (4, _bool),
    "schema": (5, _message(_SCHEMA)),
    _EXT: (6, _string),
}
_JSON_REFERENCE: _Spec = {"$ref": (1, _string), "description": (2, _string)}


def _non_body(value: Any) -> bytes:
    member = _NON_BODY_MEMBER.get(value.get("in"))
    if member is None:
        return b""
    field, spec = member
    return _len_field(field, _encode(spec, value))


def _parameter(value: Any) -> bytes:
    if value.get("in") == "body":
        return _len_field(1, _encode(_BODY, value))
    return _len_field(2, _non_body(value))


def _parameters_item(value: Any) -> bytes:
    if "$ref" in value:
        return _len_field(2, _encode(_JSON_REFERENCE, value))
    return _len_field(1, _parameter(value))


# A response header: a path parameter's fields without the leading four, then description.
_HEADER_SPEC: _Spec = {k: (n - 4, codec) for k, (n, codec) in _PATH.items() if n > 4 and k != _EXT}
_HEADER_SPEC["description"] = (18, _string)
_HEADER_SPEC[_EXT] = (19, _string)


def _schema_item(value: Any) -> bytes:
    return _len_field(1, _encode(_SCHEMA, value))


_RESPONSE: _Spec = {
    "description": (1, _string),
    "schema": (2, _message(_schema_item)),
    "headers": (3, _message(lambda v: _named(_message(_HEADER_SPEC))(1, v))),
    "examples": (4, _message(lambda v: _named(_any)(1, v))),
    _EXT: (5, _string),
}


def _response_value(value: Any) -> bytes:
    if "$ref" in value:
        return _len_field(2, _encode(_JSON_REFERENCE, value))
    return _len_field(1, _encode(_RESPONSE, value))


def _responses(value: Any) -> bytes:
    codes = _named(_message(_response_value), _not_extension)(1, value)
    return codes + _encode({_EXT: (2, _string)}, value)


def _security_requirement(value: Any) -> bytes:
    return _named(_message(lambda v: _strings(1, v)))(1, value)


_OPERATION: _Spec = {
    "tags": (1, _strings),
    "summary": (2, _string),
    "description": (3, _string),
    "externalDocs": (4, _message(_EXTERNAL_DOCS)),
    "operationId": (5, _string),
    "produces": (6, _strings),
    "consumes": (7, _strings),
    "parameters": (8, _messages(_parameters_item)),
    "responses": (9, _message(_responses)),
    "schemes": (10, _strings),
    "deprecated": (11, _bool),
    "security": (12, _messages(_security_requirement)),
    _EXT: (13, _string),
}

_PATH_ITEM: _Spec = {
    "$ref": (1, _string),
    "get": (2, _message(_OPERATION)),
    "put": (3, _message(_OPERATION)),
    "post": (4, _message(_OPERATION)),
    "delete": (5, _message(_OPERATION)),
    "options": (6, _message(_OPERATION)),
    "head": (7, _message(_OPERATION)),
    "patch": (8, _message(_OPERATION)),
    "parameters": (9, _messages(_parameters_item)),
    _EXT: (10, _string),
}

_API_KEY: _Spec = {
    "type": (1, _string),
    "name": (2, _string),
    "in": (3, _string),
    "description": (4, _string),
    _EXT: (5, _string),
}
_BASIC: _Spec = {"type": (1, _string), "description": (2, _string), _EXT: (3, _string)}


def _security_definitions_item(value: Any) -> bytes:
    kind = value.get("type")
    if kind == "apiKey":
        return _len_field(2, _encode(_API_KEY, value))
    if kind == "basic":
        return _len_field(1, _encode(_BASIC, value))
    return b""  # OAuth2 schemes are never served by Kubernetes


_CONTACT: _Spec = {"name": (1, _string), "url": (2, _string), "email": (3, _string)}
_CONTACT[_EXT] = (4, _string)
_LICENSE: _Spec = {"name": (1, _string), "url": (2, _string), _EXT: (3, _string)}
_INFO: _Spec = {
    "title": (1, _string),
    "version": (2, _string),
    "description": (3, _string),
    "termsOfService": (4, _string),
    "contact": (5, _message(_CONTACT)),
    "license": (6, _message(_LICENSE)),
    _EXT: (7, _string),
}
_TAG: _Spec = {
    "name": (1, _string),
    "description": (2, _string),
    "externalDocs": (3, _message(_EXTERNAL_DOCS)),
    _EXT: (4, _string),
}


def _paths(value: Any) -> bytes:
    return _encode({_EXT: (1, _string)}, value) + path_entries(value)


def _definitions(value: Any) -> bytes:
    return definition_entries(value)


_DOCUMENT: _Spec = {
    "swagger": (1, _string),
    "info": (2, _message(_INFO)),
    "host": (3, _string),
    "basePath": (4, _string),
    "schemes": (5, _strings),
    "consumes": (6, _strings),
    "produces": (7, _strings),
    "paths": (8, _message(_paths)),
    "definitions": (9, _message(_definitions)),
    "parameters": (10, _message(lambda v: _named(_message(_parameter))(1, v))),
    "responses": (11, _message(lambda v: _named(_message(_RESPONSE))(1, v))),
    "security": (12, _messages(_security_requirement)),
    "securityDefinitions": (
        13,
        _message(lambda v: _named(_message(_security_definitions_item))(1, v)),
    ),
    "tags": (14, _messages(_TAG)),
    "externalDocs": (15, _message(_EXTERNAL_DOCS)),
    _EXT: (16, _string),
}


_PATH_ENTRIES = _named(_message(_PATH_ITEM), _not_extension)


def path_entries(paths: Mapping[str, Any]) -> Encoded:
    """The `NamedPathItem` entries (field 2 of `Paths`) of these paths, in order. Entries
    encoded separately concatenate into one `Paths` body."""
    return Encoded(_PATH_ENTRIES(2, paths))


def definition_entries(definitions: Mapping[str, Any]) -> Encoded:
    """The `NamedSchema` entries (field 1 of `Definitions`) of these schemas, in order."""
    return Encoded(_SCHEMA_ENTRIES(1, definitions))


def document(doc: Mapping[str, Any]) -> bytes:
    """The whole `openapi.v2.Document`; `paths` and `definitions` may be given as Encoded
    entries (from `path_entries` and `definition_entries`)."""
    return _encode(_DOCUMENT, doc)
