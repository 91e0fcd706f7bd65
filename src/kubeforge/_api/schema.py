"""Python types -> structural OpenAPI v3 schemas, as controller-gen derives them from Go types.

    schema_of(list[str])                  # {"type": "array", "items": {"type": "string"}}
    schema_for_model(Machine)             # the openAPIV3Schema of the Machine CRD

Scalars map to JSON types (`str` string, `int` integer, `float` number, `bool` boolean,
`datetime` date-time and `date` date strings, `bytes` base64 strings, `UUID` uuid strings).
Python has no integer widths, so integers carry no `format: int32/int64`. A `timedelta`
is a `number`: `kubeforge.Model` writes durations as seconds. `Any`, `object` and value-less
dicts keep whatever they hold (`x-kubernetes-preserve-unknown-fields`); `list`, `tuple[T, ...]`
and `set` are arrays (sets as list-type `set`); `dict[str, T]` maps; `Literal` and `Enum`
types are enums; `int | str` is int-or-string; `X | None` makes a field optional.

Models are objects keyed by their JSON (camelCase) names. A field without a Python default is
required unless marked `Optional()` (or typed `X | None`); `Required()` makes any field
required. A Python default becomes the schema `default` (models as their JSON form with
defaulted fields left to the nested schema, enums as values); `None` and empty lists, sets
and dicts give no default, the way `omitempty` fields have none. Descriptions come from the
field's docstring or `Field(description=)`, otherwise from the field type's docstring.
`Annotated` markers and pydantic constraints (`ge`, `max_length`, `pattern` ...) then apply
in order, and `@on_class(...)` of a model class apply to its object schema.
"""

from __future__ import annotations

import copy
import datetime as dt
import enum
import inspect
import types
import uuid
from collections import abc
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticSerializationError, PydanticUndefined, to_jsonable_python

from kubeforge._api import markers as mk
from kubeforge._api.machinery import definitions
from kubeforge._api.meta import ObjectMeta, ResourceInfo

__all__ = [
    "API_VERSION_DESCRIPTION",
    "KIND_DESCRIPTION",
    "SchemaError",
    "schema_for_model",
    "schema_of",
]

API_VERSION_DESCRIPTION = (
    "APIVersion defines the versioned schema of this representation of an object.\n"
    "Servers should convert recognized schemas to the latest internal value, and\n"
    "may reject unrecognized values.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#resources"
)
KIND_DESCRIPTION = (
    "Kind is a string value representing the REST resource this object represents.\n"
    "Servers may infer this from the endpoint the client submits requests to.\n"
    "Cannot be updated.\n"
    "In CamelCase.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds"
)

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_NONE = type(None)
_UNIONS = (Union, types.UnionType)
_LISTS = (list, tuple, abc.Sequence, abc.MutableSequence, abc.Iterable, abc.Collection)
_SETS = (set, frozenset, abc.Set, abc.MutableSet)
_MAPS = (dict, abc.Mapping, abc.MutableMapping)
# Checked in order: bool is an int and datetime a date.
_SCALARS: tuple[tuple[type, dict[str, Any]], ...] = (
    (bool, {"type": "boolean"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (str, {"type": "string"}),
    (bytes, {"type": "string", "format": "byte"}),
    (dt.datetime, {"type": "string", "format": "date-time"}),
    (dt.date, {"type": "string", "format": "date"}),
    (dt.timedelta, {"type": "number"}),
    (uuid.UUID, {"type": "string", "format": "uuid"}),
)
_STANDARD_META: dict[str, dict[str, Any]] = {
    "api_version": {"description": API_VERSION_DESCRIPTION, "type": "string"},
    "kind": {"description": KIND_DESCRIPTION, "type": "string"},
    "metadata": {"type": "object"},
}


class SchemaError(TypeError):
    """A Python type that has no structural schema (an arbitrary union, a recursive model ...)."""


def schema_of(tp: Any) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of a Python type (a fresh dict)."""
    return _Builder().schema(tp)


def schema_for_model(
    cls: type[BaseModel], *, embedded_object_meta: bool | None = None
) -> dict[str, Any]:
    """The object schema of a model class; for a Resource class, its CRD's openAPIV3Schema.

    ObjectMeta below the root is a bare object, or with `embedded_object_meta` (by default
    what the class's `@resource(embedded_object_meta=)` says) lists the fields controller-gen's
    `crd:generateEmbeddedObjectMeta=true` keeps. The root's metadata is always bare: the API
    server owns its schema.
    """
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        raise TypeError(f"{cls!r} is not a model class")
    if embedded_object_meta is None:
        info = getattr(cls, "__kubeforge__", None)
        embedded_object_meta = isinstance(info, ResourceInfo) and info.embedded_object_meta
    return _Builder(embedded_object_meta).schema(cls)


class _Builder:
    """One schema derivation; `stack` holds the models being expanded, to refuse recursion."""

    def __init__(self, embedded_object_meta: bool = False) -> None:
        self.stack: list[type[BaseModel]] = []
        self.embedded_object_meta = embedded_object_meta

    def object_meta(self) -> dict[str, Any]:
        """The schema of ObjectMeta below the root (the root's is _STANDARD_META's)."""
        if self.embedded_object_meta:
            return copy.deepcopy(definitions.EMBEDDED_OBJECT_META)
        # The API server owns the schema of object metadata, as with controller-gen.
        return {"type": "object"}

    def schema(self, tp: Any) -> dict[str, Any]:
        origin = get_origin(tp)
        if origin is Annotated:
            base, *meta = get_args(tp)
            return self.annotated(base, meta)
        if tp is Any or tp is object:
            return {_PRESERVE: True}
        if origin in _UNIONS:
            return self.union(tp)
        if origin is Literal:
            return _enum_schema(list(get_args(tp)), tp)
        supertype = getattr(tp, "__supertype__", None)  # typing.NewType
        if supertype is not None:
            return self.schema(supertype)
        if isinstance(tp, type) and origin is None:
            return self.plain(tp)
        if origin is not None:
            return self.generic(tp, origin, get_args(tp))
        raise SchemaError(f"{tp!r} has no OpenAPI schema")

    def plain(self, tp: type) -> dict[str, Any]:
        if issubclass(tp, enum.Enum):
            schema = _enum_schema([m.value for m in tp], tp)
            doc = _doc(tp)
            if doc:
                schema["description"] = doc
            return schema
        if issubclass(tp, BaseModel):
            return self.model(tp)
        for base, scalar in _SCALARS:
            if issubclass(tp, base):
                return dict(scalar)
        if tp in _MAPS:
            return {"type": "object", _PRESERVE: True}
        if tp in _LISTS or tp in _SETS:
            return self.generic(tp, tp, ())
        raise SchemaError(f"{tp.__qualname__} has no OpenAPI schema")

    def annotated(self, base: Any, meta: Iterable[Any]) -> dict[str, Any]:
        meta = list(meta)
        try:
            schema = self.schema(base)
        except SchemaError:
            if not any(isinstance(m, mk.Schemaless) for m in meta):
                raise
            schema = {}
        _apply(schema, meta)
        return schema

    def union(self, tp: Any) -> dict[str, Any]:
        members = [a for a in get_args(tp) if a is not _NONE]
        if len(members) == 1:
            return self.schema(members[0])
        bare = {_strip(a) for a in members}
        if bare == {int, str}:
            return {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            }
        if bare == {int, float}:
            return {"type": "number"}
        raise SchemaError(
            f"{tp!r}: a structural schema has one type per field; only `X | None` and "
            "`int | str` unions are supported (mark the field Schemaless() to accept anything)"
        )

    def generic(self, tp: Any, origin: Any, args: tuple[Any, ...]) -> dict[str, Any]:
        if origin in _MAPS:
            key, value = args if len(args) == 2 else (str, Any)
            if _strip(key) is not str and _enum_type(key) != "string":
                raise SchemaError(f"{tp!r}: map keys must be strings")
            if value is Any or value is object:
                return {"type": "object", _PRESERVE: True}
            return {"type": "object", "additionalProperties": self.schema(value)}
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            raise SchemaError(f"{tp!r}: fixed-length tuples have no schema; use tuple[T, ...]")
        if origin in _LISTS or origin in _SETS:
            item = args[0] if args else Any
            schema: dict[str, Any] = {"type": "array", "items": self.schema(item)}
            if origin in _SETS:
                schema["x-kubernetes-list-type"] = "set"
            return schema
        raise SchemaError(f"{tp!r} has no OpenAPI schema")

    def model(self, cls: type[BaseModel]) -> dict[str, Any]:
        definition = getattr(cls, "__kubeforge_definition__", None)
        if isinstance(definition, str):
            return definitions.structural(
                definition, embedded_object_meta=self.embedded_object_meta
            )
        if issubclass(cls, ObjectMeta):
            return self.object_meta()
        if cls in self.stack:
            chain = " -> ".join(c.__qualname__ for c in [*self.stack, cls])
            raise SchemaError(
                f"{cls.__qualname__} contains itself ({chain}); CRD schemas cannot describe "
                "recursive types (mark the field Schemaless() to accept anything there)"
            )
        self.stack.append(cls)
        try:
            return self.object(cls)
        finally:
            self.stack.pop()

    def object(self, cls: type[BaseModel]) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object"}
        doc = _doc(cls)
        if doc:
            schema["description"] = doc
        # A Resource says so with a class flag (set on the base class, so every kind inherits
        # it): this module derives schemas for any model and does not depend on resource.py.
        is_resource = getattr(cls, "__kubeforge_object__", False) is True
        props: dict[str, Any] = {}
        required: list[str] = []
        for name, info in cls.model_fields.items():
            if info.exclude is True or info.annotation in (None, _NONE):
                continue
            key = info.serialization_alias or info.alias or name
            if is_resource and name in _STANDARD_META:
                nested = len(self.stack) > 1  # an object embedded in another one
                if nested and name == "metadata":
                    props[key] = self.object_meta()
                else:
                    props[key] = dict(_STANDARD_META[name])
                continue
            try:
                props[key], needed = self.field(cls, info)
            except SchemaError as err:
                raise SchemaError(f"{cls.__qualname__}.{name}: {err}") from None
            if needed:
                required.append(key)
        if props:
            schema["properties"] = props
        if required:
            schema["required"] = sorted(required)
        try:
            _apply(schema, getattr(cls, "__kubeforge_markers__", ()))
        except SchemaError as err:
            raise SchemaError(f"{cls.__qualname__}: {err}") from None
        return schema

    def field(self, owner: type[BaseModel], info: FieldInfo) -> tuple[dict[str, Any], bool]:
        """(schema, whether the field is required) of one model field."""
        annotation = info.annotation
        meta = list(info.metadata)
        try:
            schema = self.schema(annotation)
        except SchemaError:
            if not any(isinstance(m, mk.Schemaless) for m in meta):
                raise
            schema = {}
        if info.description:
            schema["description"] = inspect.cleandoc(info.description)
        if not _is_object_meta(annotation):
            default = _default(owner, info)
            if default is not _MISSING:
                schema["default"] = default
        _apply(schema, meta)
        required = info.is_required() and not _allows_none(annotation)
        for marker in [*_markers_within(annotation), *meta]:
            if isinstance(marker, mk.Required):
                required = True
            elif isinstance(marker, mk.Optional):
                required = False
        return schema, required


# Helpers -------------------------------------------------------------------------------------


class _Missing:
    pass


_MISSING = _Missing()


def _doc(tp: type) -> str:
    """A class's own docstring (not an inherited one), cleaned of indentation."""
    doc = tp.__dict__.get("__doc__")
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def _strip(tp: Any) -> Any:
    """The type inside `Annotated[...]` layers."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _allows_none(tp: Any) -> bool:
    tp = _strip(tp)
    origin = get_origin(tp)
    if origin in _UNIONS:
        return any(_allows_none(a) for a in get_args(tp))
    if origin is Literal:
        return None in get_args(tp)
    return tp is None or tp is _NONE


def _is_object_meta(tp: Any) -> bool:
    tp = _strip(tp)
    if get_origin(tp) in _UNIONS:
        members = [a for a in get_args(tp) if a is not _NONE]
        tp = _strip(members[0]) if len(members) == 1 else None
    return isinstance(tp, type) and issubclass(tp, ObjectMeta)


def _markers_within(tp: Any) -> list[Any]:
    """Metadata of `Annotated` layers inside a field type (`Annotated[int, Required()] | None`)."""
    found: list[Any] = []
    if get_origin(tp) is Annotated:
        base, *meta = get_args(tp)
        found.extend(meta)
        found.extend(_markers_within(base))
    elif get_origin(tp) in _UNIONS:
        for member in get_args(tp):
            found.extend(_markers_within(member))
    return found


def _json_type(values: list[Any]) -> str | None:
    kinds = set()
    for value in values:
        if isinstance(value, bool):
            kinds.add("boolean")
        elif isinstance(value, int):
            kinds.add("integer")
        elif isinstance(value, float):
            kinds.add("number")
        elif isinstance(value, str):
            kinds.add("string")
        else:
            return None
    if kinds == {"integer", "number"}:
        return "number"
    return kinds.pop() if len(kinds) == 1 else None


def _enum_type(tp: Any) -> str | None:
    """The JSON type of a Literal or Enum type's values (None for other types)."""
    tp = _strip(tp)
    if get_origin(tp) is Literal:
        return _json_type([_plain_value(v) for v in get_args(tp) if v is not None])
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _json_type([m.value for m in tp])
    return None


def _plain_value(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _enum_schema(values: list[Any], tp: Any) -> dict[str, Any]:
    values = [_plain_value(v) for v in values if v is not None]
    kind = _json_type(values)
    if kind is None or not values:
        raise SchemaError(f"{tp!r}: enum values must all be strings, all numbers or all booleans")
    return {"type": kind, "enum": values}


def _apply(schema: dict[str, Any], meta: Iterable[Any]) -> None:
    """Apply markers, annotated-types constraints and pydantic Field metadata in order.

    A marker or constraint that does not fit the schema's type (a length on an integer, a
    minimum on a string ...) is an error, as controller-gen makes it.
    """
    for item in meta:
        if isinstance(item, mk.Marker):
            problem = item.misfit(schema)
            if problem is not None:
                raise SchemaError(problem)
            try:
                item.apply(schema)
            except ValueError as exc:
                raise SchemaError(str(exc)) from None
        elif isinstance(item, FieldInfo):
            if item.description:
                schema["description"] = inspect.cleandoc(item.description)
            _apply(schema, item.metadata)
        elif isinstance(item, at.GroupedMetadata):
            _apply(schema, item)
        else:
            _constraint(schema, item)


_NUMBERS = ("integer", "number")


def _fits(schema: dict[str, Any], item: Any, types: tuple[str, ...], noun: str) -> None:
    kind = schema.get("type")
    if kind not in types and not (noun == "strings" and schema.get("x-kubernetes-int-or-string")):
        found = f"a {kind}" if kind else "an untyped value"
        raise SchemaError(f"the constraint {item!r} applies to {noun}, not to {found}")


def _constraint(schema: dict[str, Any], item: Any) -> None:
    kind = schema.get("type")
    if isinstance(item, at.Ge | at.Gt | at.Le | at.Lt | at.MultipleOf):
        _fits(schema, item, _NUMBERS, "numbers")
    elif isinstance(item, at.MinLen | at.MaxLen):
        _fits(schema, item, ("string", "array", "object"), "strings, lists and maps")
    elif isinstance(getattr(item, "pattern", None), str):
        _fits(schema, item, ("string",), "strings")
    if isinstance(item, at.Ge):
        schema["minimum"] = item.ge
    elif isinstance(item, at.Gt):
        schema["minimum"] = item.gt
        schema["exclusiveMinimum"] = True
    elif isinstance(item, at.Le):
        schema["maximum"] = item.le
    elif isinstance(item, at.Lt):
        schema["maximum"] = item.lt
        schema["exclusiveMaximum"] = True
    elif isinstance(item, at.MultipleOf):
        schema["multipleOf"] = item.multiple_of
    elif isinstance(item, at.MinLen | at.MaxLen):
        bound = "min" if isinstance(item, at.MinLen) else "max"
        value = item.min_length if isinstance(item, at.MinLen) else item.max_length
        noun = {"array": "Items", "object": "Properties"}.get(str(kind), "Length")
        schema[f"{bound}{noun}"] = value
    elif isinstance(getattr(item, "pattern", None), str):
        schema["pattern"] = item.pattern
    # Anything else (validators, strictness flags) does not show in a schema.


def _default(owner: type[BaseModel], info: FieldInfo) -> Any:
    """The JSON form of a field's Python default, or _MISSING when it has none worth stating."""
    if info.default_factory is not None:
        # Factories reading the other fields' values (pydantic >= 2.10) have no fixed default.
        if getattr(info, "default_factory_takes_validated_data", False):
            return _MISSING
        value = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return _MISSING
    else:
        value = info.default
    if value is None:
        return _MISSING
    if isinstance(value, BaseModel):
        # Fields left at their defaults are filled in by the nested schema's own defaults.
        return value.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    if isinstance(value, list | tuple | set | frozenset | dict) and not value:
        return _MISSING
    config = owner.model_config
    try:
        return to_jsonable_python(
            value,
            by_alias=True,
            exclude_none=True,
            timedelta_mode=config.get("ser_json_timedelta", "iso8601"),
            bytes_mode=config.get("ser_json_bytes", "utf8"),
        )
    except PydanticSerializationError:
        return _MISSING
