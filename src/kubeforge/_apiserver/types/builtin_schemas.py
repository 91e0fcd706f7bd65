"""The schemas of the built-in Kubernetes types: decoding checks, validation and unknown fields.

The definitions come from the `kubernetes-validate` package (one `_definitions.json` per
Kubernetes minor, JSON Schema 2020-12 with every type made nullable). They are loaded on first
use, once per process (`kubeforge._api.machinery.definitions`), and checked with `jsonschema_rs`; a
compiled "shape" tree per definition answers which fields a type declares, which is what a
typed decoder keeps and what it silently drops.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema_rs

from kubeforge._api.machinery import definitions
from kubeforge._api.machinery.definitions import DEFAULT_VERSION, INT_OR_STRING, QUANTITY
from kubeforge._api.machinery.fielderror import FieldError, join_path
from kubeforge._api.machinery.schemaview import SchemaView
from kubeforge._apiserver.request.gojson import json_kind

__all__ = [
    "CONVERTED_INTEGERS",
    "DEFAULT_VERSION",
    "STRICT_INTEGERS",
    "BuiltinSchemas",
    "DecodeError",
]

_REF_PREFIX = "#/$defs/"
_REGISTRY_URI = "urn:kubeforge:builtin-definitions"

# Quantity strings the server accepts; anything else fails decoding with this expression quoted.
_QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"

# Object types without declared fields that nevertheless hold arbitrary JSON when decoded.
_FREE_FORM = frozenset(
    {
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    }
)

# Fields listed as required whose absence the server fills in rather than rejects.
_DEFAULTED_REQUIRED = frozenset(
    {
        ("io.k8s.api.authentication.v1.TokenRequestSpec", "audiences"),
        ("io.k8s.api.core.v1.LimitRangeSpec", "limits"),
        ("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector"),
        ("io.k8s.api.discovery.v1.EndpointSlice", "endpoints"),
    }
)


# Which map and list fields Go's encoder leaves out when empty. In the definitions, a field is
# required exactly when its Go field has neither `omitempty` nor a `+optional` marker, so the
# optional map and list fields are the `omitempty` ones, except for these few, which are
# optional yet lack `omitempty` and so are written even when empty (k8s.io/api and
# apiextensions-apiserver v0.33 types compared with the definitions' `required` lists) ...
_WRITTEN_WHEN_EMPTY = frozenset(
    {
        ("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentMetrics"),
        ("io.k8s.api.core.v1.ContainerImage", "names"),
        ("io.k8s.api.core.v1.ProjectedVolumeSource", "sources"),
        ("io.k8s.api.discovery.v1.EndpointSlice", "ports"),
        ("io.k8s.api.flowcontrol.v1.ResourcePolicyRule", "namespaces"),
        ("io.k8s.api.rbac.v1.ClusterRole", "rules"),
        ("io.k8s.api.rbac.v1.Role", "rules"),
        ("io.k8s.api.storage.v1.CSINodeDriver", "topologyKeys"),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
            "conditions",
        ),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
            "storedVersions",
        ),
        *(
            (f"io.k8s.api.resource.{version}.{struct}", field)
            for version in ("v1alpha3", "v1beta1", "v1beta2")
            for struct, field in (
                ("AllocatedDeviceStatus", "conditions"),
                ("DeviceClaim", "requests"),
                ("ResourceSliceSpec", "devices"),
            )
        ),
    }
)
# ... and these, left out when empty, are kept by decoding all the same: the type's
# defaulting fills them only when they are absent (a nil check), and its validation refuses
# them empty, so kube-apiserver answers an explicit empty value with 422 where defaulting
# would otherwise have filled it (GenerateHPAScaleUpRules and validateScalingRules in
# k8s.io/kubernetes pkg/apis/autoscaling). None is ever stored empty.
_REFUSED_WHEN_EMPTY = frozenset({("io.k8s.api.autoscaling.v2.HPAScalingRules", "policies")})
# ... and these, required by a `+required` marker, still carry `omitempty`.
_OMITTED_WHEN_REQUIRED = frozenset(
    (f"io.k8s.api.resource.{version}.{struct}", "counters")
    for version in ("v1alpha3", "v1beta1", "v1beta2")
    for struct in ("CounterSet", "DeviceCounterConsumption")
)
_CONTAINERS = (dict, list)


class DecodeError(ValueError):
    """A body that a typed decoder rejects (wrong JSON type, bad time, bad base64, bad quantity).

    The server answers these with 400 BadRequest; `status_message` gives the full wording.
    """

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(detail)
        self.field = field
        self.detail = detail

    def status_message(self, kind: str, version: str) -> str:
        """`<Kind> in version "<version>" cannot be handled as a <Kind>: <detail>`."""
        return f'{kind} in version "{version}" cannot be handled as a {kind}: {self.detail}'


class _Shape:
    """What a decoder keeps of one schema node.

    Exactly one of `fields` (a struct), `values` (a map) or `items` (a list) is set for
    containers; none for scalars and free-form values. `walk` is False when nothing below this
    node can hold an undeclared field, so the unknown-field walk skips it. `omit_empty` names a
    struct's map and list fields that Go leaves out when empty (`omitempty`).
    """

    __slots__ = ("fields", "integer", "items", "name", "omit_empty", "values", "walk")

    def __init__(self) -> None:
        self.fields: dict[str, _Shape] | None = None
        self.values: _Shape | None = None
        self.items: _Shape | None = None
        self.name = ""
        self.walk = False
        self.omit_empty: frozenset[str] = frozenset()
        # An integer field: its Go type and range (int32 or int64).
        self.integer: tuple[str, int, int] | None = None


_LEAF = _Shape()


def _integer_leaf(go_type: str, low: int, high: int) -> _Shape:
    shape = _Shape()
    shape.integer = (go_type, low, high)
    return shape


_INT32 = _integer_leaf("int32", -(2**31), 2**31 - 1)
_INT64 = _integer_leaf("int64", -(2**63), 2**63 - 1)

# How a walk treats integer fields (see BuiltinSchemas.drop_unknown_fields).
STRICT_INTEGERS = "strict"
CONVERTED_INTEGERS = "converted"

# Definitions whose zero value encodes as null rather than being left out.
_NULL_KEPT = frozenset({"Time", "MicroTime"})

_BASE64_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _base64_error_offset(text: str) -> int:
    """The input byte at which a strict base64 decoder gives up (the number Go quotes)."""
    data = text.encode()
    padding_at = -1
    for i, ch in enumerate(data):
        if ch in (10, 13):
            continue
        if ch == 61:  # "="
            if padding_at < 0:
                padding_at = i
            continue
        if ch not in _BASE64_ALPHABET:
            return i
        if padding_at >= 0:
            return padding_at
    return len(data) - len(data) % 4


def _go_number_text(value: int | float) -> str:
    """A number as it would have been written in JSON (Go's decoder quotes the literal)."""
    if value.__class__ is float:
        text = repr(value)
        return text.replace("e+", "e") if "e" in text else text
    return str(value)


def _instance_path(obj: Any, path: str, key: str | int) -> list[str | int]:
    """The path, as keys and indices, of the value a walk reached at `path` + `key` (the
    walk's string paths cannot be split back, since keys may hold dots)."""

    def search(value: Any, at: str, parts: list[str | int]) -> list[str | int] | None:
        if at == path:
            return [*parts, key]
        if isinstance(value, dict):
            for k, v in value.items():
                child = f"{at}.{k}" if at else str(k)
                if path == child or path.startswith((child + ".", child + "[")):
                    found = search(v, child, [*parts, k])
                    if found is not None:
                        return found
        elif isinstance(value, list):
            for i, v in enumerate(value):
                child = f"{at}[{i}]"
                if path == child or path.startswith((child + ".", child + "[")):
                    found = search(v, child, [*parts, i])
                    if found is not None:
                        return found
        return None

    return search(obj, "", []) or [key]


def _types(node: Mapping[str, Any]) -> list[str]:
    t = node.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if x != "null"]
    return []


def _go_name(definition: str) -> str:
    """`io.k8s.api.apps.v1.DeploymentSpec` -> `v1.DeploymentSpec` (Go package + type)."""
    parts = definition.split(".")
    return f"{parts[-2]}.{parts[-1]}" if len(parts) > 1 else definition


class BuiltinSchemas:
    """The built-in type definitions of one Kubernetes minor version, loaded lazily."""

    _instances: dict[str, BuiltinSchemas] = {}
    _instances_lock = threading.Lock()

    def __init__(self, directory: Path, kubernetes_version: str) -> None:
        self.directory = directory
        self.kubernetes_version = kubernetes_version
        self._lock = threading.RLock()
        self._defs: dict[str, Any] | None = None
        self._by_kind: dict[tuple[str, str, str], str] = {}
        self._registry: jsonschema_rs.Registry | None = None
        self._validators: dict[str, jsonschema_rs.Validator] = {}
        self._shapes: dict[str, _Shape] = {}

    @classmethod
    def for_version(cls, version: str = DEFAULT_VERSION) -> BuiltinSchemas:
        """The shared instance for a minor (`"1.33"`, `"v1.33.2"`), or the nearest one shipped."""
        key, directory = definitions.resolve(version)
        with cls._instances_lock:
            inst = cls._instances.get(key)
            if inst is None:
                inst = cls(directory, key)
                cls._instances[key] = inst
            return inst

    # Loading -------------------------------------------------------------------------------

    @property
    def defs(self) -> dict[str, Any]:
        """The `$defs` mapping (names like `io.k8s.api.apps.v1.Deployment`).

        The `enum`s the converter put on `apiVersion`/`kind` are removed: the server checks
        those itself, with its own messages. The mapping is shared process-wide: read only.
        """
        defs = self._defs
        if defs is None:
            defs = self._load()
        return defs

    def _load(self) -> dict[str, Any]:
        with self._lock:
            if self._defs is not None:
                return self._defs
            defs = definitions.load_file(self.directory / "_definitions.json")
            for name, node in defs.items():
                for gvk in node.get("x-kubernetes-group-version-kind", ()):
                    self._by_kind.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
            self._defs = defs
            return defs

    def _validation_registry(self) -> jsonschema_rs.Registry:
        registry = self._registry
        if registry is None:
            defs = dict(self.defs)
            # Quantity strings must parse; a shallow copy keeps `defs` as shipped.
            defs[QUANTITY] = {
                "oneOf": [
                    {"type": ["string", "null"], "pattern": _QUANTITY_PATTERN},
                    {"type": ["number", "null"]},
                ]
            }
            registry = jsonschema_rs.Registry([(_REGISTRY_URI, {"$defs": defs})])
            self._registry = registry
        return registry

    # Lookups -------------------------------------------------------------------------------

    def __contains__(self, definition: object) -> bool:
        return isinstance(definition, str) and definition in self.defs

    def view(self, definition: str) -> SchemaView:
        """A SchemaView of one definition (the "anything" view when unknown)."""
        defs = self.defs
        return SchemaView(defs.get(definition), defs)

    def definition_for_kind(self, group: str, version: str, kind: str) -> str | None:
        """The definition carrying `x-kubernetes-group-version-kind` = (group, version, kind)."""
        self.defs  # noqa: B018 - loading fills the kind index
        return self._by_kind.get((group, version, kind))

    def view_for_kind(self, group: str, version: str, kind: str) -> SchemaView | None:
        """The SchemaView of a kind, or None when no definition declares it."""
        name = self.definition_for_kind(group, version, kind)
        return None if name is None else self.view(name)

    # Validation ----------------------------------------------------------------------------

    def _validator(self, definition: str) -> jsonschema_rs.Validator | None:
        validator = self._validators.get(definition)
        if validator is None and definition in self.defs:
            with self._lock:
                validator = jsonschema_rs.Draft202012Validator(
                    {"$ref": f"{_REGISTRY_URI}#/$defs/{definition}"},
                    registry=self._validation_registry(),
                    validate_formats=True,
                    formats={"byte": _is_base64},
                )
                self._validators[definition] = validator
        return validator

    def validate(self, definition: str, obj: Any) -> list[FieldError]:
        """Check `obj` against a definition; return field errors (missing required fields ...).

        Raises DecodeError for what a typed decoder itself rejects (a string where an integer
        belongs, an unparsable time, quantity or base64 value): the server answers those 400.
        Required fields under `status` and required scalars (whose zero value decodes fine)
        are not reported. An unknown definition has nothing to check.
        """
        validator = self._validator(definition)
        if validator is None or validator.is_valid(obj):
            return []
        decode: DecodeError | None = None
        errors: list[FieldError] = []
        root = self._shape(definition)
        for err in validator.iter_errors(obj):
            problem = self._convert(root, err)
            if isinstance(problem, DecodeError):
                decode = decode or problem
            elif problem is not None:
                errors.append(problem)
        if decode is not None:
            raise decode
        return errors

    def _convert(
        self, root: _Shape, err: jsonschema_rs.ValidationError
    ) -> DecodeError | FieldError | None:
        kind = err.kind
        keyword = kind.name
        path = list(err.instance_path)
        schema_path = list(err.schema_path)
        node = self._schema_at(schema_path[:-1])
        value = err.instance
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
            prop = kind.property
            owner = str(schema_path[1]) if len(schema_path) > 1 else ""
            field_node = node.get("properties", {}).get(prop, {})
            if not self._reports_required(owner, prop, field_node, path):
                return None
            field, _, _ = self._locate(root, path)
            return FieldError.required(join_path(field, prop))
        field, go_path, struct = self._locate(root, path)
        if keyword == "type" and value is None:
            # Go decodes null as the zero value; only an emptied required field is a problem.
            if len(schema_path) < 4 or schema_path[-3] != "properties":
                return None
            owner, prop = str(schema_path[1]), str(schema_path[-2])
            if not self._reports_required(owner, prop, node, path[:-1]):
                return None
            return FieldError.required(field)
        if keyword in ("type", "oneOf", "anyOf"):
            go_type = self._go_type(node, schema_path)
            if go_type == "resource.Quantity" and isinstance(value, str):
                return DecodeError(
                    field, f"quantities must match the regular expression '{_QUANTITY_PATTERN}'"
                )
            what = json_kind(value)
            if what == "number" and isinstance(value, float) and "int" in go_type:
                what = f"number {value!r}"
            target = f"Go struct field {struct}.{go_path}" if struct else "Go value"
            return DecodeError(
                field, f"json: cannot unmarshal {what} into {target} of type {go_type}"
            )
        if keyword == "format":
            fmt = node.get("format")
            if fmt == "byte":
                offset = _base64_error_offset(str(value))
                return DecodeError(field, f"illegal base64 data at input byte {offset}")
            layout = "2006-01-02T15:04:05Z07:00"
            return DecodeError(
                field, f'parsing time "{value}" as "{layout}": cannot parse "{value}" as "2006"'
            )
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.Enum):
            return FieldError.not_supported(field, value, kind.options)
        return FieldError.invalid(field, value, err.message)

    def _reports_required(
        self, owner: str, prop: str, field_node: Mapping[str, Any], parent: list[str | int]
    ) -> bool:
        """Whether a missing required field is an error the server would report.

        Status is written by controllers and only loosely validated; scalars decode to a zero
        value the server often accepts; a few fields are filled in by the server.
        """
        if parent[:1] == ["status"] or (owner, prop) in _DEFAULTED_REQUIRED:
            return False
        kinds = _types(self._resolve(field_node))
        return not kinds or bool(set(kinds) & {"string", "array", "object"})

    def _schema_at(self, schema_path: list[str | int]) -> Mapping[str, Any]:
        node: Any = {"$defs": self.defs}
        for part in schema_path:
            if isinstance(node, Mapping):
                node = node.get(str(part), {})
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                node = node[part]
            else:
                return {}
        return node if isinstance(node, Mapping) else {}

    def _resolve(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            target = self.defs.get(ref[len(_REF_PREFIX) :])
            return target if isinstance(target, Mapping) else {}
        return node

    def _go_type(self, node: Mapping[str, Any], schema_path: list[str | int]) -> str:
        """The Go type a decoder would have filled at this node, as Go prints it."""
        if schema_path[:1] == ["$defs"] and len(schema_path) == 3:
            name = str(schema_path[1])
            if name == INT_OR_STRING:
                return "intstr.IntOrString"
            if name == QUANTITY:
                return "resource.Quantity"
            if _types(node) == ["object"] or "properties" in node:
                return _go_name(name)
        return self._go_type_of(node, 0)

    def _go_type_of(self, node: Mapping[str, Any], depth: int) -> str:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            name = ref[len(_REF_PREFIX) :]
            target = self.defs.get(name, {})
            if name in (INT_OR_STRING, QUANTITY) or "properties" in target or depth > 4:
                return _go_name(name) if name != INT_OR_STRING else "intstr.IntOrString"
            return self._go_type_of(target, depth + 1)
        kinds = _types(node)
        kind = kinds[0] if kinds else ""
        fmt = node.get("format")
        if kind == "integer":
            return str(fmt) if fmt in ("int32", "int64") else "int"
        if kind == "number":
            return "float64"
        if kind == "boolean":
            return "bool"
        if kind == "string":
            return "[]uint8" if fmt == "byte" else "string"
        if kind == "array":
            items = node.get("items")
            inner = self._go_type_of(items, depth + 1) if isinstance(items, Mapping) else "string"
            return "[]" + inner
        if kind == "object":
            extra = node.get("additionalProperties")
            if isinstance(extra, Mapping):
                return "map[string]" + self._go_type_of(extra, depth + 1)
            return "map[string]interface {}"
        return "interface {}"

    def _locate(self, root: _Shape, path: list[str | int]) -> tuple[str, str, str]:
        """(Kubernetes field path, Go decoder field path, last Go struct) of an instance path."""
        field = ""
        go_parts: list[str] = []
        struct = ""
        shape: _Shape | None = root
        for part in path:
            if isinstance(part, int):
                field = join_path(field, part)
                shape = shape.items if shape is not None else None
                continue
            if shape is not None and shape.fields is not None and part in shape.fields:
                struct = shape.name
                go_parts.append(part)
                field = join_path(field, part)
                shape = shape.fields[part]
            elif shape is not None and shape.values is not None:
                field = f"{field}[{part}]"
                shape = shape.values
            else:
                field = join_path(field, part)
                shape = None
        return field, ".".join(go_parts), struct

    # Declared fields -------------------------------------------------------------------------

    def _shape(self, definition: str) -> _Shape:
        shape = self._shapes.get(definition)
        if shape is None:
            with self._lock:
                shape = self._shapes.get(definition)
                if shape is None:
                    shape = self._compile_def(definition)
        return shape

    def _compile_def(self, name: str) -> _Shape:
        node = self.defs.get(name)
        if not isinstance(node, Mapping) or name in _FREE_FORM:
            self._shapes[name] = _LEAF
            return _LEAF
        shape = _Shape()
        shape.name = name.rsplit(".", 1)[-1]
        # Registered before its children so recursive types (JSONSchemaProps) terminate.
        self._shapes[name] = shape
        self._fill(shape, node, name)
        return shape

    def _compile(self, node: Any) -> _Shape:
        if not isinstance(node, Mapping):
            return _LEAF
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            name = ref[len(_REF_PREFIX) :]
            shape = self._shapes.get(name)
            return shape if shape is not None else self._compile_def(name)
        if _types(node) == ["integer"]:
            return _INT32 if node.get("format") == "int32" else _INT64
        shape = _Shape()
        self._fill(shape, node)
        return shape if (shape.fields, shape.values, shape.items) != (None, None, None) else _LEAF

    def _fill(self, shape: _Shape, node: Mapping[str, Any], definition: str = "") -> None:
        kinds = _types(node)
        props = node.get("properties")
        extra = node.get("additionalProperties")
        if isinstance(props, Mapping):
            # Marked before the children compile: a recursive child must see a walkable struct.
            shape.walk = True
            fields: dict[str, _Shape] = {}
            shape.fields = fields
            for key, child in props.items():
                fields[key] = self._compile(child)
            shape.omit_empty = self._omitted_when_empty(definition, node, props)
        elif isinstance(extra, Mapping):
            shape.values = self._compile(extra)
            shape.walk = shape.values.walk or shape.values.integer is not None
        elif kinds == ["array"]:
            shape.items = self._compile(node.get("items"))
            shape.walk = shape.items.walk or shape.items.integer is not None
        elif kinds == ["object"] and extra is None:
            # An empty struct: everything sent inside it is unknown.
            shape.fields = {}
            shape.walk = True

    def _omitted_when_empty(
        self, definition: str, node: Mapping[str, Any], props: Mapping[str, Any]
    ) -> frozenset[str]:
        """A struct's map and list fields that Go's encoder leaves out when empty."""
        required = node.get("required") or ()
        omitted = set()
        for key, child in props.items():
            target = self._resolve(child) if isinstance(child, Mapping) else {}
            is_map = isinstance(target.get("additionalProperties"), Mapping) and (
                "properties" not in target
            )
            if not is_map and _types(target) != ["array"]:
                continue
            field = (definition, key)
            if field in _WRITTEN_WHEN_EMPTY or field in _REFUSED_WHEN_EMPTY:
                continue
            if key in required and field not in _OMITTED_WHEN_REQUIRED:
                continue
            omitted.add(key)
        return frozenset(omitted)

    def drop_empty_fields(self, definition: str, obj: dict[str, Any]) -> None:
        """Remove, in place, the empty maps and lists Go leaves out of one struct (not nested:
        for the metadata of custom objects, which the server passes through ObjectMeta)."""
        for key in self._shape(definition).omit_empty.intersection(obj):
            value = obj[key]
            if not value and value.__class__ in _CONTAINERS:
                del obj[key]

    def _integer(
        self,
        definition: str,
        obj: Any,
        value: Any,
        bounds: tuple[str, int, int],
        mode: str | None,
        path: str,
        key: str | int,
    ) -> int:
        """The integer a field that holds something else becomes, or DecodeError."""
        go_type, low, high = bounds
        if (
            mode == CONVERTED_INTEGERS
            and value.__class__ is float
            and value.is_integer()
            and low <= value <= high
        ):
            return int(value)
        field = f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)
        what = json_kind(value)
        if what == "number":
            what = f"number {_go_number_text(value)}"
        _, go_path, struct = self._locate(self._shape(definition), _instance_path(obj, path, key))
        target = f"Go struct field {struct}.{go_path}" if struct else "Go value"
        raise DecodeError(field, f"json: cannot unmarshal {what} into {target} of type {go_type}")

    def unknown_fields(self, definition: str, obj: Any) -> list[str]:
        """Paths of fields in `obj` the type does not declare, in document order
        (`spec.foo`, `spec.containers[0].bar`), as strict decoding reports them."""
        return self._unknown(definition, obj, drop=False)

    def drop_unknown_fields(
        self,
        definition: str,
        obj: Any,
        omit_empty: bool = False,
        integers: str | None = None,
        patched: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Remove undeclared fields, and declared ones set to null, from `obj` in place (what
        typed decoding and encoding do); return the undeclared fields' paths. With
        `omit_empty`, also the empty maps and lists Go's encoder leaves out (`omitempty`).

        `integers` checks the integer fields as Go fills them. STRICT_INTEGERS is Go's JSON
        decoder reading a body: only an integer literal in the field type's range fits, so a
        fraction, an exponent form (`1.0`, `1e3`) or an overflow raises DecodeError.
        CONVERTED_INTEGERS is apimachinery's unstructured converter filling the object a
        strategic merge patch or an apply produced: a whole-number float becomes the
        integer; anything else still raises DecodeError (where the converter would wrap an
        out-of-range number round, this server refuses it).

        `patched`, the merge patch `obj` is the result of, limits the walk to what the patch
        brought: beneath the maps it does not name, `obj` holds the stored object's values,
        which decoding left as they are (the caller vouches that `obj` was read as stored).
        """
        return self._unknown(
            definition, obj, drop=True, omit_empty=omit_empty, integers=integers, within=patched
        )

    def _unknown(
        self,
        definition: str,
        obj: Any,
        drop: bool,
        omit_empty: bool = False,
        integers: str | None = None,
        within: Mapping[str, Any] | None = None,
    ) -> list[str]:
        found: list[str] = []
        # Entries are (shape, value, path, within) to visit or a bare path to report; pushed
        # in reverse so the report follows document order. `within`, when not None, is the
        # part of a merge patch at that value: only the keys it names are looked at.
        stack: list[tuple[_Shape, Any, str, Any] | str] = [
            (self._shape(definition), obj, "", within)
        ]
        while stack:
            entry = stack.pop()
            if isinstance(entry, str):
                found.append(entry)
                continue
            shape, value, path, named = entry
            pending: list[tuple[_Shape, Any, str, Any] | str] = []
            fields = shape.fields
            if fields is not None:
                if not isinstance(value, dict):
                    continue
                doomed: list[str] = []
                nulls: list[str] = []
                omitted = shape.omit_empty if omit_empty else ()
                items = value.items() if named is None else _named_items(value, named)
                for key, child_value in items:
                    child = fields.get(key)
                    if child is None:
                        pending.append(f"{path}.{key}" if path else key)
                        doomed.append(key)
                    elif child_value is None:
                        # Go decodes null into the zero value, which optional (omitempty)
                        # fields then leave out; a zero metav1.Time, a struct, is still
                        # written, as null (`creationTimestamp: null` in pod templates).
                        if child.name not in _NULL_KEPT:
                            nulls.append(key)
                    elif not child_value and child_value.__class__ in _CONTAINERS:
                        if key in omitted:
                            nulls.append(key)
                    elif child.walk:
                        pending.append(
                            (
                                child,
                                child_value,
                                f"{path}.{key}" if path else key,
                                None if named is None else _named_part(named, key),
                            )
                        )
                    elif integers is not None and child.integer is not None:
                        bounds = child.integer
                        if child_value.__class__ is not int or not (
                            bounds[1] <= child_value <= bounds[2]
                        ):
                            value[key] = self._integer(
                                definition, obj, child_value, bounds, integers, path, key
                            )
                if drop:
                    for key in doomed:
                        del value[key]
                    for key in nulls:
                        del value[key]
            elif shape.values is not None:
                if not isinstance(value, dict):
                    continue
                child = shape.values
                item_bounds = child.integer if integers is not None else None
                items = value.items() if named is None else _named_items(value, named)
                for key, child_value in items:
                    if item_bounds is not None:
                        if child_value is not None and (
                            child_value.__class__ is not int
                            or not item_bounds[1] <= child_value <= item_bounds[2]
                        ):
                            value[key] = self._integer(
                                definition, obj, child_value, item_bounds, integers, path, key
                            )
                    elif child_value is not None:
                        pending.append(
                            (
                                child,
                                child_value,
                                f"{path}.{key}" if path else key,
                                None if named is None else _named_part(named, key),
                            )
                        )
            elif shape.items is not None:
                if not isinstance(value, list):
                    continue
                child = shape.items
                item_bounds = child.integer if integers is not None else None
                for i, child_value in enumerate(value):
                    if item_bounds is not None:
                        if child_value is not None and (
                            child_value.__class__ is not int
                            or not item_bounds[1] <= child_value <= item_bounds[2]
                        ):
                            value[i] = self._integer(
                                definition, obj, child_value, item_bounds, integers, path, i
                            )
                    elif child_value is not None:
                        # A merge patch replaces lists whole: everything in one is its own.
                        pending.append((child, child_value, f"{path}[{i}]", None))
            pending.reverse()
            stack.extend(pending)
        return found


def _named_items(value: dict[str, Any], named: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The items of a map that a merge patch's map at the same place names, in the map's
    order (the others are as stored)."""
    return [(key, child) for key, child in value.items() if key in named]


def _named_part(named: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """What of a merge patch's map to follow beneath `key`: its map there (merged into what
    was stored), or None when it put its own value there (looked at whole)."""
    part = named.get(key)
    return part if isinstance(part, dict) else None
