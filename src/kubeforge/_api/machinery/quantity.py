"""Resource quantities ("500m", "1.5Gi", "2e3"): their exact value as a Decimal."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["decode_quantity", "parse_quantity"]

_NUMBER = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)\Z")
_EXPONENT = re.compile(r"^[eE][+-]?[0-9]+\Z")
_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}


def parse_quantity(value: Any) -> Decimal | None:
    """The exact value of a quantity in base units (a string or a JSON number), or None
    when `value` is not one. Surrounding whitespace is not part of a quantity
    (resource.ParseQuantity, as CEL's `quantity()` reads one)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _NUMBER.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    number, suffix = match.groups()
    try:
        if suffix in _SUFFIXES:
            return Decimal(number) * _SUFFIXES[suffix]
        if _EXPONENT.match(suffix):
            return Decimal(number) * Decimal(10) ** int(suffix[1:])
    except InvalidOperation:
        return None
    return None


def decode_quantity(value: Any) -> Decimal | None:
    """A quantity field's value as the server decodes it from JSON, where surrounding
    whitespace is trimmed first (Quantity.UnmarshalJSON); None when it is not a quantity."""
    return parse_quantity(value.strip() if isinstance(value, str) else value)
