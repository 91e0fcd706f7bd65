"""YAML to JSON values, as sigs.k8s.io/yaml (go-yaml v2) converts them."""

from __future__ import annotations

from typing import Any

import pytest

from kubeforge._apiserver.request.yamljson import YAMLConversionError, YAMLSyntaxError, yaml_to_json


def laughs(levels: int, fanout: int) -> str:
    text = 'a0: &a0 "lol"\n'
    for level in range(1, levels + 1):
        text += f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * fanout) + "]\n"
    return text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1: a", {"1": "a"}),
        ("1.0: a", {"1": "a"}),
        ("0.1: a", {"0.1": "a"}),
        ("3.14159265358979: a", {"3.1415927": "a"}),
        ("1e7: a", {"1e+07": "a"}),
        ("123456.0: a", {"123456": "a"}),
        ("1234567.0: a", {"1.234567e+06": "a"}),
        ("0.00001: a", {"1e-05": "a"}),
        ("-0.0: a", {"-0": "a"}),
        (".inf: a", {".inf": "a"}),
        ("1e300: a", {".inf": "a"}),
        (".nan: a", {".nan": "a"}),
        ("no: a", {"false": "a"}),
    ],
)
def test_keys_become_the_strings_go_writes(text: str, expected: dict[str, Any]) -> None:
    assert yaml_to_json(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-9223372036854775808", -(2**63)),
        # Beyond int64, a float; this one rounds to -2**63, which JSON reads as an integer.
        ("-9223372036854775809", -(2**63)),
        ("-9223372036854779999", -9.22337203685478e18),
        ("18446744073709551615", 2**64 - 1),
        ("18446744073709551616", 1.8446744073709552e19),
        ("0xFFFFFFFFFFFFFFFFFF", "0xFFFFFFFFFFFFFFFFFF"),
        ("+12", 12),
        ("-0b101", -5),
        ("1_000_000", 1_000_000),
        ("2.50", 2.5),
        ("1e3", 1000),
        (".5e1", 5),
        ("1e-400", 0),
        ("0.1.2", "0.1.2"),
        ("~", None),
        ("Null", None),
        ("TRUE", True),
        ("tRUE", "tRUE"),
        ("'true'", "true"),
        ("|\n  a\n", "a\n"),
        ("!!float '2'", 2),
        ("!!str 0x10", "0x10"),
        ("!!timestamp 2001-12-14 21:59:43.10", "2001-12-14 21:59:43.10"),
    ],
)
def test_scalars_read_as_json_reads_them_back(text: str, expected: Any) -> None:
    value = yaml_to_json(text)
    assert value == expected and type(value) is type(expected)


def test_merges_follow_go_yaml_v2_precedence() -> None:
    text = "a: &a {x: 1, v: 1}\nb: &b {x: 2, z: 2}\nc:\n  x: 0\n  <<: [*a, *b]\n  w: 3\n"
    assert yaml_to_json(text)["c"] == {"x": 1, "v": 1, "z": 2, "w": 3}


def test_alias_expansion_is_bounded_like_go_yaml() -> None:
    assert len(yaml_to_json(laughs(3, 10))["a3"]) == 10
    with pytest.raises(YAMLConversionError, match="excessive aliasing"):
        yaml_to_json(laughs(4, 10))
    with pytest.raises(YAMLConversionError, match="excessive aliasing"):
        yaml_to_json(laughs(30, 30))


def test_expanded_aliases_are_independent_copies() -> None:
    value = yaml_to_json("a: &a {b: [1]}\nc: *a\n")
    value["c"]["b"].append(2)
    assert value["a"] == {"b": [1]}


def test_an_anchor_redefined_later_does_not_change_earlier_aliases() -> None:
    value = yaml_to_json("a: &x 1\nb: &y [*x]\nc: &x 2\nd: *y\ne: *x\n")
    assert value == {"a": 1, "b": [1], "c": 2, "d": [1], "e": 2}


def test_syntax_errors_name_the_line() -> None:
    with pytest.raises(YAMLSyntaxError, match=r"^yaml: line 2: mapping values are not allowed"):
        yaml_to_json("a: 1\nb: c: d\n")
