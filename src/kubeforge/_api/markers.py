"""Schema markers: constraints and Kubernetes extensions attached to fields with `Annotated`.

    switches: Annotated[int, Minimum(1), Maximum(16)] = 1
    name: Annotated[str, Pattern("^[a-z]+$"), Immutable()]

Each marker edits the field's generated OpenAPI schema; the same markers on a model class
(`@on_class(...)`) edit the schema of the class itself. They are the Python spelling of the
controller-tools `+kubebuilder:validation:*` markers (see docs/markers.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

__all__ = [
    "AtLeastOneOf",
    "AtMostOneOf",
    "Default",
    "Description",
    "EmbeddedResource",
    "Enum",
    "ExactlyOneOf",
    "Example",
    "ExternalDocs",
    "Format",
    "Immutable",
    "IntOrString",
    "Items",
    "ListMapKeys",
    "ListType",
    "MapType",
    "Marker",
    "MaxItems",
    "MaxLength",
    "MaxProperties",
    "Maximum",
    "MinItems",
    "MinLength",
    "MinProperties",
    "Minimum",
    "MultipleOf",
    "Nullable",
    "Optional",
    "Pattern",
    "PreserveUnknownFields",
    "Required",
    "Rule",
    "Schemaless",
    "StructType",
    "Title",
    "Type",
    "UniqueItems",
    "on_class",
]

T = TypeVar("T")


class Marker:
    """A schema edit. `apply` changes the schema of the field (or class) it annotates;
    `misfit` says why the marker cannot go on that schema (a length limit on an integer),
    which the schema generator reports as an error, as controller-gen does."""

    def apply(self, schema: dict[str, Any]) -> None:
        raise NotImplementedError

    def misfit(self, schema: dict[str, Any]) -> str | None:
        """Why the marker does not fit `schema`'s type, or None when it does."""
        return None


def _described(schema: dict[str, Any]) -> str:
    """The kind of value a schema describes, for error messages."""
    if schema.get("x-kubernetes-int-or-string"):
        return "an int-or-string"
    kind = schema.get("type")
    if not kind:
        return "an untyped value"
    article = "an" if str(kind)[0] in "aeiou" else "a"
    return f"{article} {kind}"


def _expect(
    marker: Marker, schema: dict[str, Any], types: tuple[str, ...], noun: str
) -> str | None:
    if schema.get("type") in types:
        return None
    return f"{marker!r} applies to {noun}, not to {_described(schema)}"


def _numeric(marker: Marker, schema: dict[str, Any], value: float) -> str | None:
    problem = _expect(marker, schema, ("integer", "number"), "numbers")
    if problem is None and schema.get("type") == "integer" and value != int(value):
        return f"{marker!r}: an integer cannot be limited by the non-integral {value}"
    return problem


@dataclass(frozen=True)
class Minimum(Marker):
    """The smallest allowed number (`exclusive`: the value itself is not allowed)."""

    value: int | float
    exclusive: bool = False

    def apply(self, schema: dict[str, Any]) -> None:
        schema["minimum"] = self.value
        if self.exclusive:
            schema["exclusiveMinimum"] = True

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _numeric(self, schema, self.value)


@dataclass(frozen=True)
class Maximum(Marker):
    """The largest allowed number (`exclusive`: the value itself is not allowed)."""

    value: int | float
    exclusive: bool = False

    def apply(self, schema: dict[str, Any]) -> None:
        schema["maximum"] = self.value
        if self.exclusive:
            schema["exclusiveMaximum"] = True

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _numeric(self, schema, self.value)


@dataclass(frozen=True)
class MultipleOf(Marker):
    """Numbers must be a multiple of `value`."""

    value: int | float

    def apply(self, schema: dict[str, Any]) -> None:
        schema["multipleOf"] = self.value

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _numeric(self, schema, self.value)


@dataclass(frozen=True)
class MinLength(Marker):
    """Strings at least this many characters long."""

    value: int

    def apply(self, schema: dict[str, Any]) -> None:
        schema["minLength"] = self.value

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _expect(self, schema, ("string",), "strings")


@dataclass(frozen=True)
class MaxLength(Marker):
    """Strings at most this many characters long."""

    value: int

    def apply(self, schema: dict[str, Any]) -> None:
        schema["maxLength"] = self.value

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _expect(self, schema, ("string",), "strings")


@dataclass(frozen=True)
class Pattern(Marker):
    """Strings must match this regular expression (ECMA 262 / RE2 syntax)."""

    regex: str

    def apply(self, schema: dict[str, Any]) -> None:
        schema["pattern"] = self.regex

    def misfit(self, schema: dict[str, Any]) -> str | None:
        if schema.get("x-kubernetes-int-or-string"):
            return None  # checked when the value is a string
        return _expect(self, schema, ("string",), "strings (and int-or-strings)")


@dataclass(frozen=True)
class Format(Marker):
    """A string format the server checks: date-time, date, duration, email, hostname, ipv4,
    ipv6, cidr, mac, uri, uuid, byte, int-or-string ..."""

    name: str

    def apply(self, schema: dict[str, Any]) -> None:
        schema["format"] = self.name


@dataclass(frozen=True)
class MinItems(Marker):
    value: int

    def apply(self, schema: dict[str, Any]) -> None:
        schema["minItems"] = self.value

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _expect(self, schema, ("array",), "lists")


@dataclass(frozen=True)
class MaxItems(Marker):
    value: int

    def apply(self, schema: dict[str, Any]) -> None:
        schema["maxItems"] = self.value

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _expect(self, schema, ("array",), "lists")


@dataclass(frozen=True)
class UniqueItems(Marker):
    """No duplicate items. Kubernetes forbids `uniqueItems: true` in CRD schemas; the
    equivalent it accepts is a list of type `set`, which is what this produces."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-list-type"] = "set"

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _expect(self, schema, ("array",), "lists")


@dataclass(frozen=True)
class MinProperties(Marker):
    value: int

    def apply(self, schema: dict[str, Any]) -> None:
        schema["minProperties"] = self.value

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _expect(self, schema, ("object",), "objects")


@dataclass(frozen=True)
class MaxProperties(Marker):
    value: int

    def apply(self, schema: dict[str, Any]) -> None:
        schema["maxProperties"] = self.value

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _expect(self, schema, ("object",), "objects")


class Enum(Marker):
    """The allowed values: `Enum("up", "down")`."""

    def __init__(self, *values: Any) -> None:
        self.values = values

    def apply(self, schema: dict[str, Any]) -> None:
        schema["enum"] = list(self.values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Enum) and other.values == self.values

    def __hash__(self) -> int:
        return hash(("Enum", self.values))

    def __repr__(self) -> str:
        return f"Enum{self.values!r}"


@dataclass(frozen=True)
class Default(Marker):
    """The default the server fills in (JSON form); a Python default value does this too."""

    value: Any

    def apply(self, schema: dict[str, Any]) -> None:
        schema["default"] = self.value


@dataclass(frozen=True)
class Nullable(Marker):
    """An explicit `null` is a valid value (otherwise nulls are pruned)."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema["nullable"] = True


@dataclass(frozen=True)
class Required(Marker):
    """The field must be present, even though the Python type has a default."""

    def apply(self, schema: dict[str, Any]) -> None:
        pass  # read by the schema generator


@dataclass(frozen=True)
class Optional(Marker):
    """The field may be absent, even though the Python type has no default."""

    def apply(self, schema: dict[str, Any]) -> None:
        pass  # read by the schema generator


@dataclass(frozen=True)
class PreserveUnknownFields(Marker):
    """Keep fields the schema does not declare (no pruning below here)."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-preserve-unknown-fields"] = True


@dataclass(frozen=True)
class EmbeddedResource(Marker):
    """The value is a whole Kubernetes object (apiVersion, kind, metadata)."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-embedded-resource"] = True
        schema.setdefault("type", "object")


@dataclass(frozen=True)
class IntOrString(Marker):
    """An integer or a string (like a port number or name)."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema.pop("type", None)
        schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        schema["x-kubernetes-int-or-string"] = True


@dataclass(frozen=True)
class Schemaless(Marker):
    """Any value at all: no schema, no pruning."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema.clear()
        schema["x-kubernetes-preserve-unknown-fields"] = True


@dataclass(frozen=True)
class Type(Marker):
    """Override the JSON type (string, integer, number, boolean, object, array)."""

    name: str

    def apply(self, schema: dict[str, Any]) -> None:
        schema["type"] = self.name


@dataclass(frozen=True)
class ListType(Marker):
    """How lists merge under server-side apply: atomic, set or map (see ListMapKeys)."""

    kind: Literal["atomic", "set", "map"]
    keys: tuple[str, ...] = ()

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-list-type"] = self.kind
        if self.keys:
            schema["x-kubernetes-list-map-keys"] = list(self.keys)

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _expect(self, schema, ("array",), "lists")


class ListMapKeys(Marker):
    """The item fields that identify an item of a `map` list: `ListMapKeys("name")`."""

    def __init__(self, *keys: str) -> None:
        self.keys = keys

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-list-type"] = "map"
        schema["x-kubernetes-list-map-keys"] = list(self.keys)

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _expect(self, schema, ("array",), "lists")

    def __repr__(self) -> str:
        return f"ListMapKeys{self.keys!r}"


@dataclass(frozen=True)
class MapType(Marker):
    """How maps merge under server-side apply: granular (key by key) or atomic."""

    kind: Literal["atomic", "granular"]

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-map-type"] = self.kind

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _expect(self, schema, ("object",), "maps")


@dataclass(frozen=True)
class StructType(Marker):
    """How an object merges under server-side apply: granular or atomic."""

    kind: Literal["atomic", "granular"]

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-map-type"] = self.kind

    def misfit(self, schema: dict[str, Any]) -> str | None:
        if not schema.get("type"):
            return None  # an empty schema stands for an object
        return _expect(self, schema, ("object",), "objects")


@dataclass(frozen=True)
class Rule(Marker):
    """A CEL validation rule on the value (`self`; `oldSelf` on updates).

    `reason`: FieldValueInvalid (default), FieldValueForbidden, FieldValueRequired or
    FieldValueDuplicate. `field_path` points the error at a field below (`.spec.size`).
    """

    rule: str
    message: str | None = None
    message_expression: str | None = None
    reason: str | None = None
    field_path: str | None = None
    optional_old_self: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule}
        if self.message is not None:
            out["message"] = self.message
        if self.message_expression is not None:
            out["messageExpression"] = self.message_expression
        if self.reason is not None:
            out["reason"] = self.reason
        if self.field_path is not None:
            out["fieldPath"] = self.field_path
        if self.optional_old_self is not None:
            out["optionalOldSelf"] = self.optional_old_self
        return out

    def apply(self, schema: dict[str, Any]) -> None:
        schema.setdefault("x-kubernetes-validations", []).append(self.as_dict())


@dataclass(frozen=True)
class Immutable(Marker):
    """The value cannot change once set (the rule `self == oldSelf`)."""

    message: str = "field is immutable"

    def apply(self, schema: dict[str, Any]) -> None:
        Rule("self == oldSelf", message=self.message).apply(schema)


def _union(fields: tuple[str, ...], exact: bool, at_least: bool) -> str:
    count = " + ".join(f"(has(self.{f}) ? 1 : 0)" for f in fields)
    if exact:
        return f"{count} == 1"
    return f"{count} >= 1" if at_least else f"{count} <= 1"


class ExactlyOneOf(Marker):
    """Exactly one of these fields is set (on a model: `@on_class(ExactlyOneOf("a", "b"))`)."""

    def __init__(self, *fields: str) -> None:
        self.fields = fields

    def apply(self, schema: dict[str, Any]) -> None:
        message = f"exactly one of the fields in {list(self.fields)} must be set"
        Rule(_union(self.fields, True, False), message=message).apply(schema)


class AtMostOneOf(Marker):
    """At most one of these fields is set."""

    def __init__(self, *fields: str) -> None:
        self.fields = fields

    def apply(self, schema: dict[str, Any]) -> None:
        message = f"at most one of the fields in {list(self.fields)} may be set"
        Rule(_union(self.fields, False, False), message=message).apply(schema)


class AtLeastOneOf(Marker):
    """At least one of these fields is set."""

    def __init__(self, *fields: str) -> None:
        self.fields = fields

    def apply(self, schema: dict[str, Any]) -> None:
        message = f"at least one of the fields in {list(self.fields)} must be set"
        Rule(_union(self.fields, False, True), message=message).apply(schema)


@dataclass(frozen=True)
class Title(Marker):
    text: str

    def apply(self, schema: dict[str, Any]) -> None:
        schema["title"] = self.text


@dataclass(frozen=True)
class Description(Marker):
    """The field's documentation (attribute docstrings and Field(description=) work too)."""

    text: str

    def apply(self, schema: dict[str, Any]) -> None:
        schema["description"] = self.text


@dataclass(frozen=True)
class Example(Marker):
    value: Any

    def apply(self, schema: dict[str, Any]) -> None:
        schema["example"] = self.value


@dataclass(frozen=True)
class ExternalDocs(Marker):
    url: str
    description: str | None = None

    def apply(self, schema: dict[str, Any]) -> None:
        docs: dict[str, Any] = {"url": self.url}
        if self.description:
            docs["description"] = self.description
        schema["externalDocs"] = docs


@dataclass(frozen=True)
class Items(Marker):
    """Markers for each item of a list: `Items(MinLength(1), Pattern("^[a-z]+$"))`."""

    markers: tuple[Marker, ...] = field(default_factory=tuple)

    def __init__(self, *markers: Marker) -> None:
        object.__setattr__(self, "markers", markers)

    def apply(self, schema: dict[str, Any]) -> None:
        items = schema.setdefault("items", {})
        for marker in self.markers:
            problem = marker.misfit(items)
            if problem is not None:
                raise ValueError(f"list items: {problem}")
            marker.apply(items)

    def misfit(self, schema: dict[str, Any]) -> str | None:
        return _expect(self, schema, ("array",), "lists")


def on_class(*items: Marker) -> Callable[[type[T]], type[T]]:
    """Attach markers to a model class itself: `@on_class(ExactlyOneOf("a", "b"))`."""

    def attach(cls: type[T]) -> type[T]:
        existing = tuple(cls.__dict__.get("__kubeforge_markers__", ()))
        cls.__kubeforge_markers__ = existing + items  # type: ignore[attr-defined]
        return cls

    return attach
