"""Values shown in error messages the way the API server's Go code prints them.

The server quotes a bad value with Go's `%v` or `%#v`: numbers as Go prints a float64
(`1e+21`, `1e-05`), strings quoted, maps and lists of a custom object as Go literals
(`map[string]interface {}{"a":1}`), a built-in field's strings and selectors as its Go type
(`[]string{"a"}`). `shown_value` picks the form for a value of a custom object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import orjson

__all__ = [
    "GoValue",
    "go_label_selector",
    "go_number",
    "go_quote",
    "go_repr",
    "go_string_map",
    "go_string_slice",
    "shown_value",
]


class GoValue:
    """A value shown in an error message the way Go's `%#v` prints it.

    FieldError renders unknown value types with `str()`, so this carries the finished text.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"GoValue({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoValue) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def go_quote(value: Any) -> str:
    """A string as Go's `%q` quotes it (anything else by its `str()`)."""
    return orjson.dumps(value if isinstance(value, str) else str(value)).decode()


def _string_slice(values: Iterable[Any] | None) -> str:
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


def _string_map(values: Mapping[str, Any] | None) -> str:
    if values is None:
        return "map[string]string(nil)"
    return (
        "map[string]string{"
        + ", ".join(f"{go_quote(k)}:{go_quote(values[k])}" for k in sorted(values))
        + "}"
    )


def go_string_slice(values: Iterable[Any] | None) -> GoValue:
    """`[]string{"a", "b"}`."""
    return GoValue(_string_slice(values))


def go_string_map(values: Mapping[str, Any] | None) -> GoValue:
    """`map[string]string{"a":"b"}` with sorted keys, as Go prints maps."""
    return GoValue(_string_map(values))


def go_label_selector(selector: Mapping[str, Any] | None) -> GoValue:
    """`v1.LabelSelector{MatchLabels:..., MatchExpressions:...}` (null for a missing one)."""
    if selector is None:
        return GoValue("null")
    labels = selector.get("matchLabels")
    exprs = selector.get("matchExpressions")
    if isinstance(exprs, list):
        items = []
        for e in exprs:
            e = e if isinstance(e, Mapping) else {}
            values = e.get("values")
            items.append(
                "v1.LabelSelectorRequirement{"
                f"Key:{go_quote(e.get('key') or '')}, "
                f"Operator:{go_quote(e.get('operator') or '')}, "
                f"Values:{_string_slice(values if isinstance(values, list) else None)}}}"
            )
        rendered_exprs = "[]v1.LabelSelectorRequirement{" + ", ".join(items) + "}"
    else:
        rendered_exprs = "[]v1.LabelSelectorRequirement(nil)"
    rendered_labels = _string_map(labels if isinstance(labels, Mapping) else None)
    return GoValue(
        f"v1.LabelSelector{{MatchLabels:{rendered_labels}, MatchExpressions:{rendered_exprs}}}"
    )


def go_number(value: float | int) -> str:
    """A number the way Go's `%v` prints it (`16`, `1.5`, `1e+21`, `1e-05`)."""
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    sign, digits, exp = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exp)  # decimal exponent of the first digit, plus one
    prefix = "-" if sign else ""
    if point - 1 < -4 or point - 1 >= 21:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        e = point - 1
        return f"{prefix}{mantissa}e{'+' if e >= 0 else '-'}{abs(e):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def go_repr(value: Any) -> str:
    """Go's `%#v` of a JSON value held in an `interface{}`."""
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return go_number(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{go_quote(str(k))}:{go_repr(value[k])}" for k in sorted(value))
        return f"map[string]interface {{}}{{{inner}}}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_repr(v) for v in value) + "}"
    return str(value)


def shown_value(value: Any) -> Any:
    """A bad value as the server shows it: scalars plainly, maps and lists as Go literals,
    null as the string "null"."""
    if value is None:
        return "null"
    if isinstance(value, Mapping | list):
        return GoValue(go_repr(value))
    return value
