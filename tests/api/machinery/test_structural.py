"""The checks a CRD schema must pass: generic OpenAPI rules, structural rules, defaults, CEL."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._api.machinery.fielderror import FieldErrorType
from kubeforge._api.machinery.structural import structural_errors

P = "spec.versions[0].schema.openAPIV3Schema"
S = f"{P}.properties[spec]"


def _spec(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": props, **extra},
        },
    }


def _errors(schema: dict[str, Any]) -> list[str]:
    return [str(e) for e in structural_errors(schema, P)]


def _field_errors(field: dict[str, Any]) -> list[str]:
    return _errors(_spec({"f": field}))


F = f"{S}.properties[f]"


def test_a_good_schema_passes() -> None:
    schema = _spec(
        {
            "replicas": {"type": "integer", "minimum": 1, "default": 1},
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
            "port": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "anything": {"x-kubernetes-preserve-unknown-fields": True},
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                },
            },
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "positive": {"type": "integer", "allOf": [{"minimum": 0}, {"maximum": 10}]},
        },
        **{"x-kubernetes-validations": [{"rule": "self.replicas <= 10", "message": "at most 10"}]},
    )
    schema["properties"]["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 20}},
    }
    assert _errors(schema) == []


# -- generic rules ----------------------------------------------------------------------------

GENERIC_CASES = [
    (
        {"type": "strin"},
        [
            f'{F}.type: Unsupported value: "strin": supported values: "array", "boolean", '
            '"integer", "number", "object", "string"'
        ],
    ),
    (
        {"type": "null"},
        [f"{F}.type: Forbidden: type cannot be set to null, use nullable as an alternative"],
    ),
    ({"type": "string", "$ref": "#/x"}, [f"{F}.$ref: Forbidden: $ref is not supported"]),
    (
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        [f"{F}.patternProperties: Forbidden: patternProperties is not supported"],
    ),
    (
        {"type": "object", "definitions": {"a": {"type": "string"}}},
        [f"{F}.definitions: Forbidden: definitions is not supported"],
    ),
    (
        {"type": "object", "dependencies": {"a": ["b"]}},
        [f"{F}.dependencies: Forbidden: dependencies is not supported"],
    ),
    (
        {"type": "array", "items": {"type": "string"}, "additionalItems": False},
        [f"{F}.additionalItems: Forbidden: additionalItems is not supported"],
    ),
    (
        {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        [
            f"{F}.uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime "
            "complexity becomes quadratic"
        ],
    ),
    (
        {"type": "array", "items": [{"type": "string"}]},
        [
            f"{F}.items: Forbidden: items must be a schema object and not an array",
            f"{F}.items: Required value: must be specified",
        ],
    ),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": {"type": "string"},
        },
        [
            f"{F}.additionalProperties: Forbidden: additionalProperties and properties are "
            "mutual exclusive"
        ],
    ),
    (
        {"type": "object", "x-kubernetes-preserve-unknown-fields": False},
        [
            f"{F}.x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or "
            "undefined"
        ],
    ),
    (
        {"type": "string", "pattern": "([a-z]"},
        [f'{F}.pattern: Invalid value: "([a-z]": must be a valid regular expression, but isn\'t'],
    ),
]


@pytest.mark.parametrize(("field", "expected"), GENERIC_CASES)
def test_generic_rules(field: dict[str, Any], expected: list[str]) -> None:
    assert _field_errors(field) == expected


LIST_MAP_CASES = [
    (
        {"type": "string", "x-kubernetes-list-type": "set"},
        [
            f'{F}.type: Invalid value: "string": must be array if x-kubernetes-list-type is '
            "specified"
        ],
    ),
    (
        {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"},
        [
            f'{F}.x-kubernetes-list-type: Unsupported value: "bag": supported values: '
            '"atomic", "set", "map"'
        ],
    ),
    (
        {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["a"]},
        [
            f"{F}.x-kubernetes-list-type: Required value: must be map if "
            "x-kubernetes-list-map-keys is non-empty"
        ],
    ),
    (
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "items": {"type": "object", "properties": {"a": {"type": "string"}}},
        },
        [
            f"{F}.x-kubernetes-list-map-keys: Required value: must not be empty if "
            "x-kubernetes-list-type is map"
        ],
    ),
    (
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["a"],
            "items": {"type": "string"},
        },
        [
            f'{F}.items.type: Invalid value: "string": must be object if parent array\'s '
            "x-kubernetes-list-type is map"
        ],
    ),
    (
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["a", "b"],
            "items": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}},
        },
        [
            f'{F}.x-kubernetes-list-map-keys: Invalid value: []string{{"a", "b"}}: entries '
            "must all be names of item properties"
        ],
    ),
    (
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["a"],
            "items": {"type": "object", "properties": {"a": {"type": "string"}}},
        },
        [
            f"{F}.items.properties[a].default: Required value: this property is in "
            "x-kubernetes-list-map-keys, so it must have a default or be a required property"
        ],
    ),
    (
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["a"],
            "items": {
                "type": "object",
                "required": ["a"],
                "properties": {
                    "a": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            },
        },
        [
            f'{F}.items.properties[a].type: Invalid value: "object": must be a scalar type if '
            "parent array's x-kubernetes-list-type is map"
        ],
    ),
    (
        {
            "type": "object",
            "x-kubernetes-map-type": "merge",
            "additionalProperties": {"type": "string"},
        },
        [
            f'{F}.x-kubernetes-map-type: Unsupported value: "merge": supported values: '
            '"atomic", "granular"'
        ],
    ),
    (
        {"type": "array", "items": {"type": "string"}, "x-kubernetes-map-type": "atomic"},
        [f'{F}.type: Invalid value: "array": must be object if x-kubernetes-map-type is specified'],
    ),
]


@pytest.mark.parametrize(("field", "expected"), LIST_MAP_CASES)
def test_list_and_map_types(field: dict[str, Any], expected: list[str]) -> None:
    assert _field_errors(field) == expected


# -- structural rules -------------------------------------------------------------------------

STRUCTURAL_CASES = [
    (
        {"description": "untyped"},
        [f"{F}.type: Required value: must not be empty for specified object fields"],
    ),
    (
        {"type": "array", "items": {"description": "untyped"}},
        [f"{F}.items.type: Required value: must not be empty for specified array items"],
    ),
    ({"type": "array"}, [f"{F}.items: Required value: must be specified"]),
    (
        {"type": "string", "x-kubernetes-embedded-resource": True},
        [
            f'{F}.type: Invalid value: "string": must be object if '
            "x-kubernetes-embedded-resource is true",
            f"{F}.properties: Required value: must not be empty if x-kubernetes-embedded-resource "
            "is true without x-kubernetes-preserve-unknown-fields",
        ],
    ),
    (
        {"type": "object", "x-kubernetes-embedded-resource": True},
        [
            f"{F}.properties: Required value: must not be empty if "
            "x-kubernetes-embedded-resource is true without "
            "x-kubernetes-preserve-unknown-fields"
        ],
    ),
    (
        {
            "x-kubernetes-int-or-string": True,
            "x-kubernetes-preserve-unknown-fields": True,
        },
        [
            f"{F}.x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if "
            "x-kubernetes-int-or-string is true"
        ],
    ),
    (
        {"type": "string", "anyOf": [{"type": "string", "description": "x", "nullable": True}]},
        [
            f"{F}.anyOf[0].type: Forbidden: must be empty to be structural",
            f"{F}.anyOf[0].description: Forbidden: must be empty to be structural",
            f"{F}.anyOf[0].nullable: Forbidden: must be false to be structural",
        ],
    ),
    (
        {"type": "object", "not": {"default": {}, "x-kubernetes-validations": [{"rule": "true"}]}},
        [
            f"{F}.not.default: Forbidden: must be undefined to be structural",
            f"{F}.not.x-kubernetes-validations: Forbidden: must be empty to be structural",
        ],
    ),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"properties": {"b": {"minLength": 1}}}],
        },
        [f"{F}.properties[b]: Required value: because it is defined in {F}.oneOf[1].properties[b]"],
    ),
    (
        {"type": "object", "allOf": [{"properties": {"metadata": {}}}]},
        [
            f"{F}.allOf[0].properties[metadata]: Forbidden: must not be specified in a nested "
            "context",
            f"{F}.properties[metadata]: Required value: because it is defined in "
            f"{F}.allOf[0].properties[metadata]",
        ],
    ),
]


@pytest.mark.parametrize(("field", "expected"), STRUCTURAL_CASES)
def test_structural_rules(field: dict[str, Any], expected: list[str]) -> None:
    assert _field_errors(field) == expected


def test_root_rules() -> None:
    assert _errors({"type": "array", "items": {"type": "string"}}) == [
        f'{P}.type: Invalid value: "array": must be object at the root'
    ]
    assert _errors({"properties": {"spec": {"type": "object"}}}) == [
        f"{P}.type: Required value: must not be empty at the root"
    ]
    assert _errors({"type": "object", "additionalProperties": {"type": "string"}}) == [
        f"{P}.additionalProperties: Forbidden: must not be used at the root"
    ]
    assert _errors({"type": "object", "nullable": True}) == [
        f"{P}.nullable: Forbidden: nullable cannot be true at the root"
    ]


def test_root_type_meta_and_metadata() -> None:
    schema = _spec({})
    schema["properties"]["kind"] = {"type": "integer"}
    schema["properties"]["metadata"] = {
        "type": "object",
        "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
    }
    assert _errors(schema) == [
        f'{P}.properties[kind].type: Invalid value: "integer": must be string',
        f"{P}.properties[metadata]: Forbidden: must not specify anything other than name and "
        "generateName, but metadata is implicitly specified",
    ]


def test_metadata_defaults_are_refused() -> None:
    schema = _spec({})
    schema["properties"]["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string", "default": "x"}},
    }
    assert _errors(schema) == [
        f"{P}.properties[metadata].properties[name].default: Forbidden: must not be set in "
        "top-level metadata"
    ]


# -- defaults ---------------------------------------------------------------------------------

DEFAULT_CASES = [
    ({"type": "integer", "default": 3}, []),
    (
        {"type": "integer", "default": "three"},
        [f'{F}.default: Invalid value: "string":  in body must be of type integer: "string"'],
    ),
    (
        {"type": "integer", "maximum": 5, "default": 7},
        [f"{F}.default: Invalid value: 7:  in body should be less than or equal to 5"],
    ),
    (
        {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": 1}},
        [
            f'{F}.default: Invalid value: map[string]interface {{}}{{"a":"x", "b":1}}: must '
            "not have unknown fields"
        ],
    ),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "integer", "minimum": 3}},
            "default": {"a": 1},
        },
        [f"{F}.default.a: Invalid value: 1: a in body should be greater than or equal to 3"],
    ),
    (
        {
            "type": "string",
            "default": "abcdef",
            "x-kubernetes-validations": [{"rule": "self.size() < 3"}],
        },
        [f'{F}.default: Invalid value: "string": failed rule: self.size() < 3'],
    ),
    (
        {"type": "array", "items": {"type": "string", "default": 1}},
        [
            f'{F}.items.default: Invalid value: "integer":  in body must be of type string: '
            '"integer"'
        ],
    ),
    (
        {"type": "object", "additionalProperties": {"type": "boolean", "default": "yes"}},
        [
            f'{F}.additionalProperties.default: Invalid value: "string":  in body must be of '
            'type boolean: "string"'
        ],
    ),
    ({"type": "string", "nullable": True, "default": None}, []),
]


@pytest.mark.parametrize(("field", "expected"), DEFAULT_CASES)
def test_defaults(field: dict[str, Any], expected: list[str]) -> None:
    assert _field_errors(field) == expected


def test_defaults_are_checked_only_for_structural_schemas() -> None:
    assert _field_errors({"default": "x"}) == [
        f"{F}.type: Required value: must not be empty for specified object fields"
    ]


# -- CEL rules --------------------------------------------------------------------------------


def _rule_errors(*rules: dict[str, Any], field: dict[str, Any] | None = None) -> list[str]:
    node = dict(field or {"type": "integer"})
    node["x-kubernetes-validations"] = list(rules)
    return _field_errors(node)


V = f"{F}.x-kubernetes-validations[0]"


def test_rule_compilation_failure() -> None:
    (err,) = structural_errors(
        _spec({"f": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >"}]}}), P
    )
    assert err.field == f"{V}.rule"
    assert err.type is FieldErrorType.INVALID
    assert str(err.value) == (
        'apiextensions.ValidationRule{Rule:"self >", Message:"", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", '
        "OptionalOldSelf:(*bool)(nil)}"
    )
    assert err.detail.startswith("compilation failed: ERROR: <input>:1:7: Syntax error:")


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ([{"rule": "self > 0"}], []),
        ([{"rule": "  "}], [f"{V}.rule: Required value: rule is not specified"]),
        (
            [{"rule": "self > 0", "message": "  "}],
            [f'{V}.message: Invalid value: "  ": message must be non-empty if specified'],
        ),
        (
            [{"rule": "self > 0", "message": "a\nb"}],
            [f'{V}.message: Invalid value: "a\\nb": message must not contain line breaks'],
        ),
        (
            [{"rule": "self > 0 &&\nself < 9"}],
            [
                f"{V}.message: Required value: message must be specified if rule contains line "
                "breaks"
            ],
        ),
        (
            [{"rule": "self > 0", "reason": "FieldValueWrong"}],
            [
                f'{V}.reason: Unsupported value: "FieldValueWrong": supported values: '
                '"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", '
                '"FieldValueRequired"'
            ],
        ),
        (
            [{"rule": "self > 0", "optionalOldSelf": True}],
            [
                f"{V}.optionalOldSelf: Invalid value: true: may not be set if rule does not "
                "use oldSelf"
            ],
        ),
        ([{"rule": "self >= oldSelf", "optionalOldSelf": True}], []),
        (
            [{"rule": "self > 0", "messageExpression": "'x' +"}],
            [f"{V}.messageExpression: Invalid value: "],
        ),
        (
            [{"rule": "undefinedThing > 0"}],
            [f"{V}.rule: Invalid value: "],
        ),
    ],
)
def test_rule_checks(rules: list[dict[str, Any]], expected: list[str]) -> None:
    got = _rule_errors(*rules)
    assert len(got) == len(expected)
    for message, prefix in zip(got, expected, strict=True):
        assert message.startswith(prefix)


def test_field_path_must_name_a_field() -> None:
    obj = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "l": {"type": "array", "items": {"type": "string"}},
        },
    }
    assert _rule_errors({"rule": "true", "fieldPath": ".a"}, field=obj) == []
    assert _rule_errors({"rule": "true", "fieldPath": ".l[0]"}, field=obj) == []
    assert _rule_errors({"rule": "true", "fieldPath": ".b"}, field=obj) == [
        f'{V}.fieldPath: Invalid value: ".b": fieldPath must be a valid path'
    ]
    assert _rule_errors({"rule": "true", "fieldPath": "a"}, field=obj) == [
        f'{V}.fieldPath: Invalid value: "a": fieldPath must be a valid path'
    ]


def test_transition_rules_under_atomic_lists_are_refused() -> None:
    schema = _spec(
        {
            "atomic": {
                "type": "array",
                "items": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
                },
            },
            "keyed": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["k"],
                "items": {
                    "type": "object",
                    "required": ["k"],
                    "properties": {"k": {"type": "string"}},
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
                },
            },
        }
    )
    atomic = f"{S}.properties[atomic].items"
    assert _errors(schema) == [
        f'{atomic}.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf '
        f"cannot be used on the uncorrelatable portion of the schema within {atomic}"
    ]


# -- realistic schemas ------------------------------------------------------------------------


def test_generated_container_schema_is_structural() -> None:
    from tests.api.machinery.test_crvalidation import WATCHER

    assert _errors(WATCHER) == []


def test_path_prefix_is_configurable() -> None:
    (err,) = structural_errors({"type": "object", "nullable": True})
    assert err.field == "spec.validation.openAPIV3Schema.nullable"
