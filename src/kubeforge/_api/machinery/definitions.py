"""The built-in Kubernetes type definitions, and their structural CRD-schema form.

The definitions ship with the `kubernetes-validate` package: one `_definitions.json` per
Kubernetes minor (JSON Schema with `$ref`s into `$defs`, every type made nullable,
int-or-string and quantities as `oneOf`). `load` reads one file once per process and shares
it; `structural` turns one definition back into what controller-gen writes into a CRD when a
Go type embeds, say, a `corev1.Container`: fully inlined, one type per node, Kubernetes'
well-known types spelled the way the API server expects them in CRD schemas.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "DEFAULT_VERSION",
    "EMBEDDED_OBJECT_META",
    "INT_OR_STRING",
    "OBJECT_META",
    "QUANTITY",
    "QUANTITY_PATTERN",
    "load",
    "load_file",
    "resolve",
    "schema_root",
    "shipped_minors",
    "structural",
]

DEFAULT_VERSION = "1.33"

INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# The expression controller-gen puts on every resource.Quantity field.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?"
    r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

_STRINGS_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}

# ObjectMeta embedded below the root (a pod template's metadata) when the generator is asked
# to describe it: the allow-listed fields of controller-tools' pkg/crd/known_types.go
# (ObjectMetaPackages, used with crd:generateEmbeddedObjectMeta=true), without descriptions.
EMBEDDED_OBJECT_META: dict[str, Any] = {
    "type": "object",
    "properties": {
        "annotations": _STRINGS_MAP,
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "labels": _STRINGS_MAP,
        "name": {"type": "string"},
        "namespace": {"type": "string"},
    },
}

_REF_PREFIX = "#/$defs/"
_DIR_RE = re.compile(r"^v1\.(\d+)\.0-local$")
_VERSION_RE = re.compile(r"^v?1\.(\d+)(?:\.\d+)?$")

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_APIEXT = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
_INT_OR_STRING_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}
_ANY: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}
_FREE_OBJECT: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

# Types whose CRD form is fixed (as controller-gen's table of well-known types has it) rather
# than derived from the definition; none of them carries its own description there.
_WELL_KNOWN: dict[str, dict[str, Any]] = {
    INT_OR_STRING: _INT_OR_STRING_SCHEMA,
    QUANTITY: {**_INT_OR_STRING_SCHEMA, "pattern": QUANTITY_PATTERN},
    _META + "Time": {"type": "string", "format": "date-time"},
    _META + "MicroTime": {"type": "string", "format": "date-time"},
    _META + "Duration": {"type": "string"},
    OBJECT_META: {"type": "object"},
    _META + "FieldsV1": _FREE_OBJECT,
    _META + "Patch": _FREE_OBJECT,
    "io.k8s.apimachinery.pkg.runtime.RawExtension": _FREE_OBJECT,
    _APIEXT + "JSON": _ANY,
    _APIEXT + "JSONSchemaPropsOrArray": _ANY,
    _APIEXT + "JSONSchemaPropsOrBool": _ANY,
    _APIEXT + "JSONSchemaPropsOrStringArray": _ANY,
}

# Keywords a CRD schema must not carry (strategic-merge hints, kind tags, union hints).
_DROPPED = frozenset(
    {
        "$schema",
        "$id",
        "x-kubernetes-patch-strategy",
        "x-kubernetes-patch-merge-key",
        "x-kubernetes-group-version-kind",
        "x-kubernetes-unions",
    }
)

# Upstream `+default` markers the JSON definitions do not record, by (definition, field).
_KNOWN_DEFAULTS: dict[tuple[str, str], Any] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
}
# LocalObjectReference's `name` defaults to "" upstream, also where the type is inlined into
# another (SecretKeySelector, ConfigMapEnvSource ...); its documentation identifies it.
_LOCAL_NAME_DOC = "Name of the referent. This field is effectively required"

# The value Go would decode for an absent field of each JSON type.
_ZERO: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False}

_lock = threading.RLock()
_files: dict[Path, dict[str, Any]] = {}
_converters: dict[tuple[Path, bool], _Converter] = {}


def schema_root() -> Path:
    """The `kubernetes-json-schema` directory of the installed kubernetes-validate package."""
    # find_spec locates the package without running its (slow) __init__.
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the kubernetes-validate package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"


def shipped_minors(base: Path | None = None) -> list[int]:
    """The Kubernetes 1.x minors that have a definitions file, ascending."""
    base = schema_root() if base is None else base
    minors = []
    for entry in base.iterdir():
        m = _DIR_RE.match(entry.name)
        if m and (entry / "_definitions.json").is_file():
            minors.append(int(m.group(1)))
    return sorted(minors)


def resolve(version: str = DEFAULT_VERSION) -> tuple[str, Path]:
    """(`v1.NN.0`, its directory) for a minor like `"1.33"` or `"v1.33.2"`: the shipped one,
    or the nearest shipped one (the older on a tie)."""
    m = _VERSION_RE.match(version.strip())
    if not m:
        raise ValueError(f"not a Kubernetes 1.x version: {version!r}")
    wanted = int(m.group(1))
    base = schema_root()
    minors = shipped_minors(base)
    if not minors:
        raise RuntimeError(f"no built-in schema directories under {base}")
    minor = min(minors, key=lambda n: (abs(n - wanted), n))
    key = f"v1.{minor}.0"
    return key, base / f"{key}-local"


def load_file(path: Path) -> dict[str, Any]:
    """The `$defs` of one definitions file, read once per process and shared: do not mutate.

    The `enum`s kubernetes-validate adds to `apiVersion` and `kind` are removed; the API
    server checks those itself and CRD schemas must not restrict them.
    """
    defs = _files.get(path)
    if defs is not None:
        return defs
    with _lock:
        defs = _files.get(path)
        if defs is None:
            defs = orjson.loads(path.read_bytes())["$defs"]
            for node in defs.values():
                props = node.get("properties")
                if props:
                    for key in ("apiVersion", "kind"):
                        prop = props.get(key)
                        if prop is not None:
                            prop.pop("enum", None)
            _files[path] = defs
    return defs


def load(version: str = DEFAULT_VERSION) -> dict[str, Any]:
    """The `$defs` of a Kubernetes minor (nearest shipped one), shared: do not mutate."""
    return load_file(resolve(version)[1] / "_definitions.json")


def structural(
    definition: str, version: str = DEFAULT_VERSION, *, embedded_object_meta: bool = False
) -> dict[str, Any]:
    """A definition (`io.k8s.api.core.v1.Container`) as a structural CRD schema (a fresh dict).

    References are inlined (a field's own description wins over its type's), nullable type
    lists become one type, well-known types take their CRD form (int-or-string, quantities
    with controller-gen's pattern, times as date-time strings, raw objects preserving unknown
    fields, ObjectMeta as a bare object or, with `embedded_object_meta`, as
    EMBEDDED_OBJECT_META), strategic-merge hints are dropped, and a type that contains itself
    (JSONSchemaProps) keeps unknown fields where it recurs. List-map keys that are neither
    required nor defaulted get their upstream default (or Go's zero value), as the server
    requires of CRD schemas.
    """
    path = resolve(version)[1] / "_definitions.json"
    key = (path, embedded_object_meta)
    converter = _converters.get(key)
    if converter is None:
        with _lock:
            converter = _converters.get(key)
            if converter is None:
                converter = _Converter(load_file(path), embedded_object_meta)
                _converters[key] = converter
    if definition not in converter.defs and definition not in _WELL_KNOWN:
        raise KeyError(f"no built-in definition named {definition!r}")
    with _lock:
        tree = converter.definition(definition, [])[0]
    # The converted trees share memoized parts; callers get an independent copy.
    result: dict[str, Any] = orjson.loads(orjson.dumps(tree))
    return result


class _Converter:
    """Converts definitions of one file, memoizing those whose form does not depend on where
    they are reached from (everything outside a reference cycle)."""

    def __init__(self, defs: Mapping[str, Any], embedded_object_meta: bool = False) -> None:
        self.defs = defs
        self.memo: dict[str, dict[str, Any]] = {}
        self.known = _WELL_KNOWN
        if embedded_object_meta:
            self.known = {**_WELL_KNOWN, OBJECT_META: EMBEDDED_OBJECT_META}

    def definition(self, name: str, stack: list[str]) -> tuple[dict[str, Any], set[str]]:
        """(schema, the definitions on `stack` where a cycle was cut below this one)."""
        known = self.known.get(name)
        if known is not None:
            return known, set()
        done = self.memo.get(name)
        if done is not None:
            return done, set()
        source = self.defs.get(name)
        if not isinstance(source, Mapping):
            return _ANY, set()
        if name in stack:
            return _cut(source), {name}
        stack.append(name)
        out, cuts = self.node(source, stack, name)
        stack.pop()
        cuts.discard(name)
        if not cuts:
            self.memo[name] = out
        return out, cuts

    def node(
        self, node: Mapping[str, Any], stack: list[str], owner: str | None = None
    ) -> tuple[dict[str, Any], set[str]]:
        ref = node.get("$ref")
        if isinstance(ref, str):
            target, cut_below = self.definition(ref.removeprefix(_REF_PREFIX), stack)
            description = node.get("description")
            if isinstance(description, str):
                target = {**target, "description": description}
            return target, cut_below
        out: dict[str, Any] = {}
        cuts: set[str] = set()
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key == "type":
                kinds = [value] if isinstance(value, str) else [t for t in value if t != "null"]
                if len(kinds) == 1:
                    out["type"] = kinds[0]
            elif key == "properties" and isinstance(value, Mapping):
                props: dict[str, Any] = {}
                for prop, sub in value.items():
                    props[prop], below = self.node(sub, stack)
                    cuts |= below
                    if owner is not None:
                        props[prop] = _with_known_default(owner, prop, props[prop])
                out["properties"] = props
            elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
                out[key], below = self.node(value, stack)
                cuts |= below
            elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
                converted = []
                for sub in value:
                    part, below = self.node(sub, stack)
                    converted.append(part)
                    cuts |= below
                out[key] = converted
            else:
                out[key] = value
        if "type" not in out:
            if "properties" in out or "additionalProperties" in out:
                out["type"] = "object"
            elif "items" in out:
                out["type"] = "array"
            elif "x-kubernetes-int-or-string" not in out:
                out["x-kubernetes-preserve-unknown-fields"] = True
        kind = out.get("type")
        # []byte fields carry list hints upstream but are base64 strings on the wire.
        if kind != "array":
            out.pop("x-kubernetes-list-type", None)
            out.pop("x-kubernetes-list-map-keys", None)
        elif out.get("x-kubernetes-list-type") == "map":
            _complete_list_map(out)
        if kind != "object":
            out.pop("x-kubernetes-map-type", None)
        return out, cuts


def _cut(source: Mapping[str, Any]) -> dict[str, Any]:
    """Where a type recurs inside itself: keep whatever is there."""
    kinds = source.get("type")
    kinds = [kinds] if isinstance(kinds, str) else [t for t in kinds or () if t != "null"]
    if kinds == ["object"] or "properties" in source:
        return dict(_FREE_OBJECT)
    return dict(_ANY)


def _with_known_default(owner: str, prop: str, schema: dict[str, Any]) -> dict[str, Any]:
    if "default" in schema:
        return schema
    default = _KNOWN_DEFAULTS.get((owner, prop))
    if default is None and prop == "name" and schema.get("type") == "string":
        description = schema.get("description")
        if isinstance(description, str) and description.startswith(_LOCAL_NAME_DOC):
            default = ""
    return schema if default is None else {**schema, "default": default}


def _complete_list_map(schema: dict[str, Any]) -> None:
    """Make every list-map key required or defaulted in the items, as CRD schemas must.

    Keys the items do not declare make the list-map unusable; it becomes atomic then.
    """
    keys = schema.get("x-kubernetes-list-map-keys")
    items = schema.get("items")
    if not isinstance(keys, list) or not isinstance(items, Mapping):
        return
    props = items.get("properties")
    if not isinstance(props, Mapping) or any(k not in props for k in keys):
        schema["x-kubernetes-list-type"] = "atomic"
        schema.pop("x-kubernetes-list-map-keys", None)
        return
    required = set(items.get("required") or ())
    missing = [k for k in keys if k not in required and "default" not in props[k]]
    if not missing:
        return
    # Copies: `items` may be a memoized definition shared with other places.
    new_props = dict(props)
    for key in missing:
        zero = _ZERO.get(props[key].get("type", ""))
        if zero is not None:
            new_props[key] = {**props[key], "default": zero}
    schema["items"] = {**items, "properties": new_props}
