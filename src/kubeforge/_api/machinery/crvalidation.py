"""Custom resources validated against their CRD's structural schema, as the server does it.

Validation follows the server step by step, with its error types, field paths and wording:
OpenAPI value validation (kube-openapi semantics, messages such as
`spec.replicas in body must be of type integer: "string"`), then the embedded-resource and
list-type checks (`schemaextensions`), then the CEL rules (`schemarules`) unless an earlier
error blocks them. Every step walks the schema compiled once into `Node` trees
(`schemanode`). Pruning and defaulting, which the server does before validating, are
`pruning` and `defaulting`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from kubeforge._api.machinery.fielderror import FieldError, FieldErrorType
from kubeforge._api.machinery.govalues import go_number, go_quote, shown_value
from kubeforge._api.machinery.schemaextensions import check_extensions
from kubeforge._api.machinery.schemanode import Node, node_of
from kubeforge._api.machinery.schemarules import rule_errors

__all__ = [
    "BLOCKING_SKIPPED",
    "is_blocking",
    "validate",
    "validate_against",
    "validate_update",
]

BLOCKING_SKIPPED = (
    "some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)
_BLOCKING = frozenset(
    {
        FieldErrorType.NOT_SUPPORTED,
        FieldErrorType.REQUIRED,
        FieldErrorType.TOO_LONG,
        FieldErrorType.TOO_MANY,
        FieldErrorType.TYPE_INVALID,
    }
)
_MAX_JSON_INTEGER = 2**53 - 1


# -- OpenAPI value validation (kube-openapi semantics) ---------------------------------------


class _Report:
    """Collects errors; `prefix` is the field path validation started at (None: the root)."""

    __slots__ = ("errors", "prefix")

    def __init__(self, prefix: str | None) -> None:
        self.prefix = prefix
        self.errors: list[FieldError] = []

    def field(self, name: str) -> str:
        if name.startswith("."):
            name = name[1:]
        if self.prefix is None:
            return name or "<nil>"
        if not name:
            return self.prefix
        return f"{self.prefix}.{name}"

    def add(self, kind: FieldErrorType, name: str, value: Any, detail: str) -> None:
        self.errors.append(FieldError(kind, self.field(name), detail, value))


_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_KIND_NAMES: dict[type, str] = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    dict: "object",
    list: "array",
}


def _kind(value: Any) -> str:
    name = _KIND_NAMES.get(type(value))
    if name is not None:
        if name == "integer" and not _INT64_MIN <= value <= _INT64_MAX:
            # Unstructured JSON keeps an integer as an int64 only when it fits (sigs.k8s.io/
            # json's PreserveInts); a wider one is read as the float64 it rounds to.
            return "number"
        return name
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return ""


def _json_integer(value: Any) -> bool:
    """Whether a float counts as an integer for `type: integer`: a whole number JSON can
    hold exactly, within +-(2**53 - 1) (kube-openapi's validator, via go-openapi/swag's
    IsFloat64AJSONInteger)."""
    number = float(value)
    return number.is_integer() and abs(number) <= _MAX_JSON_INTEGER


def _type_error(report: _Report, name: str, type_label: str, shown: str) -> None:
    detail = f"{name} in body must be of type {type_label}: {go_quote(shown)}"
    report.add(FieldErrorType.TYPE_INVALID, name, shown, detail)


def _check(n: Node, value: Any, name: str, report: _Report) -> None:
    """Validate one value against one node, recursing into objects and arrays."""
    if value is None:
        if n.types and not n.nullable:
            _type_error(report, name, n.type_label, "null")
        if n.enum is not None:
            _enum_error(n, None, name, report)
        return
    kind = _kind(value)
    types = n.types
    if types or n.fmt:
        if n.fmt and kind not in ("string", "array"):
            if not (
                kind in types
                or (kind == "number" and "integer" in types and _json_integer(value))
                or (kind == "integer" and "number" in types)
            ):
                go_fmt = "int64" if kind == "integer" else "float64" if kind == "number" else ""
                _type_error(report, name, n.fmt, go_fmt)
        elif n.fmt and "number" not in types and "integer" not in types:
            pass  # strings and arrays pass the type check of a formatted non-number
        elif kind not in types and not (
            (kind == "number" and "integer" in types and _json_integer(value))
            or (kind == "integer" and "number" in types)
        ):
            _type_error(report, name, n.type_label, kind)
    if n.value_checks:
        if n.all_of or n.any_of or n.one_of or n.not_ is not None:
            _check_junctors(n, value, name, report)
        if kind == "string":
            _check_string(n, value, name, report)
        elif kind in ("integer", "number"):
            _check_number(n, value, kind, name, report)
    if kind == "array":
        _check_array(n, value, name, report)
    if n.enum is not None:
        _check_enum(n, value, name, report)
    if kind == "object":
        _check_object(n, value, name, report)


def _check_string(n: Node, value: str, name: str, report: _Report) -> None:
    if n.max_length is not None and len(value) > n.max_length:
        unit = "byte" if n.max_length == 1 else "bytes"
        report.add(
            FieldErrorType.TOO_LONG, name, value, f"may not be more than {n.max_length} {unit}"
        )
    elif n.min_length is not None and len(value) < n.min_length:
        report.add(
            FieldErrorType.INVALID,
            name,
            value,
            f"{name} in body should be at least {n.min_length} chars long",
        )
    elif n.pattern and n.pattern_re is not None and n.pattern_re.search(value) is None:
        report.add(
            FieldErrorType.INVALID, name, value, f"{name} in body should match '{n.pattern}'"
        )
    if n.fmt_check is not None and not n.fmt_check(value):
        _type_error(report, name, n.fmt, value)


def _check_number(n: Node, value: float | int, kind: str, name: str, report: _Report) -> None:
    as_int = kind == "integer"
    factor = n.multiple_of
    if factor is not None:
        if as_int and int(factor) != 0:
            f = int(factor)
            if f < 0:
                _bad_factor(report, name, f)
            elif value % f:
                _not_multiple(report, name, go_number(f), value)
        elif factor < 0:
            _bad_factor(report, name, factor)
        else:
            mult = value / factor if factor >= 1 else 1 / factor * value
            if not (mult == mult and abs(mult) <= 2**53 and float(mult).is_integer()):
                _not_multiple(report, name, go_number(float(factor)), value)
    if n.maximum is not None:
        limit: float | int = int(n.maximum) if as_int else float(n.maximum)
        if value > limit or (n.exclusive_maximum and value == limit):
            word = "less than" if n.exclusive_maximum else "less than or equal to"
            report.add(
                FieldErrorType.INVALID,
                name,
                value,
                f"{name} in body should be {word} {go_number(limit)}",
            )
    if n.minimum is not None:
        limit = int(n.minimum) if as_int else float(n.minimum)
        if value < limit or (n.exclusive_minimum and value == limit):
            word = "greater than" if n.exclusive_minimum else "greater than or equal to"
            report.add(
                FieldErrorType.INVALID,
                name,
                value,
                f"{name} in body should be {word} {go_number(limit)}",
            )


def _bad_factor(report: _Report, name: str, factor: float | int) -> None:
    report.add(
        FieldErrorType.INVALID,
        name,
        factor,
        f"factor MultipleOf declared for {name} must be positive: {go_number(factor)}",
    )


def _not_multiple(report: _Report, name: str, factor: str, value: float | int) -> None:
    report.add(
        FieldErrorType.INVALID, name, value, f"{name} in body should be a multiple of {factor}"
    )


def _check_array(n: Node, value: list[Any], name: str, report: _Report) -> None:
    items = n.items
    if items is not None:
        for i, item in enumerate(value):
            _check(items, item, f"{name}[{i}]", report)
    size = len(value)
    if n.min_items is not None and size < n.min_items:
        report.add(
            FieldErrorType.INVALID,
            name,
            size,
            f"{name} in body should have at least {n.min_items} items",
        )
    if n.max_items is not None and size > n.max_items:
        word = "item" if n.max_items == 1 else "items"
        report.add(FieldErrorType.TOO_MANY, name, size, f"must have at most {n.max_items} {word}")
    if n.unique_items:
        seen: list[Any] = []
        for item in value:
            if any(_json_equal(item, s) for s in seen):
                report.add(
                    FieldErrorType.INVALID, name, "", f"{name} in body shouldn't contain duplicates"
                )
                break
            seen.append(item)


def _json_equal(a: Any, b: Any) -> bool:
    """Deep equality that, like Go's DeepEqual on decoded JSON, keeps bool/int/float apart."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _enum_matches(value: Any, option: Any) -> bool:
    if _json_equal(value, option):
        return True
    # Go converts numbers between int64 and float64 before comparing (truncating floats).
    if isinstance(value, bool) or isinstance(option, bool):
        return False
    if isinstance(value, int) and isinstance(option, float):
        return float(value) == option
    if isinstance(value, float) and isinstance(option, int):
        return value == value and abs(value) < 2**63 and int(value) == option
    return False


def _check_enum(n: Node, value: Any, name: str, report: _Report) -> None:
    assert n.enum is not None
    if any(_enum_matches(value, option) for option in n.enum):
        return
    _enum_error(n, value, name, report)


def _enum_error(n: Node, value: Any, name: str, report: _Report) -> None:
    assert n.enum is not None
    shown = [
        v if isinstance(v, str) else orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()
        for v in n.enum
    ]
    report.errors.append(FieldError.not_supported(report.field(name), shown_value(value), shown))


def _check_object(n: Node, value: Mapping[str, Any], name: str, report: _Report) -> None:
    count = len(value)
    if n.min_properties is not None and count < n.min_properties:
        report.add(
            FieldErrorType.INVALID,
            name,
            n.min_properties,
            f"{name} in body should have at least {n.min_properties} properties",
        )
        return
    if n.max_properties is not None and count > n.max_properties:
        word = "item" if n.max_properties == 1 else "items"
        report.add(
            FieldErrorType.TOO_MANY, name, count, f"must have at most {n.max_properties} {word}"
        )
        return
    props = n.properties
    if n.additional_allows is False:
        for key in value:
            if (props is None or key not in props) and key not in ("$schema", "id"):
                report.add(
                    FieldErrorType.INVALID,
                    name,
                    key,
                    f"{name}.{key} in body is a forbidden property",
                )
    elif n.additional is not None:
        additional = n.additional
        for key, item in value.items():
            if props is None or key not in props:
                _check(additional, item, f"{name}.{key}", report)
    if props:
        for key, child in props.items():
            if key in value:
                _check(child, value[key], f"{name}.{key}" if name else key, report)
    for key in n.required:
        if key not in value:
            report.errors.append(FieldError.required(report.field(f"{name}.{key}")))


def _check_junctors(n: Node, value: Any, name: str, report: _Report) -> None:
    """allOf / anyOf / oneOf / not: their failures are reported at the validation root."""
    where = report.field("") if report.prefix is not None else "<nil>"

    def run(sub: Node) -> list[FieldError]:
        inner = _Report(report.prefix)
        _check(sub, value, name, inner)
        return inner.errors

    if n.any_of:
        best: list[FieldError] | None = None
        for sub in n.any_of:
            errs = run(sub)
            if not errs:
                best = None
                break
            if best is None or len(errs) < len(best):
                best = errs
        else:
            report.errors.append(
                FieldError.invalid(
                    where, "", f"{go_quote(name)} must validate at least one schema (anyOf)"
                )
            )
        if best:
            report.errors.extend(best)
    if n.one_of:
        valid, best = 0, None
        for sub in n.one_of:
            errs = run(sub)
            if not errs:
                valid += 1
                best = None
            elif valid == 0 and (best is None or len(errs) < len(best)):
                best = errs
        if valid != 1:
            extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            report.errors.append(
                FieldError.invalid(
                    where,
                    "",
                    f"{go_quote(name)} must validate one and only one schema (oneOf). {extra}",
                )
            )
            if best:
                report.errors.extend(best)
    if n.all_of:
        passed = 0
        for sub in n.all_of:
            errs = run(sub)
            passed += not errs
            report.errors.extend(errs)
        if passed != len(n.all_of):
            extra = ". None validated" if passed == 0 else ""
            report.errors.append(
                FieldError.invalid(
                    where, "", f"{go_quote(name)} must validate all the schemas (allOf){extra}"
                )
            )
    if n.not_ is not None and not run(n.not_):
        report.errors.append(
            FieldError.invalid(where, "", f"{go_quote(name)} must not validate the schema (not)")
        )


# -- the steps in order ------------------------------------------------------------------------


def is_blocking(errors: list[FieldError]) -> bool:
    """Whether any error keeps the server from running CEL rules (type, required, enum,
    maxLength/maxItems/maxProperties violations)."""
    return any(e.type in _BLOCKING for e in errors)


def validate_against(n: Node, value: Any, prefix: str | None, name: str = "") -> list[FieldError]:
    """The OpenAPI (value) errors of `value` against a compiled node: field paths start at
    `prefix` (None for an object root) and messages name fields relative to `name`."""
    report = _Report(prefix)
    _check(n, value, name, report)
    return report.errors


def validate(
    obj: Any, schema: Mapping[str, Any], *, old: Any = None, path: str = ""
) -> list[FieldError]:
    """Validate a custom resource (or, with `path`, a value inside one) against its schema,
    reporting what the API server reports. `old` enables transition rules on update."""
    n = node_of(schema)
    errors = validate_against(n, obj, None, path)
    if n.deep_ext:
        meta_errs: list[FieldError] = []
        list_errs: list[FieldError] = []
        check_extensions(n, obj, path, meta_errs, list_errs)
        errors.extend(meta_errs)
        errors.extend(list_errs)
    if n.deep_rules:
        if is_blocking(errors):
            errors.append(FieldError.invalid("<nil>", "null", BLOCKING_SKIPPED))
        else:
            errors.extend(rule_errors(n, obj, old, path, root=not path))
    return errors


def validate_update(new: Any, old: Any, schema: Mapping[str, Any]) -> list[FieldError]:
    """Validate an update: the new object, with transition rules comparing to `old`."""
    return validate(new, schema, old=old)
