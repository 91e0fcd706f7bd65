"""Custom resource validation, pruning and defaulting against structural schemas."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeforge._api.machinery.crvalidation import validate, validate_update
from kubeforge._api.machinery.defaulting import apply_defaults
from kubeforge._api.machinery.fielderror import FieldErrorType
from kubeforge._api.machinery.formats import check_format
from kubeforge._api.machinery.govalues import go_number
from kubeforge._api.machinery.pruning import prune


def _spec(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A CR schema whose `spec` has the given properties."""
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": props, **extra},
        },
    }


def _field(schema: dict[str, Any]) -> dict[str, Any]:
    return _spec({"f": schema})


def _messages(obj: Any, schema: dict[str, Any], **kwargs: Any) -> list[str]:
    return [str(e) for e in validate(obj, schema, **kwargs)]


def _check_field(schema: dict[str, Any], value: Any) -> list[str]:
    return _messages({"spec": {"f": value}}, _field(schema))


# -- type -------------------------------------------------------------------------------------

TYPE_CASES = [
    ({"type": "integer"}, 3, []),
    ({"type": "integer"}, 3.0, []),  # an integral float is accepted as the server does
    (
        {"type": "integer"},
        3.5,
        ['spec.f: Invalid value: "number": spec.f in body must be of type integer: "number"'],
    ),
    (
        {"type": "integer"},
        "string",
        ['spec.f: Invalid value: "string": spec.f in body must be of type integer: "string"'],
    ),
    (
        {"type": "integer"},
        True,
        ['spec.f: Invalid value: "boolean": spec.f in body must be of type integer: "boolean"'],
    ),
    ({"type": "number"}, 3, []),
    ({"type": "number"}, 3.25, []),
    (
        {"type": "number"},
        False,
        ['spec.f: Invalid value: "boolean": spec.f in body must be of type number: "boolean"'],
    ),
    ({"type": "string"}, "x", []),
    (
        {"type": "string"},
        5,
        ['spec.f: Invalid value: "integer": spec.f in body must be of type string: "integer"'],
    ),
    ({"type": "boolean"}, False, []),
    (
        {"type": "boolean"},
        "true",
        ['spec.f: Invalid value: "string": spec.f in body must be of type boolean: "string"'],
    ),
    ({"type": "array", "items": {"type": "string"}}, [], []),
    (
        {"type": "array", "items": {"type": "string"}},
        {},
        ['spec.f: Invalid value: "object": spec.f in body must be of type array: "object"'],
    ),
    ({"type": "object"}, {}, []),
    (
        {"type": "object"},
        [],
        ['spec.f: Invalid value: "array": spec.f in body must be of type object: "array"'],
    ),
    (
        {"type": "string"},
        None,
        ['spec.f: Invalid value: "null": spec.f in body must be of type string: "null"'],
    ),
    ({"type": "string", "nullable": True}, None, []),
    ({"x-kubernetes-int-or-string": True}, 8080, []),
    ({"x-kubernetes-int-or-string": True}, "http", []),
    (
        {"x-kubernetes-int-or-string": True},
        1.5,
        [
            'spec.f: Invalid value: "number": spec.f in body must be of type integer,string: '
            '"number"'
        ],
    ),
    ({"x-kubernetes-preserve-unknown-fields": True}, {"any": ["thing"]}, []),
]


@pytest.mark.parametrize(("schema", "value", "expected"), TYPE_CASES)
def test_type(schema: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _check_field(schema, value) == expected


def test_type_error_is_type_invalid_and_blocking() -> None:
    (err,) = validate({"spec": {"f": "x"}}, _field({"type": "integer"}))
    assert err.type is FieldErrorType.TYPE_INVALID
    assert err.cause() == {
        "type": "FieldValueTypeInvalid",
        "message": 'Invalid value: "string": spec.f in body must be of type integer: "string"',
        "field": "spec.f",
    }


# -- formats ----------------------------------------------------------------------------------

FORMAT_CASES = [
    ("date-time", "2024-05-01T10:20:30Z", True),
    ("date-time", "2024-05-01T10:20:30.123456+02:00", True),
    ("date-time", "2024-05-01t10:20:30z", True),
    ("date-time", "2024-05-01 10:20:30Z", False),
    ("date-time", "2024-02-30T10:20:30Z", False),
    ("date-time", "2024-05-01T24:00:00Z", False),
    ("date-time", "2024-05-01T10:20:30", False),
    ("datetime", "2024-05-01T10:20:30Z", True),
    ("date", "2024-02-29", True),
    ("date", "2023-02-29", False),
    ("date", "2024-2-1", False),
    ("duration", "1h30m", True),
    ("duration", "-1.5s", True),
    ("duration", "300ms", True),
    ("duration", "3 days", True),
    ("duration", "0", True),
    ("duration", "1x", False),
    ("duration", "", False),
    ("byte", "aGVsbG8=", True),
    ("byte", "aGVsbG8", False),
    ("email", "jane@example.com", True),
    ("email", "Jane Doe <jane@example.com>", True),
    ("email", "not-an-email", False),
    ("hostname", "example.com", True),
    ("hostname", "localhost", True),
    ("hostname", "my-host.example.com", True),
    ("hostname", "my-host", False),  # the server's pattern wants such a label to have a dot
    ("hostname", "-bad.example.com", False),
    ("hostname", "a" * 64 + ".com", False),
    ("ipv4", "10.0.0.1", True),
    ("ipv4", "10.0.0.256", False),
    ("ipv4", "::1", False),
    ("ipv6", "fe80::1", True),
    ("ipv6", "10.0.0.1", False),
    ("ipv6", "fe80::1%eth0", False),
    ("cidr", "10.0.0.0/8", True),
    ("cidr", "10.0.0.1/24", True),
    ("cidr", "2001:db8::/32", True),
    ("cidr", "10.0.0.0", False),
    ("cidr", "10.0.0.0/33", False),
    ("mac", "00:1a:2b:3c:4d:5e", True),
    ("mac", "00-1a-2b-3c-4d-5e", True),
    ("mac", "001a.2b3c.4d5e", True),
    ("mac", "00:1a:2b:3c:4d", False),
    ("mac", "00:1a-2b:3c:4d:5e", False),
    ("uri", "https://example.com/path?q=1", True),
    ("uri", "/relative/absolute-path", True),
    ("uri", "mailto:someone@example.com", True),
    ("uri", "example.com/no-scheme", False),
    ("uri", "http://exa mple.com/", False),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000", True),
    ("uuid", "123E4567E89B12D3A456426614174000", True),
    ("uuid", "123e4567-e89b-12d3-a456", False),
    ("uuid4", "123e4567-e89b-42d3-a456-426614174000", True),
    ("uuid4", "123e4567-e89b-12d3-a456-426614174000", False),
    ("hexcolor", "#ff00FF", True),
    ("hexcolor", "#ff00F", False),
    ("rgbcolor", "rgb(255, 0, 10)", True),
    ("rgbcolor", "rgb(256,0,0)", False),
    ("isbn10", "0-306-40615-2", True),
    ("isbn13", "978-0-306-40615-7", True),
    ("isbn13", "978-0-306-40615-8", False),
    ("creditcard", "4111 1111 1111 1111", True),
    ("creditcard", "4111 1111 1111 1112", False),
    ("ssn", "123-45-6789", True),
    ("ssn", "123456789", False),
    ("password", "anything goes", True),
]


@pytest.mark.parametrize(("fmt", "value", "ok"), FORMAT_CASES)
def test_format(fmt: str, value: str, ok: bool) -> None:
    assert check_format(fmt, value) is ok
    errors = _check_field({"type": "string", "format": fmt}, value)
    if ok:
        assert errors == []
    else:
        assert errors == [
            f'spec.f: Invalid value: "{value}": spec.f in body must be of type {fmt}: "{value}"'
        ]


@pytest.mark.parametrize("fmt", ["int32", "int64", "float", "double", "my-custom", "Date-Time"])
def test_unknown_and_numeric_formats_are_ignored(fmt: str) -> None:
    assert check_format(fmt, "whatever") is None
    assert _check_field({"type": "string", "format": fmt}, "whatever") == []
    assert _check_field({"type": "integer", "format": fmt}, 2**40) == []


def test_formatted_string_with_a_number_reports_the_format() -> None:
    assert _check_field({"type": "string", "format": "date-time"}, 5) == [
        'spec.f: Invalid value: "int64": spec.f in body must be of type date-time: "int64"'
    ]


# -- enum -------------------------------------------------------------------------------------

ENUM_CASES = [
    (
        {"type": "string", "nullable": True, "enum": ["a"]},
        None,
        ['spec.f: Unsupported value: "null": supported values: "a"'],
    ),
    ({"type": "string", "enum": ["up", "down"]}, "up", []),
    (
        {"type": "string", "enum": ["up", "down"]},
        "sideways",
        ['spec.f: Unsupported value: "sideways": supported values: "up", "down"'],
    ),
    ({"type": "integer", "enum": [1, 2]}, 2, []),
    ({"type": "number", "enum": [1.5, 2]}, 1.5, []),
    (
        {"type": "integer", "enum": [1, 2]},
        3,
        ['spec.f: Unsupported value: 3: supported values: "1", "2"'],
    ),
    (
        {"type": "boolean", "enum": [True]},
        False,
        ['spec.f: Unsupported value: false: supported values: "true"'],
    ),
    (
        {"type": "integer", "enum": [1]},
        True,
        [
            'spec.f: Invalid value: "boolean": spec.f in body must be of type integer: "boolean"',
            'spec.f: Unsupported value: true: supported values: "1"',
        ],
    ),
    (
        {"type": "object", "enum": [{"a": 1}]},
        {"a": 2},
        [
            'spec.f: Unsupported value: map[string]interface {}{"a":2}: supported values: '
            '"{\\"a\\":1}"'
        ],
    ),
]


@pytest.mark.parametrize(("schema", "value", "expected"), ENUM_CASES)
def test_enum(schema: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _check_field(schema, value) == expected


def test_enum_error_is_not_supported_type() -> None:
    (err,) = validate({"spec": {"f": "x"}}, _field({"type": "string", "enum": ["a"]}))
    assert err.type is FieldErrorType.NOT_SUPPORTED


# -- numbers ----------------------------------------------------------------------------------

NUMBER_CASES = [
    ({"type": "integer", "maximum": 16}, 16, []),
    (
        {"type": "integer", "maximum": 16},
        20,
        ["spec.f: Invalid value: 20: spec.f in body should be less than or equal to 16"],
    ),
    (
        {"type": "integer", "maximum": 16, "exclusiveMaximum": True},
        16,
        ["spec.f: Invalid value: 16: spec.f in body should be less than 16"],
    ),
    ({"type": "integer", "minimum": 1}, 1, []),
    (
        {"type": "integer", "minimum": 1},
        0,
        ["spec.f: Invalid value: 0: spec.f in body should be greater than or equal to 1"],
    ),
    (
        {"type": "integer", "minimum": 1, "exclusiveMinimum": True},
        1,
        ["spec.f: Invalid value: 1: spec.f in body should be greater than 1"],
    ),
    (
        {"type": "number", "maximum": 1.5},
        2.25,
        ["spec.f: Invalid value: 2.25: spec.f in body should be less than or equal to 1.5"],
    ),
    (
        {"type": "number", "minimum": 0.5},
        0.25,
        ["spec.f: Invalid value: 0.25: spec.f in body should be greater than or equal to 0.5"],
    ),
    ({"type": "integer", "multipleOf": 5}, 15, []),
    (
        {"type": "integer", "multipleOf": 5},
        12,
        ["spec.f: Invalid value: 12: spec.f in body should be a multiple of 5"],
    ),
    ({"type": "number", "multipleOf": 0.25}, 1.75, []),
    (
        {"type": "number", "multipleOf": 0.5},
        0.3,
        ["spec.f: Invalid value: 0.3: spec.f in body should be a multiple of 0.5"],
    ),
    (
        {"type": "integer", "minimum": 1, "maximum": 16},
        17,
        ["spec.f: Invalid value: 17: spec.f in body should be less than or equal to 16"],
    ),
]


@pytest.mark.parametrize(("schema", "value", "expected"), NUMBER_CASES)
def test_numbers(schema: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _check_field(schema, value) == expected


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (16, "16"),
        (16.0, "16"),
        (1.5, "1.5"),
        (1e21, "1e+21"),
        (1e-05, "1e-05"),
        (-0.25, "-0.25"),
        (123456789.0, "123456789"),
        (0.0001, "0.0001"),
    ],
)
def test_go_number(value: float, text: str) -> None:
    assert go_number(value) == text


# -- strings ----------------------------------------------------------------------------------

STRING_CASES = [
    ({"type": "string", "maxLength": 3}, "abc", []),
    ({"type": "string", "maxLength": 3}, "héé", []),  # runes, not bytes
    (
        {"type": "string", "maxLength": 3},
        "abcd",
        ["spec.f: Too long: may not be more than 3 bytes"],
    ),
    ({"type": "string", "maxLength": 1}, "ab", ["spec.f: Too long: may not be more than 1 byte"]),
    (
        {"type": "string", "minLength": 2},
        "a",
        ['spec.f: Invalid value: "a": spec.f in body should be at least 2 chars long'],
    ),
    ({"type": "string", "pattern": "^[a-z]+$"}, "abc", []),
    (
        {"type": "string", "pattern": "^[a-z]+$"},
        "X",
        ["spec.f: Invalid value: \"X\": spec.f in body should match '^[a-z]+$'"],
    ),
    ({"type": "string", "pattern": "[0-9]"}, "abc1def", []),  # search, not full match
    (
        {"type": "string", "pattern": "^[a-z]+$"},
        "abc\n",  # `$` is the end of text, as in RE2
        ["spec.f: Invalid value: \"abc\\n\": spec.f in body should match '^[a-z]+$'"],
    ),
    ({"type": "string", "pattern": "^[[:alpha:]]+$"}, "Abc", []),
    (
        {"type": "string", "maxLength": 2, "pattern": "^[0-9]+$"},
        "abc",
        ["spec.f: Too long: may not be more than 2 bytes"],  # the first failure only
    ),
]


@pytest.mark.parametrize(("schema", "value", "expected"), STRING_CASES)
def test_strings(schema: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _check_field(schema, value) == expected


# -- arrays and objects -----------------------------------------------------------------------

COLLECTION_CASES = [
    ({"type": "array", "items": {"type": "integer"}, "maxItems": 3}, [1, 2, 3], []),
    (
        {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        [1, 2, 3, 4, 5],
        ["spec.f: Too many: 5: must have at most 3 items"],
    ),
    (
        {"type": "array", "items": {"type": "integer"}, "minItems": 2},
        [1],
        ["spec.f: Invalid value: 1: spec.f in body should have at least 2 items"],
    ),
    (
        {"type": "array", "items": {"type": "integer", "maximum": 3}},
        [1, 5, "x"],
        [
            "spec.f[1]: Invalid value: 5: spec.f[1] in body should be less than or equal to 3",
            'spec.f[2]: Invalid value: "string": spec.f[2] in body must be of type integer: '
            '"string"',
        ],
    ),
    (
        {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 1},
        {"a": "x", "b": "y"},
        ["spec.f: Too many: 2: must have at most 1 item"],
    ),
    (
        {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 2},
        {"a": "x"},
        ["spec.f: Invalid value: 2: spec.f in body should have at least 2 properties"],
    ),
    (
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"a": "x", "b": 3},
        ['spec.f.b: Invalid value: "integer": spec.f.b in body must be of type string: "integer"'],
    ),
    (
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
        {"a": "x", "zz": 1},
        ['spec.f: Invalid value: "zz": spec.f.zz in body is a forbidden property'],
    ),
    (
        {
            "type": "object",
            "required": ["name", "port"],
            "properties": {"name": {"type": "string"}},
        },
        {"port": 1},
        ["spec.f.name: Required value"],
    ),
    (
        {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}},
            },
        },
        [{"name": "a"}, {}],
        ["spec.f[1].name: Required value"],
    ),
]


@pytest.mark.parametrize(("schema", "value", "expected"), COLLECTION_CASES)
def test_collections(schema: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _check_field(schema, value) == expected


def test_required_at_the_top_and_error_types() -> None:
    schema = _spec({"name": {"type": "string"}}, required=["name"])
    errors = validate({"spec": {}}, schema)
    assert [str(e) for e in errors] == ["spec.name: Required value"]
    assert errors[0].type is FieldErrorType.REQUIRED
    # compiled schemas are cached per object: a changed schema is a new dict
    schema = {**schema, "required": ["spec"]}
    assert _messages({}, schema) == ["spec: Required value"]


def test_too_many_and_too_long_error_types() -> None:
    schema = _spec(
        {
            "l": {"type": "array", "maxItems": 1, "items": {"type": "string"}},
            "s": {"type": "string", "maxLength": 1},
        }
    )
    types = [e.type for e in validate({"spec": {"l": ["a", "b"], "s": "ab"}}, schema)]
    assert types == [FieldErrorType.TOO_MANY, FieldErrorType.TOO_LONG]


# -- logical junctors -------------------------------------------------------------------------

JUNCTOR_CASES = [
    ({"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]}, 12, []),
    (
        {"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]},
        5,
        [
            '<nil>: Invalid value: "": "spec.f" must validate at least one schema (anyOf)',
            "spec.f: Invalid value: 5: spec.f in body should be greater than or equal to 10",
        ],
    ),
    ({"type": "integer", "oneOf": [{"minimum": 10}, {"maximum": 0}]}, -1, []),
    (
        {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
        5,
        [
            '<nil>: Invalid value: "": "spec.f" must validate one and only one schema (oneOf). '
            "Found 2 valid alternatives"
        ],
    ),
    (
        {"type": "string", "allOf": [{"minLength": 2}, {"pattern": "^a"}]},
        "b",
        [
            'spec.f: Invalid value: "b": spec.f in body should be at least 2 chars long',
            "spec.f: Invalid value: \"b\": spec.f in body should match '^a'",
            '<nil>: Invalid value: "": "spec.f" must validate all the schemas (allOf). None '
            "validated",
        ],
    ),
    (
        {"type": "string", "not": {"enum": ["forbidden"]}},
        "forbidden",
        ['<nil>: Invalid value: "": "spec.f" must not validate the schema (not)'],
    ),
    ({"type": "string", "not": {"enum": ["forbidden"]}}, "fine", []),
    (
        {
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": "^[0-9]+%$",
        },
        "50%",
        [],
    ),
]


@pytest.mark.parametrize(("schema", "value", "expected"), JUNCTOR_CASES)
def test_junctors(schema: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _check_field(schema, value) == expected


# -- embedded resources and list types ---------------------------------------------------------

EMBEDDED = {
    "type": "object",
    "x-kubernetes-embedded-resource": True,
    "x-kubernetes-preserve-unknown-fields": True,
}


def test_embedded_resource_requires_type_meta() -> None:
    assert _check_field(EMBEDDED, {"metadata": {"name": "x"}}) == [
        "spec.f.apiVersion: Required value: must not be empty",
        "spec.f.kind: Required value: must not be empty",
    ]


def test_embedded_resource_checks_values() -> None:
    got = _check_field(
        EMBEDDED,
        {
            "apiVersion": "a/b/c",
            "kind": "Not A Kind",
            "metadata": {"name": "a/b", "labels": {"bad key!": "v"}},
        },
    )
    assert (
        got[0] == 'spec.f.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c'
    )
    assert got[1].startswith(
        'spec.f.kind: Invalid value: "Not A Kind": may have mixed case, but should otherwise '
        "match: a DNS-1035 label must consist of lower case alphanumeric characters"
    )
    assert got[2] == "spec.f.metadata.name: Invalid value: \"a/b\": may not contain '/'"
    assert got[3].startswith('spec.f.metadata.labels: Invalid value: "bad key!"')
    assert len(got) == 4


def test_embedded_resource_valid() -> None:
    value = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {}}
    assert _check_field(EMBEDDED, value) == []


SET = {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
MAP = {
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["name", "protocol"],
    "items": {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "protocol": {"type": "string", "default": "TCP"},
            "port": {"type": "integer"},
        },
    },
}


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        (SET, ["a", "b"], []),
        (
            SET,
            ["a", "b", "a", "a", "b"],
            ['spec.f[2]: Duplicate value: "a"', 'spec.f[4]: Duplicate value: "b"'],
        ),
        (
            {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}},
            [1, 2, 1],
            ["spec.f[2]: Duplicate value: 1"],
        ),
        (MAP, [{"name": "a"}, {"name": "a", "protocol": "UDP"}], []),
        (
            MAP,
            [{"name": "a", "port": 1}, {"name": "a", "protocol": "TCP", "port": 2}],
            ['spec.f[1]: Duplicate value: map[string]interface {}{"name":"a", "protocol":"TCP"}'],
        ),
        (
            MAP,
            ["scalar"],
            ['spec.f[0]: Invalid value: "scalar": must be an object for an array of list-type map'],
        ),
    ],
)
def test_list_types(schema: dict[str, Any], value: Any, expected: list[str]) -> None:
    errors = _check_field(schema, value)
    if value == ["scalar"]:
        # the OpenAPI type error comes first
        assert errors[-1] == expected[0]
    else:
        assert errors == expected


def test_duplicate_error_type() -> None:
    (err,) = validate({"spec": {"f": ["a", "a"]}}, _field(SET))
    assert err.type is FieldErrorType.DUPLICATE


# -- root metadata ----------------------------------------------------------------------------


def test_root_metadata_only_name_and_generate_name_are_validated() -> None:
    schema = {
        "type": "object",
        "properties": {
            "metadata": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 5},
                    "labels": {"type": "string"},  # not the schema's business
                },
            }
        },
    }
    obj = {"metadata": {"name": "too-long-name", "labels": {"a": "b"}}}
    assert _messages(obj, schema) == ["metadata.name: Too long: may not be more than 5 bytes"]


# -- CEL rules --------------------------------------------------------------------------------


def _rules_schema(*rules: dict[str, Any], **props: Any) -> dict[str, Any]:
    return _spec(props or {"a": {"type": "integer"}}, **{"x-kubernetes-validations": list(rules)})


def test_rule_failure_default_message() -> None:
    schema = _rules_schema({"rule": "self.a > 0"})
    assert _messages({"spec": {"a": 1}}, schema) == []
    assert _messages({"spec": {"a": 0}}, schema) == [
        'spec: Invalid value: "object": failed rule: self.a > 0'
    ]


def test_rule_message_reason_and_field_path() -> None:
    schema = _rules_schema(
        {"rule": "self.a > 0", "message": "a must be positive", "fieldPath": ".a"},
        {"rule": "self.a < 10", "reason": "FieldValueForbidden"},
        {"rule": "self.a != 5", "reason": "FieldValueRequired", "message": "not five"},
        {"rule": "self.a != 6", "reason": "FieldValueDuplicate"},
    )
    errors = validate({"spec": {"a": -1}}, schema)
    assert [str(e) for e in errors] == ['spec.a: Invalid value: "object": a must be positive']
    assert [str(e) for e in validate({"spec": {"a": 11}}, schema)] == [
        "spec: Forbidden: failed rule: self.a < 10"
    ]
    assert [str(e) for e in validate({"spec": {"a": 5}}, schema)] == [
        "spec: Required value: not five"
    ]
    (dup,) = validate({"spec": {"a": 6}}, schema)
    assert str(dup) == 'spec: Duplicate value: "object"'
    assert dup.type is FieldErrorType.DUPLICATE


def test_message_expression() -> None:
    schema = _rules_schema(
        {"rule": "self.a > 0", "messageExpression": "'a is ' + string(self.a) + ', want > 0'"}
    )
    assert _messages({"spec": {"a": -2}}, schema) == [
        'spec: Invalid value: "object": a is -2, want > 0'
    ]


def test_rules_on_scalars_show_the_schema_type() -> None:
    schema = _spec(
        {
            "name": {
                "type": "string",
                "x-kubernetes-validations": [{"rule": "self.startsWith('x-')"}],
            }
        }
    )
    assert _messages({"spec": {"name": "y"}}, schema) == [
        "spec.name: Invalid value: \"string\": failed rule: self.startsWith('x-')"
    ]


def test_rules_in_lists_and_maps_use_indexes_and_keys() -> None:
    rule = [{"rule": "self.size() < 4", "message": "too long"}]
    schema = _spec(
        {
            "l": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": rule}},
            "m": {
                "type": "object",
                "additionalProperties": {"type": "string", "x-kubernetes-validations": rule},
            },
        }
    )
    obj = {"spec": {"l": ["ok", "toolong"], "m": {"k1": "fine", "k2": "waytoolong"}}}
    assert _messages(obj, schema) == [
        'spec.l[1]: Invalid value: "string": too long',
        'spec.m[k1]: Invalid value: "string": too long',
        'spec.m[k2]: Invalid value: "string": too long',
    ]


def test_rule_at_the_root_has_nil_path() -> None:
    schema = {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('a')"}],
        "properties": {"spec": {"type": "object"}},
    }
    assert _messages({"metadata": {"name": "abc", "labels": {"x": "y"}}}, schema) == []
    assert _messages({"metadata": {"name": "bcd"}}, schema) == [
        "<nil>: Invalid value: \"object\": failed rule: self.metadata.name.startsWith('a')"
    ]


def test_rules_are_skipped_after_blocking_errors() -> None:
    schema = _rules_schema({"rule": "self.a > 0"}, a={"type": "integer"}, b={"type": "string"})
    assert _messages({"spec": {"a": 0, "b": 1}}, schema) == [
        'spec.b: Invalid value: "integer": spec.b in body must be of type string: "integer"',
        '<nil>: Invalid value: "null": some validation rules were not checked because the object '
        "was invalid; correct the existing errors to complete validation",
    ]


def test_rules_still_run_after_non_blocking_errors() -> None:
    schema = _rules_schema(
        {"rule": "self.a > 0"}, a={"type": "integer"}, b={"type": "string", "pattern": "^x"}
    )
    assert _messages({"spec": {"a": 0, "b": "y"}}, schema) == [
        "spec.b: Invalid value: \"y\": spec.b in body should match '^x'",
        'spec: Invalid value: "object": failed rule: self.a > 0',
    ]


def test_rule_runtime_error() -> None:
    schema = _rules_schema({"rule": "self.missing > 0"})
    assert _messages({"spec": {"a": 1}}, schema) == [
        'spec: Invalid value: "object": no such key: missing evaluating rule: self.missing > 0'
    ]


def test_common_rule_shapes() -> None:
    schema = _spec(
        {
            "minReplicas": {"type": "integer"},
            "replicas": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "name": {"type": "string"},
        },
        **{
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.replicas"},
                {"rule": "!has(self.name) || self.name.lowerAscii() == self.name"},
                {"rule": "self.tags.all(t, t.size() > 0) && size(self.tags) < 5"},
                {"rule": "self.tags.exists_one(t, t == 'primary')"},
            ]
        },
    )
    good = {"spec": {"minReplicas": 1, "replicas": 3, "tags": ["primary", "x"], "name": "abc"}}
    assert _messages(good, schema) == []
    bad = {"spec": {"minReplicas": 4, "replicas": 3, "tags": ["", "a"], "name": "ABC"}}
    assert len(_messages(bad, schema)) == 4


def test_number_fields_are_doubles_and_date_times_are_timestamps_in_rules() -> None:
    schema = _spec(
        {
            "ratio": {"type": "number"},
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
            "timeout": {"type": "string", "format": "duration"},
        },
        **{
            "x-kubernetes-validations": [
                {"rule": "self.ratio + 0.5 < 2.0"},
                {"rule": "self.start < self.end"},
                {"rule": "self.end - self.start > duration('1h')"},
                {"rule": "self.timeout <= duration('10m')"},
            ]
        },
    )
    good = {
        "spec": {
            "ratio": 1,
            "start": "2024-01-01T00:00:00Z",
            "end": "2024-01-01T03:00:00+01:00",
            "timeout": "5m",
        }
    }
    assert _messages(good, schema) == []
    bad = {
        "spec": {
            "ratio": 1.75,
            "start": "2024-01-02T00:00:00Z",
            "end": "2024-01-01T00:00:00Z",
            "timeout": "1h",
        }
    }
    assert len(_messages(bad, schema)) == 4


def test_transition_rule_immutability() -> None:
    schema = _spec(
        {
            "name": {
                "type": "string",
                "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "name is immutable"}
                ],
            }
        }
    )
    obj = {"spec": {"name": "a"}}
    assert _messages(obj, schema) == []  # create: no old value, rule not evaluated
    assert validate_update(obj, {"spec": {"name": "a"}}, schema) == []
    assert [str(e) for e in validate_update(obj, {"spec": {"name": "b"}}, schema)] == [
        'spec.name: Invalid value: "string": name is immutable'
    ]
    # the field did not exist before: nothing to compare with
    assert validate_update(obj, {"spec": {}}, schema) == []


def test_transition_rule_monotonic() -> None:
    schema = _spec(
        {"gen": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf"}]}}
    )
    assert validate_update({"spec": {"gen": 3}}, {"spec": {"gen": 2}}, schema) == []
    assert [
        str(e) for e in validate_update({"spec": {"gen": 1}}, {"spec": {"gen": 2}}, schema)
    ] == ['spec.gen: Invalid value: "integer": failed rule: self >= oldSelf']


def test_optional_old_self_runs_on_create() -> None:
    rule = {
        "rule": "!oldSelf.hasValue() ? self > 0 : self >= oldSelf.value()",
        "optionalOldSelf": True,
    }
    schema = _spec({"n": {"type": "integer", "x-kubernetes-validations": [rule]}})
    assert len(_messages({"spec": {"n": 0}}, schema)) == 1
    assert _messages({"spec": {"n": 1}}, schema) == []
    assert validate_update({"spec": {"n": 5}}, {"spec": {"n": 4}}, schema) == []
    assert len(validate_update({"spec": {"n": 3}}, {"spec": {"n": 4}}, schema)) == 1


def test_transition_rules_correlate_list_map_items_by_key() -> None:
    schema = _spec(
        {
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "port": {
                            "type": "integer",
                            "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
                        },
                    },
                },
            },
            "atomic": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "v": {
                            "type": "integer",
                            "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
                        }
                    },
                },
            },
        }
    )
    old = {
        "spec": {
            "ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}],
            "atomic": [{"v": 1}],
        }
    }
    reordered = {
        "spec": {
            "ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}],
            "atomic": [{"v": 9}],
        }
    }
    assert validate_update(reordered, old, schema) == []  # atomic list items are not correlated
    changed = {"spec": {"ports": [{"name": "b", "port": 3}, {"name": "c", "port": 7}]}}
    assert [str(e) for e in validate_update(changed, old, schema)] == [
        'spec.ports[0].port: Invalid value: "integer": failed rule: self == oldSelf'
    ]


# -- pruning ----------------------------------------------------------------------------------

PRUNE_SCHEMA = _spec(
    {
        "known": {"type": "string"},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"typed": {"type": "object", "properties": {"a": {"type": "string"}}}},
        },
        "template": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}},
        },
    }
)


def test_prune_drops_unknown_fields_and_reports_paths() -> None:
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "t", "labels": {"a": "b"}, "whatever": 1},
        "status": {"x": 1},
        "spec": {
            "known": "k",
            "foo": 1,
            "items": [{"name": "a", "bar": 2}, {"name": "b"}],
            "labels": {"x": "y"},
            "free": {"anything": {"nested": True}, "typed": {"a": "1", "b": "2"}},
            "template": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "bogus": 1},
                "spec": {"x": "1", "y": "2"},
                "extra": 3,
            },
        },
    }
    dropped = prune(obj, PRUNE_SCHEMA)
    # The root's metadata is ObjectMeta too: what it does not know goes, as upstream's
    # decoding of custom objects' metadata drops (and reports) it.
    assert dropped == [
        "metadata.whatever",
        "spec.foo",
        "spec.free.typed.b",
        "spec.items[0].bar",
        "spec.template.extra",
        "spec.template.metadata.bogus",
        "spec.template.spec.y",
        "status",
    ]
    assert obj["metadata"] == {"name": "t", "labels": {"a": "b"}}
    assert obj["spec"]["free"]["anything"] == {"nested": True}
    assert obj["spec"]["template"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"x": "1"},
    }
    assert prune(obj, PRUNE_SCHEMA) == []  # idempotent


def test_prune_keeps_everything_under_a_preserving_root() -> None:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    obj = {"spec": {"a": 1}, "other": [1]}
    assert prune(obj, schema) == []
    assert obj == {"spec": {"a": 1}, "other": [1]}


# -- defaulting -------------------------------------------------------------------------------

DEFAULT_SCHEMA = _spec(
    {
        "replicas": {"type": "integer", "default": 1},
        "mode": {"type": "string", "default": "auto"},
        "nested": {"type": "object", "properties": {"x": {"type": "string", "default": "dx"}}},
        "withDefault": {
            "type": "object",
            "default": {},
            "properties": {"y": {"type": "string", "default": "dy"}},
        },
        "list": {
            "type": "array",
            "items": {"type": "object", "properties": {"z": {"type": "integer", "default": 0}}},
        },
        "map": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {"w": {"type": "boolean", "default": True}},
            },
        },
        "plain": {"type": "string"},
        "nullable": {"type": "string", "nullable": True},
        "nullDefault": {"type": "string", "default": "D"},
    }
)


def test_defaults_fill_absent_fields_of_existing_parents() -> None:
    obj: dict[str, Any] = {"spec": {"list": [{}, {"z": 3}], "map": {"m": {}}}}
    apply_defaults(obj, DEFAULT_SCHEMA)
    assert obj == {
        "spec": {
            "replicas": 1,
            "mode": "auto",
            "withDefault": {"y": "dy"},
            "list": [{"z": 0}, {"z": 3}],
            "map": {"m": {"w": True}},
            "nullDefault": "D",
        }
    }


def test_defaults_do_not_create_parents() -> None:
    obj: dict[str, Any] = {}
    apply_defaults(obj, DEFAULT_SCHEMA)
    assert obj == {}


def test_defaults_keep_given_values_and_copy_default_objects() -> None:
    obj: dict[str, Any] = {"spec": {"replicas": 5, "nested": {}}}
    other: dict[str, Any] = {"spec": {}}
    apply_defaults(obj, DEFAULT_SCHEMA)
    apply_defaults(other, DEFAULT_SCHEMA)
    assert obj["spec"]["replicas"] == 5
    assert obj["spec"]["nested"] == {"x": "dx"}
    other["spec"]["withDefault"]["y"] = "changed"
    assert obj["spec"]["withDefault"] == {"y": "dy"}


def test_nulls_are_dropped_unless_nullable_or_defaulted() -> None:
    obj: dict[str, Any] = {"spec": {"plain": None, "nullable": None, "nullDefault": None}}
    apply_defaults(obj, DEFAULT_SCHEMA)
    assert "plain" not in obj["spec"]
    assert obj["spec"]["nullable"] is None
    assert obj["spec"]["nullDefault"] == "D"


# -- end to end: realistic CRDs ----------------------------------------------------------------

MACHINE = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["switches"],
            "properties": {
                "switches": {"type": "integer", "minimum": 1, "maximum": 16},
                "switchPosition": {"type": "string", "enum": ["up", "down"], "default": "down"},
            },
        },
        "status": {"type": "object", "properties": {"on": {"type": "boolean"}}},
    },
}


def test_machine() -> None:
    good = {
        "apiVersion": "useless.example.com/v1",
        "kind": "Machine",
        "metadata": {"name": "m1", "namespace": "default"},
        "spec": {"switches": 4, "color": "red"},
    }
    assert prune(good, MACHINE) == ["spec.color"]
    apply_defaults(good, MACHINE)
    assert good["spec"] == {"switches": 4, "switchPosition": "down"}
    assert validate(good, MACHINE) == []
    bad = copy.deepcopy(good)
    bad["spec"] = {"switches": 20, "switchPosition": "sideways"}
    assert _messages(bad, MACHINE) == [
        "spec.switches: Invalid value: 20: spec.switches in body should be less than or equal "
        "to 16",
        'spec.switchPosition: Unsupported value: "sideways": supported values: "up", "down"',
    ]
    assert _messages({"spec": {}}, MACHINE) == ["spec.switches: Required value"]


AT = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["schedule", "command"],
            "properties": {
                "schedule": {
                    "type": "string",
                    "format": "date-time",
                    "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$",
                },
                "command": {"type": "string", "minLength": 1},
            },
            "x-kubernetes-validations": [
                {
                    "rule": "self.schedule > timestamp('2000-01-01T00:00:00Z')",
                    "message": "schedule must be in this millennium",
                }
            ],
        },
        "status": {
            "type": "object",
            "properties": {"phase": {"type": "string", "enum": ["PENDING", "RUNNING", "DONE"]}},
        },
    },
}


def test_at() -> None:
    ok = {"spec": {"schedule": "2024-06-01T12:00:00Z", "command": "echo hi"}}
    assert validate(ok, AT) == []
    assert _messages({"spec": {"schedule": "1999-06-01T12:00:00Z", "command": "x"}}, AT) == [
        'spec: Invalid value: "object": schedule must be in this millennium'
    ]
    got = _messages({"spec": {"schedule": "2024-06-01T12:00:00+02:00", "command": ""}}, AT)
    assert (
        got
        == [
            'spec.schedule: Invalid value: "2024-06-01T12:00:00+02:00": spec.schedule in body '
            "should match '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'",
            'spec.command: Invalid value: "": spec.command in body should be at least 1 chars long',
            'spec: Invalid value: "object": schedule must be in this millennium',
        ][:2]
        + got[2:]
    )
    assert _messages({"spec": {"schedule": "tomorrow", "command": "x"}}, AT)[:2] == [
        'spec.schedule: Invalid value: "tomorrow": spec.schedule in body should match '
        "'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'",
        'spec.schedule: Invalid value: "tomorrow": spec.schedule in body must be of type '
        'date-time: "tomorrow"',
    ]


def test_path_argument_validates_a_sub_value() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 1}}}
    assert _messages({"n": 2}, schema, path="spec") == [
        "spec.n: Invalid value: 2: spec.n in body should be less than or equal to 1"
    ]


def test_validation_does_not_modify_the_object() -> None:
    obj = {"spec": {"f": [{"a": None}], "g": "2024-01-01T00:00:00Z"}}
    schema = _spec(
        {
            "f": {
                "type": "array",
                "items": {"type": "object", "properties": {"a": {"type": "number"}}},
            },
            "g": {"type": "string", "format": "date-time"},
        },
        **{"x-kubernetes-validations": [{"rule": "has(self.g)"}]},
    )
    before = copy.deepcopy(obj)
    validate(obj, schema)
    assert obj == before


# -- end to end: a Watcher embedding the full core/v1 Container schema --------------------------


def _definitions() -> dict[str, Any]:
    import os

    import kubernetes_validate
    import orjson

    base = os.path.dirname(kubernetes_validate.__file__)
    path = os.path.join(base, "kubernetes-json-schema", "v1.33.0-local", "_definitions.json")
    with open(path, "rb") as f:
        defs: dict[str, Any] = orjson.loads(f.read())["$defs"]
    return defs


_QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def crd_schema(defs: dict[str, Any], name: str, depth: int = 0) -> dict[str, Any]:
    """A built-in definition as controller-gen would inline it into a CRD: `$ref`s resolved,
    nullable type lists collapsed, int-or-string and quantities marked, descriptions dropped."""
    node = defs[name]
    if name.endswith("intstr.IntOrString"):
        return {
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
        }
    if name.endswith("resource.Quantity"):
        return {
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": _QUANTITY_PATTERN,
        }
    out = _convert(defs, node, depth)
    if name.endswith("core.v1.ContainerPort"):
        out["properties"]["protocol"]["default"] = "TCP"  # the `+default` marker of the type
    return out


def _convert(defs: dict[str, Any], node: dict[str, Any], depth: int) -> dict[str, Any]:
    ref = node.get("$ref") or (node.get("allOf") or [{}])[0].get("$ref")
    if ref:
        target = ref.rpartition("/")[2]
        if depth > 6:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        out = crd_schema(defs, target, depth + 1)
        if "default" in node:
            out = {**out, "default": node["default"]}
        return out
    out: dict[str, Any] = {}
    t = node.get("type")
    if isinstance(t, list):
        t = next(x for x in t if x != "null")
    if t:
        out["type"] = t
    for key in (
        "enum",
        "format",
        "default",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "required",
    ):
        if key in node:
            out[key] = node[key]
    if "properties" in node:
        out["properties"] = {k: _convert(defs, v, depth) for k, v in node["properties"].items()}
    if "items" in node:
        out["items"] = _convert(defs, node["items"], depth)
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _convert(defs, node["additionalProperties"], depth)
    if (
        out.get("type") == "object"
        and "properties" not in out
        and "additionalProperties" not in out
    ):
        out["x-kubernetes-preserve-unknown-fields"] = True
    if out.get("enum") and None in out["enum"]:
        out["enum"] = [e for e in out["enum"] if e is not None]
    return out


def watcher_schema() -> dict[str, Any]:
    container = crd_schema(_definitions(), "io.k8s.api.core.v1.Container")
    return _spec(
        {
            "container": container,
            "selector": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            },
        },
        required=["container"],
    )


WATCHER = watcher_schema()


def test_watcher_with_container() -> None:
    obj = {
        "apiVersion": "watch.example.com/v1",
        "kind": "Watcher",
        "metadata": {"name": "w"},
        "spec": {
            "container": {
                "name": "main",
                "image": "nginx:1.27",
                "ports": [{"containerPort": 80}, {"containerPort": 443, "name": "https"}],
                "env": [{"name": "A", "value": "1"}],
                "resources": {"limits": {"cpu": "500m", "memory": 128974848}},
                "livenessProbe": {"httpGet": {"port": "http", "path": "/healthz"}},
                "notAField": True,
            },
            "selector": {"matchLabels": {"app": "web"}, "anything": [1, 2]},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
        },
    }
    assert prune(obj, WATCHER) == ["spec.container.notAField"]
    apply_defaults(obj, WATCHER)
    ports = obj["spec"]["container"]["ports"]
    assert all(p.get("protocol") == "TCP" for p in ports)  # the built-in default
    assert validate(obj, WATCHER) == []
    assert obj["spec"]["selector"]["anything"] == [1, 2]


def test_watcher_with_invalid_container() -> None:
    obj = {
        "spec": {
            "container": {
                "image": "nginx",
                "ports": [
                    {"containerPort": "eighty"},
                    {"containerPort": 443},
                    {"containerPort": 443},
                ],
                "env": [{"name": "A"}, {"name": "A", "value": "2"}],
                "resources": {"limits": {"cpu": "lots"}},
            },
        }
    }
    apply_defaults(obj, WATCHER)
    got = _messages(obj, WATCHER)
    assert "spec.container.name: Required value" in got
    assert (
        'spec.container.ports[0].containerPort: Invalid value: "string": '
        'spec.container.ports[0].containerPort in body must be of type integer: "string"'
    ) in got
    assert any(
        m.startswith('spec.container.resources.limits.cpu: Invalid value: "lots"') for m in got
    )
    assert (
        "spec.container.ports[2]: Duplicate value: "
        'map[string]interface {}{"containerPort":443, "protocol":"TCP"}' in got
    )
    assert 'spec.container.env[1]: Duplicate value: map[string]interface {}{"name":"A"}' in got
