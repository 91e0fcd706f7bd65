"""Resource quantities: exact values, and JSON decoding's whitespace trimming."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from kubeforge._api.machinery.quantity import decode_quantity, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", "0.5"),
        ("1Gi", str(2**30)),
        ("2e3", "2000"),
        ("1.5k", "1500"),
        (3, "3"),
        ("x", None),
        ("1Q", None),
    ],
)
def test_decode_quantity(text: Any, value: str | None) -> None:
    assert decode_quantity(text) == (None if value is None else Decimal(value))


def test_only_decoding_trims_surrounding_whitespace() -> None:
    assert decode_quantity(" 1Gi\n") == 2**30
    assert parse_quantity(" 1Gi\n") is None
