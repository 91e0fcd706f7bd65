"""How Go's encoding/json names JSON values in its errors, which the server's decoding errors
repeat word for word (clients and tests match on them)."""

from __future__ import annotations

from typing import Any


def json_kind(value: Any) -> str:
    """The kind an UnmarshalTypeError gives a decoded JSON value: bool, number, string,
    array or object."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
