"""Names, labels, annotations, finalizers, owner references and ObjectMeta rules."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from kubeforge._api.machinery.govalues import go_label_selector, go_string_map, go_string_slice
from kubeforge._api.machinery.names import (
    is_config_map_key,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_path_segment_name,
    is_qualified_name,
    is_valid_label_value,
    is_valid_port_name,
    validate_annotations,
    validate_builtin_finalizers,
    validate_label_selector,
    validate_name,
    validate_object_meta,
    validate_object_meta_update,
)

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("my-name", []),
        ("a" * 63, []),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("Bad", [LABEL_MSG]),
        ("-a", [LABEL_MSG]),
        ("a.b", ["must not contain dots"]),
        ("", [LABEL_MSG]),
    ],
)
def test_dns1123_label(value: str, expected: list[str]) -> None:
    assert list(is_dns1123_label(value)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("example.com", []),
        ("a" * 253, []),
        ("a" * 254, ["must be no more than 253 characters"]),
        ("Bad_Name", [SUBDOMAIN_MSG]),
        ("a..b", [SUBDOMAIN_MSG]),
    ],
)
def test_dns1123_subdomain(value: str, expected: list[str]) -> None:
    assert list(is_dns1123_subdomain(value)) == expected


def test_dns1035_label_must_start_with_a_letter() -> None:
    assert list(is_dns1035_label("svc-1")) == []
    assert is_dns1035_label("1svc")[0].startswith(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
        "with an alphabetic character"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("app", []),
        ("example.com/MyName", []),
        ("-x", [QUALIFIED_MSG]),
        ("/x", ["prefix part must be non-empty"]),
        ("a/", ["name part must be non-empty", QUALIFIED_MSG]),
        ("Bad_Prefix/x", ["prefix part " + SUBDOMAIN_MSG]),
        ("a" * 64, ["name part must be no more than 63 characters"]),
    ],
)
def test_qualified_name(value: str, expected: list[str]) -> None:
    assert list(is_qualified_name(value)) == expected


def test_qualified_name_with_two_slashes() -> None:
    (message,) = is_qualified_name("a/b/c")
    assert message.startswith("a qualified name must consist of alphanumeric characters")
    assert message.endswith(
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", []),
        ("v1.2_x", []),
        ("bad value", [LABEL_VALUE_MSG]),
        ("x" * 64, ["must be no more than 63 characters"]),
        ("-" * 64, ["must be no more than 63 characters", LABEL_VALUE_MSG]),
    ],
)
def test_label_value(value: str, expected: list[str]) -> None:
    assert list(is_valid_label_value(value)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("key.name", []),
        (".", ["must not be '.'"]),
        ("..", ["must not be '..'"]),
        ("..a", ["must not start with '..'"]),
    ],
)
def test_config_map_key(value: str, expected: list[str]) -> None:
    assert is_config_map_key(value) == expected


def test_config_map_key_charset() -> None:
    (message,) = is_config_map_key("a b")
    assert message.startswith("a valid config key must consist of alphanumeric characters")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("http", []),
        ("a" * 16, ["must be no more than 15 characters"]),
        ("123", ["must contain at least one letter (a-z)"]),
        ("a--b", ["must not contain consecutive hyphens"]),
        ("-ab", ["must not begin or end with a hyphen"]),
        ("A_b", ["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"]),
    ],
)
def test_port_name(value: str, expected: list[str]) -> None:
    assert is_valid_port_name(value) == expected


def test_path_segment_names() -> None:
    assert is_path_segment_name("..") == ["may not be '..'"]
    assert is_path_segment_name("a/b%c") == ["may not contain '/'", "may not contain '%'"]
    assert is_path_segment_name("..", prefix=True) == []


def test_generate_name_may_end_with_a_dash() -> None:
    assert list(validate_name("web-", "subdomain", prefix=True)) == []
    assert list(validate_name("web-", "subdomain")) == [SUBDOMAIN_MSG]


def test_go_renderings() -> None:
    assert str(go_string_map({"b": "2", "a": "1"})) == 'map[string]string{"a":"1", "b":"2"}'
    assert str(go_string_map(None)) == "map[string]string(nil)"
    assert str(go_string_slice(["x", "y"])) == '[]string{"x", "y"}'
    assert str(go_label_selector({"matchLabels": {"app": "x"}})) == (
        'v1.LabelSelector{MatchLabels:map[string]string{"app":"x"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
    )


def _messages(errors: list[Any]) -> list[str]:
    return [str(e) for e in errors]


def test_label_selector_requirements() -> None:
    selector = {
        "matchExpressions": [
            {"key": "a", "operator": "In"},
            {"key": "b", "operator": "Exists", "values": ["x"]},
            {"key": "c", "operator": "Near"},
            {"key": "-d", "operator": "In", "values": ["bad value"]},
        ]
    }
    assert _messages(validate_label_selector(selector, "spec.selector")) == [
        "spec.selector.matchExpressions[0].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn'",
        "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when "
        "`operator` is 'Exists' or 'DoesNotExist'",
        'spec.selector.matchExpressions[2].operator: Invalid value: "Near": not a valid '
        "selector operator",
        f'spec.selector.matchExpressions[3].key: Invalid value: "-d": {QUALIFIED_MSG}',
        'spec.selector.matchExpressions[3].values[0]: Invalid value: "bad value": '
        + LABEL_VALUE_MSG,
    ]


def test_annotations_size_limit() -> None:
    errors = validate_annotations({"a": "x" * (256 * 1024)}, "metadata.annotations")
    assert _messages(errors) == [
        "metadata.annotations: Too long: may not be more than 262144 bytes"
    ]
    assert validate_annotations({"Upper.Case/Key": "ok"}, "metadata.annotations") == []


# -- ObjectMeta -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "namespaced", "rule", "expected"),
    [
        ({"name": "ok", "namespace": "default"}, True, "subdomain", []),
        (
            {"namespace": "default"},
            True,
            "subdomain",
            ["metadata.name: Required value: name or generateName is required"],
        ),
        ({"generateName": "web-", "namespace": "default"}, True, "subdomain", []),
        ({"name": "ok"}, True, "subdomain", ["metadata.namespace: Required value"]),
        (
            {"name": "ok", "namespace": "x"},
            False,
            "subdomain",
            ["metadata.namespace: Forbidden: not allowed on this type"],
        ),
        (
            {"name": "Bad", "namespace": "default"},
            True,
            "label",
            [f'metadata.name: Invalid value: "Bad": {LABEL_MSG}'],
        ),
        (
            {"name": "a.b"},
            False,
            "label",
            ['metadata.name: Invalid value: "a.b": must not contain dots'],
        ),
        (
            {"name": "a/b", "namespace": "default"},
            True,
            "path",
            ["metadata.name: Invalid value: \"a/b\": may not contain '/'"],
        ),
        (
            {"name": "ok", "namespace": "default", "labels": {"k": "bad value"}},
            True,
            "subdomain",
            [f'metadata.labels: Invalid value: "bad value": {LABEL_VALUE_MSG}'],
        ),
    ],
)
def test_object_meta_on_create(
    meta: dict[str, Any], namespaced: bool, rule: str, expected: list[str]
) -> None:
    assert _messages(validate_object_meta(meta, namespaced, rule, True)) == expected


def test_object_meta_on_update_skips_the_name() -> None:
    assert validate_object_meta({"name": "Bad"}, True, "subdomain", False) == []


def test_finalizers() -> None:
    meta = {"name": "x", "finalizers": ["orphan", "foregroundDeletion", "-bad"]}
    assert _messages(validate_object_meta(meta, False, "subdomain", True)) == [
        f'metadata.finalizers: Invalid value: "-bad": {QUALIFIED_MSG}',
        'metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion", "-bad"}: '
        "finalizer orphan and foregroundDeletion cannot be both set",
    ]


def test_builtin_finalizers_must_be_standard_or_qualified() -> None:
    finalizers = ["kubernetes", "example.com/keep", "custom", "-bad"]
    assert _messages(validate_builtin_finalizers(finalizers, "metadata.finalizers")) == [
        'metadata.finalizers: Invalid value: "custom": name is neither a standard finalizer '
        "name nor is it fully qualified"
    ]
    strict = validate_object_meta(
        {"name": "x", "finalizers": ["custom"]}, False, "subdomain", True, strict_finalizers=True
    )
    assert [e.field for e in strict] == ["metadata.finalizers"]


def _ref(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "u1", **fields}


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ([_ref()], []),
        (
            [_ref(apiVersion="")],
            ['metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty'],
        ),
        (
            [_ref(apiVersion="a/b/c")],
            [
                'metadata.ownerReferences.apiVersion: Invalid value: "a/b/c": '
                "version must not be empty"
            ],
        ),
        (
            [_ref(kind="")],
            ['metadata.ownerReferences.kind: Invalid value: "": kind must not be empty'],
        ),
        (
            [_ref(name="")],
            ['metadata.ownerReferences.name: Invalid value: "": name must not be empty'],
        ),
        (
            [_ref(uid="")],
            ['metadata.ownerReferences.uid: Invalid value: "": uid must not be empty'],
        ),
    ],
)
def test_owner_references(refs: list[dict[str, Any]], expected: list[str]) -> None:
    meta = {"name": "x", "ownerReferences": refs}
    assert _messages(validate_object_meta(meta, False, "subdomain", True)) == expected


def test_only_one_controller_reference() -> None:
    refs = [_ref(controller=True), _ref(kind="Secret", name="b", uid="u2", controller=True)]
    (error,) = validate_object_meta(
        {"name": "x", "ownerReferences": refs}, False, "subdomain", True
    )
    assert error.field == "metadata.ownerReferences"
    assert error.detail == (
        'Only one reference can have Controller set to true. Found "true" in references for '
        "ConfigMap/a and Secret/b"
    )


def test_events_cannot_own() -> None:
    (error,) = validate_object_meta(
        {"name": "x", "ownerReferences": [_ref(kind="Event")]}, False, "subdomain", True
    )
    assert error.detail == "/v1, Kind=Event is disallowed from being an owner"


def test_object_meta_update() -> None:
    old = {"name": "a", "namespace": "n", "uid": "1"}
    new = {"name": "b", "namespace": "n", "uid": "1"}
    assert _messages(validate_object_meta_update(new, old)) == [
        'metadata.name: Invalid value: "b": field is immutable'
    ]


def test_no_new_finalizers_while_deleting() -> None:
    old = {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["x/a"]}
    new = {**old, "finalizers": ["x/a", "x/c", "x/b"]}
    assert _messages(validate_object_meta_update(new, old)) == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being "
        'deleted, found new finalizers []string{"x/b", "x/c"}'
    ]
    assert validate_object_meta_update({**old, "finalizers": []}, old) == []


@pytest.mark.parametrize(
    ("check", "value"),
    [
        (is_qualified_name, "ab\n"),
        (is_qualified_name, "a\n/b"),
        (is_valid_label_value, "abc\n"),
        (is_dns1123_label, "web\n"),
        (is_dns1123_subdomain, "web.example\n"),
        (is_dns1035_label, "web\n"),
        (is_config_map_key, "key\n"),
        (is_valid_port_name, "http\n"),
    ],
)
def test_a_trailing_newline_is_not_part_of_a_valid_name(
    check: Callable[[str], Sequence[str]], value: str
) -> None:
    # Go's patterns end at the end of the text; a newline before it is one more character.
    assert check(value)
    assert not check(value.rstrip("\n").replace("\n", ""))
