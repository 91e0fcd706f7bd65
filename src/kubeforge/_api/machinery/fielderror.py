"""Field errors: one problem at one path of an object, phrased as the API server phrases it."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "FieldError",
    "FieldErrorType",
    "format_value",
    "invalid_details",
    "invalid_message",
    "join_path",
]


class FieldErrorType(enum.Enum):
    """The kind of a field error; the value is the `type` of a Status cause."""

    REQUIRED = "FieldValueRequired"
    INVALID = "FieldValueInvalid"
    TYPE_INVALID = "FieldValueTypeInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    DUPLICATE = "FieldValueDuplicate"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    NOT_FOUND = "FieldValueNotFound"
    INTERNAL = "InternalError"

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    FieldErrorType.REQUIRED: "Required value",
    FieldErrorType.INVALID: "Invalid value",
    FieldErrorType.TYPE_INVALID: "Invalid value",
    FieldErrorType.NOT_SUPPORTED: "Unsupported value",
    FieldErrorType.FORBIDDEN: "Forbidden",
    FieldErrorType.DUPLICATE: "Duplicate value",
    FieldErrorType.TOO_LONG: "Too long",
    FieldErrorType.TOO_MANY: "Too many",
    FieldErrorType.NOT_FOUND: "Not found",
    FieldErrorType.INTERNAL: "Internal error",
}

# Error types whose message never repeats the offending value.
_NO_VALUE = {
    FieldErrorType.REQUIRED,
    FieldErrorType.FORBIDDEN,
    FieldErrorType.TOO_LONG,
    FieldErrorType.INTERNAL,
}

_MISSING = object()


def format_value(value: Any) -> str:
    """Render a value the way Kubernetes quotes it in error messages."""
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    return str(value)


def join_path(parent: str, child: str | int) -> str:
    """Extend a field path: `spec` + `replicas` -> `spec.replicas`, + 0 -> `spec[0]`."""
    if isinstance(child, int):
        return f"{parent}[{child}]"
    if not parent:
        return child
    return f"{parent}.{child}"


@dataclass(frozen=True)
class FieldError:
    """A validation problem at `field`, a dotted path like `spec.template.spec.containers[0]`."""

    type: FieldErrorType
    field: str
    detail: str = ""
    value: Any = _MISSING

    @classmethod
    def required(cls, field: str, detail: str = "") -> FieldError:
        return cls(FieldErrorType.REQUIRED, field, detail)

    @classmethod
    def invalid(cls, field: str, value: Any, detail: str) -> FieldError:
        return cls(FieldErrorType.INVALID, field, detail, value)

    @classmethod
    def type_invalid(cls, field: str, value: Any, detail: str) -> FieldError:
        return cls(FieldErrorType.TYPE_INVALID, field, detail, value)

    @classmethod
    def not_supported(cls, field: str, value: Any, supported: Iterable[Any]) -> FieldError:
        options = ", ".join(format_value(v) for v in supported)
        return cls(FieldErrorType.NOT_SUPPORTED, field, f"supported values: {options}", value)

    @classmethod
    def forbidden(cls, field: str, detail: str) -> FieldError:
        return cls(FieldErrorType.FORBIDDEN, field, detail)

    @classmethod
    def duplicate(cls, field: str, value: Any) -> FieldError:
        return cls(FieldErrorType.DUPLICATE, field, "", value)

    @classmethod
    def too_long(cls, field: str, max_length: int) -> FieldError:
        return cls(FieldErrorType.TOO_LONG, field, f"may not be more than {max_length} bytes")

    @classmethod
    def too_many(cls, field: str, actual: int, limit: int) -> FieldError:
        return cls(FieldErrorType.TOO_MANY, field, f"must have at most {limit} items", actual)

    def body(self) -> str:
        """The message without the field path (what a Status cause carries)."""
        text = self.type.label
        if self.type not in _NO_VALUE and self.value is not _MISSING:
            text += f": {format_value(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> dict[str, str]:
        """This error as a `details.causes` entry of a Status."""
        return {"type": self.type.value, "message": self.body(), "field": self.field}


def invalid_message(group: str, kind: str, name: str, errors: Sequence[FieldError]) -> str:
    """The message of a 422 Invalid answer: `Machine.example.com "m1" is invalid: <errors>`,
    one error as is, several in brackets (apimachinery's NewInvalid)."""
    summary = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(map(str, errors)) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return f'{qualified} "{name}" is invalid: {summary}'


def invalid_details(
    group: str, kind: str, name: str, errors: Sequence[FieldError]
) -> dict[str, Any]:
    """The `details` of a 422 Invalid answer: the object and one cause per field error."""
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [e.cause() for e in errors]
    return details
