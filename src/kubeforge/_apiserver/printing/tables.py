"""Table responses (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`) for `kubectl get`.

Three convertors decide the columns: the built-in printers (`printers.py`), a CRD version's
`additionalPrinterColumns` evaluated with JSONPath, and the default `Name`/`Created At` pair
for every other kind. The row's `object` follows `includeObject`: `Metadata` (the default)
embeds a PartialObjectMetadata, `Object` the whole object, `None` nothing.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, Final, Protocol

import orjson

from kubeforge import clock
from kubeforge._api.machinery.access import name_of
from kubeforge._api.machinery.durations import human_duration
from kubeforge._api.machinery.jsonpath import JSONPath, JSONPathError, compile_path
from kubeforge._api.machinery.timestamps import format_time, parse_time
from kubeforge._apiserver.printing.columns import NAME, Column, Printer
from kubeforge._apiserver.printing.printers import printer_for
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.types.resource import ResourceType

__all__ = ["INCLUDE_OBJECT_VALUES", "TABLE_VERSIONS", "column_definitions", "to_table"]

INCLUDE_OBJECT_VALUES: Final = ("Metadata", "Object", "None")
TABLE_VERSIONS: Final = ("v1", "v1beta1")

_ZERO_TIME: Final = "0001-01-01T00:00:00Z"
_CREATED_AT: Final = Column(
    "Created At", "date", "When the object was created (metadata.creationTimestamp), in UTC."
)
_DEFAULT_COLUMNS: Final = (NAME, _CREATED_AT)


class _Convertor(Protocol):
    def definitions(self) -> list[dict[str, Any]]: ...

    def row(
        self, obj: Mapping[str, Any], now: datetime
    ) -> tuple[list[Any], list[dict[str, Any]] | None]: ...


class _PrinterConvertor:
    __slots__ = ("printer",)

    def __init__(self, printer: Printer) -> None:
        self.printer = printer

    def definitions(self) -> list[dict[str, Any]]:
        return self.printer.definitions()

    def row(
        self, obj: Mapping[str, Any], now: datetime
    ) -> tuple[list[Any], list[dict[str, Any]] | None]:
        conditions = self.printer.conditions
        return self.printer.cells(obj, now), conditions(obj) if conditions else None


class _DefaultConvertor:
    """Name and creation time (RFC 3339, UTC): what kinds without a printer show."""

    __slots__ = ()

    def definitions(self) -> list[dict[str, Any]]:
        return [c.definition() for c in _DEFAULT_COLUMNS]

    def row(
        self, obj: Mapping[str, Any], now: datetime
    ) -> tuple[list[Any], list[dict[str, Any]] | None]:
        meta = obj.get("metadata")
        created = meta.get("creationTimestamp") if isinstance(meta, Mapping) else None
        return [name_of(obj), _utc_timestamp(created)], None


def _utc_timestamp(value: Any) -> str:
    if not isinstance(value, str) or not value:
        return _ZERO_TIME
    if len(value) == 20 and value.endswith("Z"):
        return value  # already whole seconds in UTC, the stored form
    try:
        return format_time(parse_time(value))
    except ValueError:
        return _ZERO_TIME


# ---------------------------------------------------------------------------------------------
# CustomResourceDefinition printer columns

_DEFAULT_CRD_COLUMNS: Final = (
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


class _CrdConvertor:
    """`Name` plus each printer column, cells found by JSONPath and converted by type."""

    __slots__ = ("_definitions", "columns", "source")

    def __init__(self, printer_columns: Sequence[Mapping[str, Any]]) -> None:
        self.source = printer_columns
        self.columns: list[tuple[str, JSONPath]] = []
        definitions = [NAME.definition()]
        for col in printer_columns or _DEFAULT_CRD_COLUMNS:
            path = str(col.get("jsonPath") or "")
            try:
                compiled = compile_path(path)
            except JSONPathError:
                break  # Kubernetes keeps the columns before an unparsable one
            self.columns.append((str(col.get("type") or "string"), compiled))
            definitions.append(
                {
                    "name": str(col.get("name") or ""),
                    "type": str(col.get("type") or ""),
                    "format": str(col.get("format") or ""),
                    "description": str(col.get("description") or "")
                    or f"Custom resource definition column (in JSONPath format): {path}",
                    "priority": int(col.get("priority") or 0),
                }
            )
        self._definitions = definitions

    def definitions(self) -> list[dict[str, Any]]:
        return [dict(d) for d in self._definitions]

    def row(
        self, obj: Mapping[str, Any], now: datetime
    ) -> tuple[list[Any], list[dict[str, Any]] | None]:
        cells: list[Any] = [name_of(obj)]
        for kind, path in self.columns:
            found = path.find(obj)
            cells.append(_crd_cell(kind, found[0], now) if found else None)
        return cells, None


def _crd_cell(kind: str, value: Any, now: datetime) -> Any:
    """Convert the first JSONPath match for a column of the given OpenAPI type."""
    if kind == "string":
        return _as_text(value)
    if value is None:
        return None
    if kind == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and math.isfinite(value):
            return int(value)
        return None
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date":
        if not isinstance(value, str):
            return None
        if value in ("", "null"):
            return "<unknown>"
        try:
            then = parse_time(value)
        except ValueError:
            return "<invalid>"
        return human_duration((now - then).total_seconds())
    return None


def _as_text(value: Any) -> str:
    """Print a JSON value as a string column does: scalars plainly, containers as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return "<no value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _go_float(value: float) -> str:
    """The shortest form of a float with an exponent outside [-4, 6), e.g. 1e+06, 0.5."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    exponent += len(digits) - len(text)  # account for the zeros stripped
    point = len(text) + exponent  # digits before the decimal point
    x = point - 1
    prefix = "-" if sign else ""
    if x < -4 or x >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{prefix}{text}{'0' * (point - len(text))}"
    return f"{prefix}{text[:point]}.{text[point:]}"


# ---------------------------------------------------------------------------------------------
# Choosing the convertor

_DEFAULT: Final = _DefaultConvertor()
_crd_convertors: weakref.WeakKeyDictionary[ResourceType, _CrdConvertor] = (
    weakref.WeakKeyDictionary()
)


def _convertor(rt: ResourceType) -> _Convertor:
    if rt.is_crd:
        cached = _crd_convertors.get(rt)
        if cached is None or cached.source is not rt.printer_columns:
            cached = _crd_convertors[rt] = _CrdConvertor(rt.printer_columns)
        return cached
    printer = printer_for(rt.group, rt.kind)
    return _PrinterConvertor(printer) if printer is not None else _DEFAULT


def column_definitions(rt: ResourceType) -> list[dict[str, Any]]:
    """The `columnDefinitions` a Table of this resource carries."""
    return _convertor(rt).definitions()


def _include_mode(include_object: str | None) -> str:
    if not include_object:
        return "Metadata"
    if include_object not in INCLUDE_OBJECT_VALUES:
        raise StatusError.bad_request(f'unrecognized includeObject value: "{include_object}"')
    return include_object


def to_table(
    rt: ResourceType,
    objects: Sequence[Mapping[str, Any]],
    *,
    include_object: str = "Metadata",
    table_version: str = "v1",
    no_headers: bool = False,
    resource_version: str | None = None,
    continue_token: str | None = None,
    remaining: int | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Build a `meta.k8s.io/<table_version>` Table of `objects` (in their served version).

    `no_headers` leaves `columnDefinitions` null, as for watch events after the first.
    Raises StatusError (400) for an unknown `include_object`.
    """
    mode = _include_mode(include_object)
    if table_version not in TABLE_VERSIONS:
        raise ValueError(f"unsupported Table version {table_version!r}")
    api_version = f"meta.k8s.io/{table_version}"
    moment = now or clock.now()
    convertor = _convertor(rt)
    rows: list[dict[str, Any]] = []
    for obj in objects:
        cells, conditions = convertor.row(obj, moment)
        row: dict[str, Any] = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        if mode == "Metadata":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": api_version,
                "metadata": obj.get("metadata") or {},
            }
        elif mode == "Object":
            row["object"] = obj
        rows.append(row)
    metadata: dict[str, Any] = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_token:
        metadata["continue"] = continue_token
    if remaining is not None:
        metadata["remainingItemCount"] = remaining
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": metadata,
        "columnDefinitions": None if no_headers else convertor.definitions(),
        "rows": rows,
    }
