"""The OpenAPI v2 (Swagger 2.0) document of the served API, served at `/openapi/v2`.

kubectl 1.27 and 1.28 read it, as gnostic protobuf, before `apply`, `create -f`, `replace`,
`diff` and `edit`: a `fieldValidation` parameter on a kind's PATCH operation tells them the
server validates fields itself; otherwise (and for `kind: List` files) they validate against
its definitions. They also compute strategic merge patches from the definitions'
`x-kubernetes-patch-*` extensions, and `kubectl explain` renders them.

The operations are those of the OpenAPI v3 documents (`openapi.group_version_paths`), written
the Swagger 2.0 way. Built-in definitions are converted from the `kubernetes-validate`
definitions; a CRD version's schema is converted the way kube-apiserver publishes it into v2
(k8s.io/apiextensions-apiserver `pkg/controller/openapi/v2`): no `allOf`/`anyOf`/`oneOf`/`not`,
a nullable or unknown-field-preserving node loses its type, items and properties (kubectl's v2
reader rejects or misreads them), and a root that preserves unknown fields publishes a bare
object.

Nothing is built at server start: the document is built on the first request and again only
after the set of served types has changed. Its ETag is the uppercase hex SHA-512 of the JSON
form, shared by both encodings, as kube-openapi's handler does.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from email.utils import formatdate, parsedate_to_datetime
from typing import Any

import orjson

from kubeforge import clock
from kubeforge._api.machinery.definitions import INT_OR_STRING, OBJECT_META, QUANTITY
from kubeforge._apiserver.discovery import openapiv2_proto
from kubeforge._apiserver.discovery.openapi import (
    crd_schema_name,
    group_version_paths,
    gv_path,
    type_signature,
)
from kubeforge._apiserver.http.messages import Response
from kubeforge._apiserver.request.encoding import parse_accept
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.types.builtin_schemas import BuiltinSchemas
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import ResourceType

__all__ = ["OpenAPIV2", "V2Document"]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_LIST_META = _META + "ListMeta"
_STATUS = _META + "Status"
_CONFIG_MAP = "io.k8s.api.core.v1.ConfigMap"  # documents `metadata` like every object kind
_DEFINITIONS = "#/definitions/"
_DEFS_REF = "#/$defs/"
_V3_REF = "#/components/schemas/"
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
_GVK = "x-kubernetes-group-version-kind"

# Swagger 2.0 schema keywords; JSON Schema keywords beyond these have no v2 form.
_V2_KEYWORDS = frozenset(
    {"$ref", "format", "title", "description", "default", "multipleOf", "maximum",
     "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
     "maxItems", "minItems", "uniqueItems", "maxProperties", "minProperties", "required",
     "enum", "additionalProperties", "type", "items", "allOf", "properties", "discriminator",
     "readOnly", "xml", "externalDocs", "example"}
)  # fmt: skip

# Keywords whose values are copied as they are (the others hold schemas).
_COPIED = _V2_KEYWORDS - {"properties", "additionalProperties", "items", "allOf"}

# What a structural CRD schema node keeps when published (value validations and the
# extensions kube-apiserver knows); anything else a CRD carries is not published.
_STRUCTURAL_KEYWORDS = frozenset(
    {"description", "type", "title", "default", "format", "maximum", "exclusiveMaximum",
     "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems",
     "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties", "minProperties",
     "required", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string",
     "x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type",
     "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations"}
)  # fmt: skip

# Deeper CRD schema nodes are published as "any value": the document stays within the JSON
# encoder's and the interpreter's nesting limits whatever a CRD declares.
MAX_SCHEMA_DEPTH = 64

JSON = "application/json"
PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
# The media type kubectl asks for; answered with the same body under PROTOBUF.
PROTOBUF_DEPRECATED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
_OFFERED = (JSON, PROTOBUF_DEPRECATED, PROTOBUF)


# Built-in definitions ----------------------------------------------------------------------


def _to_v2(node: Mapping[str, Any], refs: set[str]) -> dict[str, Any]:
    """One kubernetes-validate schema node -> its Swagger 2.0 form.

    Nullable type arrays become one type, `$ref`s point into `definitions` (a description
    beside a reference is kept, as Kubernetes publishes it), and keywords without a v2 form
    (`oneOf`, ...) are dropped.
    """
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref[len(_DEFS_REF) :] if ref.startswith(_DEFS_REF) else ref.rsplit("/", 1)[-1]
        refs.add(name)
        out: dict[str, Any] = {"$ref": _DEFINITIONS + name}
        if isinstance(node.get("description"), str):
            out["description"] = node["description"]
        return out
    out = {}
    for key, value in node.items():
        if key == "type":
            kinds = [t for t in value if t != "null"] if isinstance(value, list) else [value]
            if len(kinds) == 1 and isinstance(kinds[0], str):
                out["type"] = kinds[0]
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {k: _to_v2(v, refs) for k, v in value.items() if isinstance(v, Mapping)}
        elif key == "additionalProperties" and isinstance(value, bool | Mapping):
            out[key] = value if isinstance(value, bool) else _to_v2(value, refs)
        elif key == "items" and isinstance(value, Mapping):
            out[key] = _to_v2(value, refs)
        elif key == "allOf" and isinstance(value, list):
            out[key] = [_to_v2(v, refs) for v in value if isinstance(v, Mapping)]
        elif key in _COPIED or key.startswith("x-"):
            out[key] = value
    if out.get("type") == "array" and "items" not in out:
        del out["type"]  # kubectl's v2 reader refuses an array without an item schema
    return out


class _Definitions:
    """Built-in definitions in v2 form, converted (and encoded) once per process and shared."""

    def __init__(self, schemas: BuiltinSchemas) -> None:
        self.schemas = schemas
        self._converted: dict[str, dict[str, Any]] = {}
        self._refs: dict[str, frozenset[str]] = {}
        self._encoded: dict[str, bytes] = {}

    def get(self, name: str) -> dict[str, Any]:
        node = self._converted.get(name)
        if node is None:
            source = self.schemas.defs.get(name, {})
            refs: set[str] = set()
            if name == INT_OR_STRING:
                node = {"type": "string", "format": "int-or-string"}
            elif name == QUANTITY:
                node = {"type": "string"}
            else:
                node = _to_v2(source, refs)
            if isinstance(source, Mapping) and isinstance(source.get("description"), str):
                node.setdefault("description", source["description"])
            self._converted[name] = node
            self._refs[name] = frozenset(refs)
        return node

    def encoded(self, name: str) -> bytes:
        """The `NamedSchema` entry of one definition."""
        data = self._encoded.get(name)
        if data is None:
            data = self._encoded[name] = openapiv2_proto.definition_entries({name: self.get(name)})
        return data

    def closure(self, roots: Iterable[str]) -> set[str]:
        """Every known definition reachable from `roots`."""
        defs = self.schemas.defs
        seen: set[str] = set()
        todo = [r for r in roots if r in defs]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            self.get(name)
            todo.extend(r for r in self._refs[name] if r not in seen and r in defs)
        return seen


# CRD-defined definitions -----------------------------------------------------------------


class _MetaFields:
    """The schemas of `apiVersion`, `kind` and `metadata` that every published kind shares,
    described as the built-in kinds describe them."""

    def __init__(self, schemas: BuiltinSchemas) -> None:
        defs = schemas.defs

        def described(owner: str, field: str, schema: dict[str, Any]) -> dict[str, Any]:
            source = defs.get(owner, {}).get("properties", {}).get(field, {})
            if isinstance(source.get("description"), str):
                schema["description"] = source["description"]
            return schema

        self.api_version = described(_STATUS, "apiVersion", {"type": "string"})
        self.kind = described(_STATUS, "kind", {"type": "string"})
        self.metadata = described(_CONFIG_MAP, "metadata", {"$ref": _DEFINITIONS + OBJECT_META})
        self.list_metadata = described(_STATUS, "metadata", {"$ref": _DEFINITIONS + _LIST_META})

    def type_meta(self) -> dict[str, Any]:
        return {"apiVersion": dict(self.api_version), "kind": dict(self.kind)}


def _crd_node(node: Mapping[str, Any], meta: _MetaFields, depth: int) -> dict[str, Any]:
    """One node of a structural CRD schema in the form kube-apiserver publishes into v2."""
    if depth >= MAX_SCHEMA_DEPTH:
        return {}
    nullable = node.get("nullable") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            if not nullable and not preserve and isinstance(value, Mapping):
                out[key] = {
                    k: _crd_node(v, meta, depth + 1)
                    for k, v in value.items()
                    if isinstance(v, Mapping)
                }
        elif key == "items":
            if not nullable and not preserve and isinstance(value, Mapping):
                out[key] = _crd_node(value, meta, depth + 1)
        elif key == "additionalProperties":
            if isinstance(value, Mapping):
                out[key] = _crd_node(value, meta, depth + 1)
            elif isinstance(value, bool):
                out[key] = value
        elif key in _STRUCTURAL_KEYWORDS:
            out[key] = value
    if nullable:
        out.pop("type", None)
    if out.get("type") == "array" and "items" not in out:
        del out["type"]
    if preserve and out.get("type") == "object":
        del out["type"]
    required = out.get("required")
    if isinstance(required, list):
        # A nullable field may be sent as null, which kubectl would count as missing.
        props = node.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping) and extra.get("nullable") is True:
            required = []
        required = [
            f
            for f in required
            if not (isinstance(props.get(f), Mapping) and props[f].get("nullable") is True)
        ]
        if required:
            out["required"] = required
        else:
            del out["required"]
    if node.get("x-kubernetes-embedded-resource") is True and not preserve:
        # An embedded object is itself a Kubernetes object: apiVersion, kind and metadata.
        props = out.setdefault("properties", {})
        props.update(meta.type_meta())
        props["metadata"] = dict(meta.metadata)
        required = list(out.get("required", ()))
        required += [f for f in ("kind", "apiVersion") if f not in required]
        out["required"] = required
    return out


def _crd_definitions(rt: ResourceType, meta: _MetaFields) -> dict[str, dict[str, Any]]:
    """The definitions of one CRD-defined kind and its list."""
    name = crd_schema_name(rt.group, rt.version, rt.kind)
    gvk = {"group": rt.group, "kind": rt.kind, "version": rt.version}
    schema = rt.schema if isinstance(rt.schema, Mapping) else None
    kind: dict[str, Any]
    if schema is None or schema.get("x-kubernetes-preserve-unknown-fields") is True:
        # Fields of apiVersion/kind/metadata only would make kubectl refuse every other field.
        kind = {"type": "object"}
    else:
        kind = _crd_node(schema, meta, 0)
        props = kind.setdefault("properties", {})
        props["metadata"] = dict(meta.metadata)
        props.update(meta.type_meta())
    kind[_GVK] = [gvk]
    list_kind = {
        "description": f"{rt.list_kind} is a list of {rt.kind} objects.",
        "type": "object",
        "required": ["items"],
        "properties": {
            **meta.type_meta(),
            "items": {
                "description": f"The {rt.kind} objects.",
                "type": "array",
                "items": {"$ref": _DEFINITIONS + name},
            },
            "metadata": dict(meta.list_metadata),
        },
        _GVK: [{"group": rt.group, "kind": rt.list_kind, "version": rt.version}],
    }
    return {name: kind, name + "List": list_kind}


# Paths -------------------------------------------------------------------------------------


def _v2_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_V3_REF):
        return {"$ref": _DEFINITIONS + ref[len(_V3_REF) :]}
    return dict(schema)


def _v2_parameter(param: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in param.items() if k != "schema"}
    out.update(param.get("schema") or {"type": "string"})
    out["uniqueItems"] = True  # as Kubernetes marks every query and path parameter
    return out


def _v2_operation(op: Mapping[str, Any]) -> dict[str, Any]:
    params = [_v2_parameter(p) for p in op.get("parameters", ())]
    out: dict[str, Any] = {}
    body = op.get("requestBody")
    if isinstance(body, Mapping):
        content: Mapping[str, Any] = body.get("content", {})
        out["consumes"] = list(content)
        schema = next((m["schema"] for m in content.values() if "schema" in m), None)
        body_param: dict[str, Any] = {"name": "body", "in": "body"}
        if body.get("required"):
            body_param["required"] = True
        if schema is not None:
            body_param["schema"] = _v2_schema(schema)
        params.insert(0, body_param)
    out["description"] = op.get("description", "")
    out["operationId"] = op.get("operationId", "")
    if params:
        out["parameters"] = params
    produces: list[str] = []
    responses: dict[str, Any] = {}
    for code, answer in op.get("responses", {}).items():
        response: dict[str, Any] = {"description": answer.get("description", "")}
        for media, item in answer.get("content", {}).items():
            if media not in produces:
                produces.append(media)
            if "schema" in item and "schema" not in response:
                response["schema"] = _v2_schema(item["schema"])
        responses[code] = response
    out["produces"] = produces
    out["responses"] = responses
    out["schemes"] = ["https"]
    for key, value in op.items():
        if key == "tags" or key.startswith("x-"):
            out[key] = value
    return out


def _v2_path_item(item: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in item.items():
        if key in _METHODS:
            out[key] = _v2_operation(value)
        elif key == "parameters":
            out[key] = [_v2_parameter(p) for p in value]
    return out


class _Fragment:
    """One group-version's part of the document: its paths, the built-in definitions they
    need, and its CRD-defined kinds' definitions (encoded on first use)."""

    __slots__ = ("_encoded_definitions", "_encoded_paths", "definitions", "paths", "roots")

    def __init__(self, types: tuple[ResourceType, ...], schemas: BuiltinSchemas) -> None:
        v3_paths, roots = group_version_paths(types, schemas)
        self.paths = {p: _v2_path_item(v3_paths[p]) for p in sorted(v3_paths)}
        self.roots = roots
        meta = _MetaFields(schemas)
        self.definitions: dict[str, dict[str, Any]] = {}
        for rt in types:
            if rt.is_crd:
                self.definitions.update(_crd_definitions(rt, meta))
        self._encoded_paths: bytes | None = None
        self._encoded_definitions: dict[str, bytes] | None = None

    def encoded_paths(self) -> bytes:
        if self._encoded_paths is None:
            self._encoded_paths = openapiv2_proto.path_entries(self.paths)
        return self._encoded_paths

    def encoded_definition(self, name: str) -> bytes:
        if self._encoded_definitions is None:
            self._encoded_definitions = {
                n: openapiv2_proto.definition_entries({n: d}) for n, d in self.definitions.items()
            }
        return self._encoded_definitions[name]


# Documents ---------------------------------------------------------------------------------


class _Built:
    """One built document, shared by every server that serves the same types."""

    def __init__(self, data: bytes, doc: dict[str, Any], parts: list[_Fragment]) -> None:
        self.json = data
        self.etag = hashlib.sha512(data).hexdigest().upper()
        self._doc = doc
        self._parts = parts
        self._protobuf: bytes | None = None

    def protobuf(self, definitions: _Definitions) -> bytes:
        if self._protobuf is None:
            owner: dict[str, _Fragment] = {}
            for part in self._parts:
                owner.update(dict.fromkeys(part.definitions, part))
            entries = []
            for name in self._doc["definitions"]:
                crd = owner.get(name)
                entries.append(crd.encoded_definition(name) if crd else definitions.encoded(name))
            doc = dict(self._doc)
            doc["paths"] = openapiv2_proto.Encoded(b"".join(p.encoded_paths() for p in self._parts))
            doc["definitions"] = openapiv2_proto.Encoded(b"".join(entries))
            self._protobuf = openapiv2_proto.document(doc)
        return self._protobuf


class V2Document:
    """The current document of one server: JSON and protobuf bodies, ETag, Last-Modified."""

    __slots__ = ("_built", "_definitions", "last_modified")

    def __init__(self, built: _Built, definitions: _Definitions, last_modified: float) -> None:
        self._built = built
        self._definitions = definitions
        self.last_modified = last_modified

    @property
    def json(self) -> bytes:
        return self._built.json

    @property
    def etag(self) -> str:
        """The entity tag, unquoted: uppercase hex SHA-512 of the JSON form."""
        return self._built.etag

    def protobuf(self) -> bytes:
        """The gnostic `openapi.v2.Document` encoding (built on first use)."""
        with _LOCK:
            return self._built.protobuf(self._definitions)


# Shared by every server in the process (guarded by _LOCK): converted built-in definitions,
# one group-version's part by its types' content, whole documents by all their parts.
_LOCK = threading.RLock()
_DEFINITIONS_BY_SCHEMAS: dict[BuiltinSchemas, _Definitions] = {}
_FRAGMENTS: OrderedDict[tuple[Any, ...], _Fragment] = OrderedDict()
_FRAGMENTS_SIZE = 128
_DOCUMENTS: OrderedDict[tuple[Any, ...], _Built] = OrderedDict()
_DOCUMENTS_SIZE = 4  # a document is a few MB


def _cached(cache: OrderedDict[tuple[Any, ...], Any], key: tuple[Any, ...]) -> Any:
    found = cache.get(key)
    if found is not None:
        cache.move_to_end(key)
    return found


def _remember(
    cache: OrderedDict[tuple[Any, ...], Any], key: tuple[Any, ...], value: Any, size: int
) -> None:
    cache[key] = value
    while len(cache) > size:
        cache.popitem(last=False)


class OpenAPIV2:
    """Serves the `/openapi/v2` document for the types of a Registry."""

    def __init__(
        self, registry: Registry, schemas: BuiltinSchemas, kubernetes_version: str | None = None
    ) -> None:
        self.registry = registry
        self.schemas = schemas
        self.kubernetes_version = kubernetes_version or schemas.kubernetes_version
        self._generation = -1
        self._key: tuple[Any, ...] | None = None
        self._current: V2Document | None = None

    def current(self) -> V2Document:
        """The document for the types served now, built if they changed since the last call."""
        with _LOCK:
            generation = self.registry.generation
            if self._current is not None and generation == self._generation:
                return self._current
            grouped: dict[str, list[ResourceType]] = {}
            for rt in self.registry:
                grouped.setdefault(gv_path(rt.group, rt.version) + "/", []).append(rt)
            keys = tuple(
                (gv, *map(type_signature, sorted(grouped[gv], key=lambda t: t.plural)))
                for gv in sorted(grouped)
            )
            key = (self.schemas, self.kubernetes_version, keys)
            if self._current is None or key != self._key:
                built = _cached(_DOCUMENTS, key)
                if built is None:
                    built = self._build(grouped, keys)
                    _remember(_DOCUMENTS, key, built, _DOCUMENTS_SIZE)
                self._current = V2Document(built, self._definitions(), clock.time())
                self._key = key
            self._generation = generation
            return self._current

    def _definitions(self) -> _Definitions:
        found = _DEFINITIONS_BY_SCHEMAS.get(self.schemas)
        if found is None:
            found = _DEFINITIONS_BY_SCHEMAS[self.schemas] = _Definitions(self.schemas)
        return found

    def _build(
        self, grouped: dict[str, list[ResourceType]], keys: tuple[tuple[Any, ...], ...]
    ) -> _Built:
        parts: list[_Fragment] = []
        for key in keys:
            fragment_key = (self.schemas, *key)
            fragment = _cached(_FRAGMENTS, fragment_key)
            if fragment is None:
                types = tuple(sorted(grouped[key[0]], key=lambda t: t.plural))
                fragment = _Fragment(types, self.schemas)
                _remember(_FRAGMENTS, fragment_key, fragment, _FRAGMENTS_SIZE)
            parts.append(fragment)
        builtins = self._definitions()
        definitions: dict[str, Any] = {}
        for name in builtins.closure(r for part in parts for r in part.roots):
            definitions[name] = builtins.get(name)
        for part in parts:
            definitions.update(part.definitions)
        paths: dict[str, Any] = {}
        for part in parts:
            paths.update(part.paths)
        doc: dict[str, Any] = {
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": self.kubernetes_version},
            "paths": paths,
            "definitions": dict(sorted(definitions.items())),
            "security": [{"BearerToken": []}],
            "securityDefinitions": {
                "BearerToken": {
                    "type": "apiKey",
                    "name": "authorization",
                    "in": "header",
                    "description": "Bearer token authentication",
                }
            },
        }
        return _Built(orjson.dumps(doc), doc, parts)

    def respond(self, headers: Mapping[str, str]) -> Response:
        """Answer a GET of `/openapi/v2`: JSON or protobuf as the Accept header asks (406 for
        neither), 304 when If-None-Match names the current ETag (or, without it,
        If-Modified-Since is not older than the document), as Go's http.ServeContent does
        behind kube-openapi's handler."""
        offered = _negotiate(headers.get("Accept"))
        if offered is None:
            raise StatusError.not_acceptable(_OFFERED)
        content_type = JSON if offered == JSON else PROTOBUF
        doc = self.current()
        answer = [("Vary", "Accept"), ("ETag", f'"{doc.etag}"')]
        if _not_modified(headers, doc):
            return Response(304, b"", content_type, answer)
        answer.append(("Last-Modified", formatdate(doc.last_modified, usegmt=True)))
        body = doc.json if offered == JSON else doc.protobuf()
        return Response(200, body, content_type, answer)


def _negotiate(accept: str | None) -> str | None:
    """The first offered media type that an Accept entry (in the client's order) allows."""
    for media in parse_accept(accept):
        kind, _, sub = media.type.partition("/")
        for offered in _OFFERED:
            offered_kind, _, offered_sub = offered.partition("/")
            if kind in (offered_kind, "*") and sub in (offered_sub, "*"):
                return offered
    return None


def _not_modified(headers: Mapping[str, str], doc: V2Document) -> bool:
    match = headers.get("If-None-Match")
    if match is not None:
        for tag in match.split(","):
            tag = tag.strip()
            # Weak comparison, as for GET: W/"x" matches "x".
            if tag == "*" or tag.removeprefix("W/") == f'"{doc.etag}"':
                return True
        return False
    since = headers.get("If-Modified-Since")
    if since is None:
        return False
    try:
        when = parsedate_to_datetime(since).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return False
    return int(doc.last_modified) <= when
