"""Hostile values and the text of bodies: JSON a client may send (duplicate keys, number
literals of every form, escapes) and YAML (JSON's flow style with YAML-only scalars, or block
style)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml
from hypothesis import strategies as st

__all__ = [
    "Dup",
    "Raw",
    "hostile",
    "hostile_scalars",
    "to_json",
    "to_yaml",
    "with_yaml_scalars",
]


@dataclass(frozen=True)
class Raw:
    """Text put into a body as it is: a number literal (`1.0`, `1E+2`), an escape JSON
    parsers disagree on, or a YAML-only scalar (`2001-12-14`, `!!binary aGk=`)."""

    text: str


@dataclass(frozen=True)
class Dup:
    """An object whose keys may repeat (`{"a": 1, "a": 2}`): valid JSON whose meaning
    depends on the parser (the last one wins in Go's and in orjson)."""

    pairs: tuple[tuple[str, Any], ...]


def to_json(value: Any, ascii_only: bool = False) -> str:
    """`value` as JSON text, with Raw and Dup written as they are."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Dup):
        return (
            "{"
            + ",".join(
                f"{json.dumps(k, ensure_ascii=ascii_only)}:{to_json(v, ascii_only)}"
                for k, v in value.pairs
            )
            + "}"
        )
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(
                f"{json.dumps(str(k), ensure_ascii=ascii_only)}:{to_json(v, ascii_only)}"
                for k, v in value.items()
            )
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ",".join(to_json(v, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def plain(value: Any) -> Any:
    """`value` without Raw and Dup (the last of repeated keys; Raw as its text), for what
    only plain data can express (YAML block style, expected results)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Dup):
        out: dict[str, Any] = {}
        for k, v in value.pairs:
            out[k] = plain(v)
        return out
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def to_yaml(value: Any, flow: bool) -> str:
    """`value` as YAML: JSON text (flow style, Raw kept, so YAML-only scalars can appear)
    or block style (what kubectl sends)."""
    if flow:
        return to_json(value)
    return yaml.safe_dump(plain(value), sort_keys=False, allow_unicode=True)


_NUMBER_LITERALS = (
    "1.0",
    "1e3",
    "1E+2",
    "-0",
    "0.0",
    "1e30",
    "1e308",
    "-1e308",
    "2.5",
    "1e-7",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "-9223372036854775809",
    "2147483648",
    "-2147483649",
    "4294967296",
    "100000000000000000000000000000",
)
_ESCAPES = (
    '"\\u0000"',
    '"\\ud800"',
    '"\\udc00x"',
    '"\\ud83d\\ude00"',
    '"a\\/b"',
    '"\\u202e"',
)
_YAML_SCALARS = (
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "!!binary aGVsbG8=",
    "!!str 1",
    "!!int '7'",
    "!!float 1",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "!!timestamp 2001-12-14",
    ".inf",
    "-.inf",
    ".nan",
    "~",
    "yes",
    "off",
    "0o17",
    "0x1F",
    "017",
    "1_000",
    "1e400",
    "12345678901234567890123",
    "&a [1, 2]",
    "*undefined",
    "<<",
    "? [a]",
    "!!python/object:object {}",
    "!custom x",
    '"\\x00"',
    "'it''s'",
)

_SPECIAL_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "\t",
        "\n",
        "💥",
        "\u202e",
        "\ufeff",
        "é",
        "ü" * 70,
        "a" * 254,
        "a" * 4000,
        "null",
        "true",
        "1",
        "1.0",
        "-1",
        "2001-12-14",
        "0x1F",
        "..",
        "/",
        "a/b",
        "~1",
        "$patch",
        "delete",
        "*",
        "!",
        "{",
        "%",
        "a b",
        "Default",
        "kube-system",
    ]
)

hostile_text = st.one_of(st.text(max_size=12), _SPECIAL_TEXT)

hostile_numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(
        [
            0,
            -1,
            1,
            2**31 - 1,
            2**31,
            -(2**31) - 1,
            2**32,
            2**53 + 1,
            2**63 - 1,
            2**63,
            2**64,
            -(2**63),
        ]
    ),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1.0, 0.5, -0.0, 3.0, 1e30, 1e308, -1e308, 1e-300, 1e20, 65536.0]),
    st.sampled_from(_NUMBER_LITERALS).map(Raw),
)

hostile_scalars = st.one_of(
    st.none(),
    st.booleans(),
    hostile_numbers,
    hostile_text,
    st.sampled_from(_ESCAPES).map(Raw),
)

hostile_keys = st.one_of(
    st.text(max_size=8),
    st.sampled_from(
        [
            "",
            "$patch",
            "$retainKeys",
            "$setElementOrder/containers",
            "$deleteFromPrimitiveList/finalizers",
            "metadata",
            "apiVersion",
            "kind",
            "status",
            "spec",
            "name",
            "a.b",
            "a/b",
            "\x00",
            "💥",
            " ",
        ]
    ),
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(hostile_keys, children, max_size=3),
        st.lists(st.tuples(hostile_keys, children), min_size=2, max_size=3).map(
            lambda pairs: Dup(tuple(pairs))
        ),
    )


hostile = st.recursive(hostile_scalars, _containers, max_leaves=6)
"""Any JSON value a hostile client could send, of any type and shape."""


def with_yaml_scalars(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Values that may also be YAML-only scalars (for flow-style YAML bodies)."""
    return st.one_of(value, st.sampled_from(_YAML_SCALARS).map(Raw))
