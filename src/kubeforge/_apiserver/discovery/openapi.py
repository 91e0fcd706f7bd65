"""OpenAPI v3 documents of the served API: the `/openapi/v3` index and one document per
group-version.

kubectl (1.29+) reads them before `apply`, `create -f`, `replace` and `edit` to learn whether the
server validates fields itself (a `fieldValidation` query parameter on the kind's PATCH
operation) and which patch type to send (strategic merge only where the PATCH operation lists
it), and `kubectl explain` renders field documentation from `components.schemas`.

Built-in schemas are converted from the `kubernetes-validate` definitions back into the form a
Kubernetes server publishes; CRD-defined types publish their version's `openAPIV3Schema`.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from kubeforge._api.machinery.definitions import INT_OR_STRING, QUANTITY
from kubeforge._apiserver.types.builtin_schemas import BuiltinSchemas
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import ResourceType, Subresource

__all__ = ["OpenAPIV3", "crd_schema_name", "group_version_paths", "gv_path", "type_signature"]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
OBJECT_META = _META + "ObjectMeta"
LIST_META = _META + "ListMeta"
STATUS = _META + "Status"
DELETE_OPTIONS = _META + "DeleteOptions"
PATCH = _META + "Patch"
WATCH_EVENT = _META + "WatchEvent"
RESOURCE_LIST = _META + "APIResourceList"
CONFIG_MAP = "io.k8s.api.core.v1.ConfigMap"  # documents `metadata` like every object kind
_META_ROOTS = (STATUS, DELETE_OPTIONS, PATCH, WATCH_EVENT, RESOURCE_LIST)

_SCHEMA_REF = "#/components/schemas/"
_DEFS_REF = "#/$defs/"

JSON = "application/json"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
BUILTIN_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)
CUSTOM_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)

# Subresources that stream or tunnel rather than exchange objects.
_CONNECT = frozenset({"attach", "exec", "portforward", "proxy"})

_METHOD_OF_VERB = {
    "get": "get",
    "update": "put",
    "patch": "patch",
    "create": "post",
    "delete": "delete",
}
_OPERATION_WORD = {
    "get": "read",
    "put": "replace",
    "patch": "patch",
    "post": "create",
    "delete": "delete",
}


# Parameters ------------------------------------------------------------------------------


def _query(name: str, kind: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description, "schema": {"type": kind}}


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string"},
    }


P_PRETTY = _query("pretty", "string", "If 'true', the response is indented for reading.")
P_NAMESPACE = _path_param("namespace", "the namespace the object lives in")
P_DRY_RUN = _query(
    "dryRun",
    "string",
    "When set, the request is processed completely but nothing is persisted. The only "
    "accepted value is All.",
)
P_FIELD_MANAGER = _query(
    "fieldManager",
    "string",
    "Name of the actor making the change, recorded in metadata.managedFields. At most 128 "
    "printable characters. Apply patches must set it.",
)
P_FIELD_VALIDATION = _query(
    "fieldValidation",
    "string",
    "What to do with unknown or duplicated fields in the request body: Ignore drops them "
    "silently; Warn (the default) drops them and reports each one in a Warning header; "
    "Strict rejects the request with a BadRequest error listing them.",
)
P_FORCE = _query(
    "force",
    "boolean",
    "Apply patches only: take over fields currently owned by other managers instead of "
    "failing with a conflict. Must be unset for other patch types.",
)
P_GRACE = _query(
    "gracePeriodSeconds",
    "integer",
    "Seconds to wait before the object is removed; 0 removes it at once. Unset uses the "
    "type's default.",
)
P_ORPHAN = _query(
    "orphanDependents",
    "boolean",
    "Deprecated form of propagationPolicy: true orphans dependents, false deletes them.",
)
P_PROPAGATION = _query(
    "propagationPolicy",
    "string",
    "How dependents are garbage collected: Orphan, Background or Foreground.",
)
P_BOOKMARKS = _query(
    "allowWatchBookmarks", "boolean", "Ask for BOOKMARK events on a watch (may be ignored)."
)
P_CONTINUE = _query(
    "continue",
    "string",
    "The token from a previous paginated list response, to fetch the next page.",
)
P_FIELD_SELECTOR = _query("fieldSelector", "string", "Select objects by field values.")
P_LABEL_SELECTOR = _query("labelSelector", "string", "Select objects by labels.")
P_LIMIT = _query(
    "limit",
    "integer",
    "The most objects to return; more remain when the list metadata carries `continue`.",
)
P_RESOURCE_VERSION = _query(
    "resourceVersion",
    "string",
    "Which resource version the response may be served from (see the API concepts "
    "documentation on resource versions).",
)
P_RESOURCE_VERSION_MATCH = _query(
    "resourceVersionMatch",
    "string",
    "How resourceVersion applies to a list: Exact or NotOlderThan.",
)
P_INITIAL_EVENTS = _query(
    "sendInitialEvents",
    "boolean",
    "With watch=true: start the stream with the current objects, then a bookmark.",
)
P_TIMEOUT = _query("timeoutSeconds", "integer", "Time limit for the list or watch call.")
P_WATCH = _query(
    "watch",
    "boolean",
    "Stream added, modified and deleted notifications instead of returning a list.",
)

LIST_PARAMETERS = (
    P_BOOKMARKS,
    P_CONTINUE,
    P_FIELD_SELECTOR,
    P_LABEL_SELECTOR,
    P_LIMIT,
    P_RESOURCE_VERSION,
    P_RESOURCE_VERSION_MATCH,
    P_INITIAL_EVENTS,
    P_TIMEOUT,
    P_WATCH,
)
WRITE_PARAMETERS = (P_DRY_RUN, P_FIELD_MANAGER, P_FIELD_VALIDATION)
PATCH_PARAMETERS = (P_DRY_RUN, P_FIELD_MANAGER, P_FIELD_VALIDATION, P_FORCE)
DELETE_PARAMETERS = (P_DRY_RUN, P_GRACE, P_ORPHAN, P_PROPAGATION)
DELETE_COLLECTION_PARAMETERS = (
    P_CONTINUE,
    P_DRY_RUN,
    P_FIELD_SELECTOR,
    P_GRACE,
    P_LABEL_SELECTOR,
    P_LIMIT,
    P_ORPHAN,
    P_PROPAGATION,
    P_RESOURCE_VERSION,
    P_RESOURCE_VERSION_MATCH,
    P_INITIAL_EVENTS,
    P_TIMEOUT,
)
LOG_PARAMETERS = (
    _query("container", "string", "The container to read; optional for one-container pods."),
    _query("follow", "boolean", "Keep streaming as the log grows."),
    _query("limitBytes", "integer", "Stop after this many bytes."),
    _query("previous", "boolean", "Read the previous, terminated instance of the container."),
    _query("sinceSeconds", "integer", "Only lines newer than this many seconds."),
    _query("sinceTime", "string", "Only lines newer than this RFC 3339 time."),
    _query("tailLines", "integer", "Only this many lines from the end."),
    _query("timestamps", "boolean", "Prefix each line with its RFC 3339 time."),
)


# Naming ----------------------------------------------------------------------------------


def gv_path(group: str, version: str) -> str:
    """The index key of a group-version: `api/v1`, `apis/apps/v1`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def crd_schema_name(group: str, version: str, kind: str) -> str:
    """How a server names a CRD-defined kind's schema: `com.example.v1.Widget`."""
    return ".".join([*reversed(group.split(".")), version, kind])


def _camel(words: Iterable[str]) -> str:
    return "".join(w[:1].upper() + w[1:] for w in words if w)


def _group_ident(group: str, builtin: bool) -> str:
    """`apps` -> `Apps`, `rbac.authorization.k8s.io` -> `RbacAuthorization`, `` -> `Core`."""
    if not group:
        return "Core"
    if builtin and group.endswith(".k8s.io"):
        group = group[: -len(".k8s.io")]
    return _camel(group.replace("-", ".").split("."))


def _ident(rt: ResourceType) -> str:
    """The group-version part of operation ids: `AppsV1`, `CoreV1`, `ExampleComV1`."""
    return _group_ident(rt.group, not rt.is_crd) + _camel([rt.version])


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _SCHEMA_REF + name}


def _content(schema: Mapping[str, Any] | None, media: Iterable[str]) -> dict[str, Any]:
    return {m: {"schema": schema} if schema is not None else {} for m in media}


def _responses(
    schema: Mapping[str, Any] | None, codes: Iterable[tuple[str, str]], media: Iterable[str]
) -> dict[str, Any]:
    media = tuple(media)
    out: dict[str, Any] = {
        code: {"description": text, "content": _content(schema, media)} for code, text in codes
    }
    out["401"] = {"description": "Unauthorized"}
    return out


_OK = (("200", "OK"),)
_WRITE_CODES = (("200", "OK"), ("201", "Created"))
_CREATE_CODES = (("200", "OK"), ("201", "Created"), ("202", "Accepted"))
_DELETE_CODES = (("200", "OK"), ("202", "Accepted"))
_LIST_MEDIA = (JSON, "application/json;stream=watch")
_JSON_ONLY = (JSON,)
_TEXT = ("text/plain",)
_STRING_SCHEMA: dict[str, Any] = {"type": "string"}


# Schema conversion -----------------------------------------------------------------------

_SCHEMA_MAPS = ("properties", "patternProperties")
_SCHEMA_VALUES = ("additionalProperties", "items", "not")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")


class _Components:
    """Built-in definitions in the form a server publishes, converted once and shared."""

    def __init__(self, schemas: BuiltinSchemas) -> None:
        self.schemas = schemas
        self._converted: dict[str, dict[str, Any]] = {}
        self._refs: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> dict[str, Any]:
        node = self._converted.get(name)
        if node is None:
            with self._lock:
                node = self._convert_def(name)
        return node

    def refs(self, name: str) -> frozenset[str]:
        if name not in self._refs:
            self.get(name)
        return self._refs.get(name, frozenset())

    def closure(self, roots: Iterable[str]) -> list[str]:
        """Every known definition reachable from `roots`, sorted by name."""
        defs = self.schemas.defs
        seen: set[str] = set()
        todo = [r for r in roots if r in defs]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo.extend(r for r in self.refs(name) if r not in seen and r in defs)
        return sorted(seen)

    def _convert_def(self, name: str) -> dict[str, Any]:
        node = self._converted.get(name)
        if node is not None:
            return node
        source = self.schemas.defs.get(name, {})
        refs: set[str] = set()
        if name == INT_OR_STRING:
            node = {"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]}
        elif name == QUANTITY:
            node = {"oneOf": [{"type": "string"}, {"type": "number"}]}
        else:
            node = _to_v3(source, refs)
        if isinstance(source, Mapping) and "description" in source:
            node.setdefault("description", source["description"])
        self._converted[name] = node
        self._refs[name] = frozenset(refs)
        return node


def _to_v3(node: Mapping[str, Any], refs: set[str]) -> dict[str, Any]:
    """One kubernetes-validate schema node -> its published OpenAPI v3 form.

    Nullable type arrays become a single type, `$ref`s point into `components.schemas`, and a
    reference carrying its own description is wrapped in `allOf` (siblings of `$ref` are
    ignored by OpenAPI 3.0 readers, `kubectl explain` among them).
    """
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref[len(_DEFS_REF) :] if ref.startswith(_DEFS_REF) else ref.rsplit("/", 1)[-1]
        refs.add(name)
        target = _ref(name)
        rest = {k: v for k, v in node.items() if k != "$ref"}
        if not rest:
            return target
        return {"allOf": [target], **_to_v3(rest, refs)}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            if len(kinds) == 1:
                out["type"] = kinds[0]
        elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {
                k: _to_v3(v, refs) if isinstance(v, Mapping) else v for k, v in value.items()
            }
        elif key in _SCHEMA_VALUES and isinstance(value, Mapping):
            out[key] = _to_v3(value, refs)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_to_v3(v, refs) if isinstance(v, Mapping) else v for v in value]
        else:
            out[key] = value
    return out


_COMPONENTS: dict[BuiltinSchemas, _Components] = {}
_COMPONENTS_LOCK = threading.Lock()


def _components_for(schemas: BuiltinSchemas) -> _Components:
    with _COMPONENTS_LOCK:
        comp = _COMPONENTS.get(schemas)
        if comp is None:
            comp = _COMPONENTS[schemas] = _Components(schemas)
        return comp


# Documents ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Doc:
    types: tuple[ResourceType, ...]
    data: bytes
    hash: str


# Built documents are shared by every server in the process: they depend only on the served
# types' content, and rebuilding `api/v1` for each test server would be wasted work.
_DOC_CACHE: OrderedDict[tuple[Any, ...], tuple[bytes, str]] = OrderedDict()
_DOC_CACHE_SIZE = 256
_DOC_CACHE_LOCK = threading.Lock()


def type_signature(rt: ResourceType) -> tuple[Any, ...]:
    """What a published document depends on of one served type (a hashable cache key)."""
    schema = orjson.dumps(rt.schema, option=orjson.OPT_SORT_KEYS) if rt.schema else None
    return (
        rt.group,
        rt.version,
        rt.kind,
        rt.plural,
        rt.namespaced,
        rt.verbs,
        rt.subresources,
        rt.definition,
        rt.crd_name,
        schema,
    )


class OpenAPIV3:
    """Serves `/openapi/v3` and `/openapi/v3/<gv>` for the types of a Registry."""

    def __init__(
        self, registry: Registry, schemas: BuiltinSchemas, kubernetes_version: str | None = None
    ) -> None:
        self.registry = registry
        self.schemas = schemas
        self.kubernetes_version = kubernetes_version or schemas.kubernetes_version
        self._components = _components_for(schemas)
        self._generation = -1
        self._gvs: dict[str, tuple[ResourceType, ...]] = {}
        self._docs: dict[str, _Doc] = {}
        self._lock = threading.Lock()

    def _refresh(self) -> None:
        generation = self.registry.generation
        if generation == self._generation:
            return
        grouped: dict[str, list[ResourceType]] = {}
        for group, versions in self.registry.groups():
            for version in versions:
                grouped[gv_path(group, version)] = []
        for rt in self.registry:
            grouped.setdefault(gv_path(rt.group, rt.version), []).append(rt)
        gvs = {k: tuple(sorted(v, key=lambda t: t.plural)) for k, v in grouped.items() if v}
        self._docs = {p: d for p, d in self._docs.items() if gvs.get(p) == d.types}
        self._gvs = gvs
        self._generation = generation

    def group_versions(self) -> list[str]:
        """Index keys of the served group-versions, in discovery order."""
        with self._lock:
            self._refresh()
            return list(self._gvs)

    def index(self) -> dict[str, Any]:
        """The `/openapi/v3` document: one `serverRelativeURL` (with content hash) per GV."""
        with self._lock:
            self._refresh()
            paths = {
                gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={self._doc(gv).hash}"}
                for gv in self._gvs
            }
        return {"paths": paths}

    def document(self, gv: str) -> bytes | None:
        """The serialized JSON document of one group-version (`api/v1`, `apis/apps/v1`)."""
        doc = self._lookup(gv)
        return None if doc is None else doc.data

    def document_hash(self, gv: str) -> str | None:
        """The content hash the index advertises for a group-version (uppercase hex)."""
        doc = self._lookup(gv)
        return None if doc is None else doc.hash

    def _lookup(self, gv: str) -> _Doc | None:
        key = gv.strip("/")
        with self._lock:
            self._refresh()
            if key not in self._gvs:
                return None
            return self._doc(key)

    def _doc(self, gv: str) -> _Doc:
        doc = self._docs.get(gv)
        if doc is None:
            types = self._gvs[gv]
            cache_key = (self.schemas, self.kubernetes_version, gv, *map(type_signature, types))
            with _DOC_CACHE_LOCK:
                built = _DOC_CACHE.get(cache_key)
                if built is not None:
                    _DOC_CACHE.move_to_end(cache_key)
            if built is None:
                data = orjson.dumps(self._build(types))
                built = (data, hashlib.sha512(data).hexdigest().upper())
                with _DOC_CACHE_LOCK:
                    _DOC_CACHE[cache_key] = built
                    while len(_DOC_CACHE) > _DOC_CACHE_SIZE:
                        _DOC_CACHE.popitem(last=False)
            doc = _Doc(types, *built)
            self._docs[gv] = doc
        return doc

    def _build(self, types: tuple[ResourceType, ...]) -> dict[str, Any]:
        # Schema nodes are shared between documents: serialize the result, never edit it.
        first = types[0]
        gv = gv_path(first.group, first.version)
        builder = _DocumentBuilder(gv, _ident(first), self.schemas, self._components)
        for rt in types:
            builder.add(rt)
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": self.kubernetes_version},
            "paths": builder.paths,
            "components": {
                "schemas": builder.component_schemas(),
                "securitySchemes": {
                    "BearerToken": {
                        "type": "apiKey",
                        "name": "authorization",
                        "in": "header",
                        "description": "Bearer token authentication",
                    }
                },
            },
        }


def group_version_paths(
    types: tuple[ResourceType, ...], schemas: BuiltinSchemas
) -> tuple[dict[str, Any], frozenset[str]]:
    """The OpenAPI v3 path items of one group-version's types, and the names of the built-in
    definitions they (and the shared meta types) refer to. The OpenAPI v2 document is derived
    from the same operations. Nodes are shared: never edit them."""
    first = types[0]
    builder = _DocumentBuilder(
        gv_path(first.group, first.version), _ident(first), schemas, _components_for(schemas)
    )
    for rt in types:
        builder.add(rt)
    return builder.paths, frozenset(builder.roots)


class _DocumentBuilder:
    """Paths and schemas of one group-version document."""

    def __init__(
        self, gv: str, ident: str, schemas: BuiltinSchemas, components: _Components
    ) -> None:
        self.prefix = "/" + gv
        self.schemas = schemas
        self.components = components
        self.paths: dict[str, dict[str, Any]] = {}
        self.roots: set[str] = set(_META_ROOTS)
        self.custom: dict[str, dict[str, Any]] = {}
        self.paths[self.prefix + "/"] = {
            "get": {
                "description": "get the resources served in this group-version",
                "operationId": f"get{ident}APIResources",
                "responses": _responses(_ref(RESOURCE_LIST), _OK, _JSON_ONLY),
            }
        }

    def component_schemas(self) -> dict[str, Any]:
        out = {name: self.components.get(name) for name in self.components.closure(self.roots)}
        out.update(self.custom)
        return dict(sorted(out.items()))

    def _definition(self, group: str, version: str, kind: str) -> str | None:
        name = self.schemas.definition_for_kind(group, version, kind)
        if name is not None:
            self.roots.add(name)
        return name

    def add(self, rt: ResourceType) -> None:
        builtin = not rt.is_crd
        ident = _ident(rt)
        if builtin:
            name = rt.definition if rt.definition in self.schemas else None
            name = name or self._definition(rt.group, rt.version, rt.kind)
            if name is not None:
                self.roots.add(name)
            list_name = self._definition(rt.group, rt.version, rt.list_kind)
            kind_schema = _ref(name) if name else None
            list_schema = _ref(list_name) if list_name else None
        else:
            name = crd_schema_name(rt.group, rt.version, rt.kind)
            list_name = name + "List"
            self.custom[name] = self._crd_kind_schema(rt)
            self.custom[list_name] = self._crd_list_schema(rt, name)
            self.roots.update((OBJECT_META, LIST_META))
            kind_schema, list_schema = _ref(name), _ref(list_name)
        _ResourcePaths(self, rt, ident, builtin, kind_schema, list_schema).add()

    def _crd_kind_schema(self, rt: ResourceType) -> dict[str, Any]:
        source = rt.schema if isinstance(rt.schema, Mapping) else {}
        schema = dict(source)
        props = dict(source.get("properties") or {})
        props["apiVersion"] = self._described(STATUS, "apiVersion", {"type": "string"})
        props["kind"] = self._described(STATUS, "kind", {"type": "string"})
        props["metadata"] = self._described(CONFIG_MAP, "metadata", {"allOf": [_ref(OBJECT_META)]})
        schema["properties"] = props
        schema.setdefault("type", "object")
        schema["x-kubernetes-group-version-kind"] = [
            {"group": rt.group, "kind": rt.kind, "version": rt.version}
        ]
        return schema

    def _crd_list_schema(self, rt: ResourceType, item: str) -> dict[str, Any]:
        return {
            "description": f"{rt.list_kind} is a list of {rt.kind} objects.",
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": self._described(STATUS, "apiVersion", {"type": "string"}),
                "items": {
                    "description": f"The {rt.kind} objects.",
                    "type": "array",
                    "items": _ref(item),
                },
                "kind": self._described(STATUS, "kind", {"type": "string"}),
                "metadata": self._described(STATUS, "metadata", {"allOf": [_ref(LIST_META)]}),
            },
            "x-kubernetes-group-version-kind": [
                {"group": rt.group, "kind": rt.list_kind, "version": rt.version}
            ],
        }

    def _described(self, owner: str, field: str, schema: dict[str, Any]) -> dict[str, Any]:
        """`schema` with the description a built-in type gives the same common field."""
        source = self.schemas.defs.get(owner, {}).get("properties", {}).get(field, {})
        if "description" in source:
            schema["description"] = source["description"]
        return schema


class _ResourcePaths:
    """The path items of one resource and its subresources."""

    def __init__(
        self,
        doc: _DocumentBuilder,
        rt: ResourceType,
        ident: str,
        builtin: bool,
        kind_schema: dict[str, str] | None,
        list_schema: dict[str, str] | None,
    ) -> None:
        self.doc = doc
        self.rt = rt
        self.ident = ident
        self.builtin = builtin
        self.kind_schema = kind_schema
        self.list_schema = list_schema
        self.scope = "Namespaced" if rt.namespaced else ""
        self.tag = ident[:1].lower() + ident[1 : -len(rt.version)] + "_" + rt.version
        self.gvk = {"group": rt.group, "kind": rt.kind, "version": rt.version}
        base = doc.prefix
        if rt.namespaced:
            self.collection = f"{base}/namespaces/{{namespace}}/{rt.plural}"
            self.watch_collection = f"{base}/watch/namespaces/{{namespace}}/{rt.plural}"
        else:
            self.collection = f"{base}/{rt.plural}"
            self.watch_collection = f"{base}/watch/{rt.plural}"
        self.item = self.collection + "/{name}"
        self.scope_params = [P_NAMESPACE] if rt.namespaced else []
        self.p_name = _path_param("name", f"name of the {rt.kind}")

    def _op(
        self,
        action: str,
        operation_id: str,
        description: str,
        responses: dict[str, Any],
        parameters: Iterable[dict[str, Any]] = (),
        body: dict[str, Any] | None = None,
        gvk: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        op: dict[str, Any] = {"description": description, "operationId": operation_id}
        params = list(parameters)
        if params:
            op["parameters"] = params
        if body is not None:
            op["requestBody"] = body
        op["responses"] = responses
        op["tags"] = [self.tag]
        op["x-kubernetes-action"] = action
        op["x-kubernetes-group-version-kind"] = gvk or self.gvk
        return op

    def _body(self, schema: dict[str, str] | None, required: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = {"content": _content(schema, ("*/*",))}
        if required:
            body["required"] = True
        return body

    def _patch_body(self) -> dict[str, Any]:
        media = BUILTIN_PATCH_TYPES if self.builtin else CUSTOM_PATCH_TYPES
        return {"content": _content(_ref(PATCH), media), "required": True}

    def add(self) -> None:
        rt, verbs, kind, ident, scope = (
            self.rt,
            set(self.rt.verbs),
            self.rt.kind,
            self.ident,
            self.scope,
        )
        paths = self.doc.paths
        one = self.kind_schema
        collection: dict[str, Any] = {}
        if "list" in verbs:
            collection["get"] = self._op(
                "list",
                f"list{ident}{scope}{kind}",
                f"list or watch {kind} objects",
                _responses(self.list_schema, _OK, _LIST_MEDIA),
                LIST_PARAMETERS,
            )
        if "create" in verbs:
            collection["post"] = self._op(
                "post",
                f"create{ident}{scope}{kind}",
                f"create a {kind}",
                _responses(one, _CREATE_CODES, _JSON_ONLY),
                WRITE_PARAMETERS,
                self._body(one),
            )
        if "deletecollection" in verbs:
            collection["delete"] = self._op(
                "deletecollection",
                f"delete{ident}Collection{scope}{kind}",
                f"delete a collection of {kind} objects",
                _responses(_ref(STATUS), _OK, _JSON_ONLY),
                DELETE_COLLECTION_PARAMETERS,
                self._body(_ref(DELETE_OPTIONS), required=False),
            )
        if collection:
            collection["parameters"] = [*self.scope_params, P_PRETTY]
            paths[self.collection] = collection

        item: dict[str, Any] = {}
        if "get" in verbs:
            item["get"] = self._op(
                "get",
                f"read{ident}{scope}{kind}",
                f"read a {kind}",
                _responses(one, _OK, _JSON_ONLY),
            )
        if "update" in verbs:
            item["put"] = self._op(
                "put",
                f"replace{ident}{scope}{kind}",
                f"replace a {kind}",
                _responses(one, _WRITE_CODES, _JSON_ONLY),
                WRITE_PARAMETERS,
                self._body(one),
            )
        if "patch" in verbs:
            item["patch"] = self._op(
                "patch",
                f"patch{ident}{scope}{kind}",
                f"partially update a {kind}",
                _responses(one, _WRITE_CODES, _JSON_ONLY),
                PATCH_PARAMETERS,
                self._patch_body(),
            )
        if "delete" in verbs:
            item["delete"] = self._op(
                "delete",
                f"delete{ident}{scope}{kind}",
                f"delete a {kind}",
                _responses(_ref(STATUS), _DELETE_CODES, _JSON_ONLY),
                DELETE_PARAMETERS,
                self._body(_ref(DELETE_OPTIONS), required=False),
            )
        if item:
            item["parameters"] = [self.p_name, *self.scope_params, P_PRETTY]
            paths[self.item] = item

        if "list" in verbs and rt.namespaced:
            paths[f"{self.doc.prefix}/{rt.plural}"] = {
                "get": self._op(
                    "list",
                    f"list{ident}{kind}ForAllNamespaces",
                    f"list or watch {kind} objects in all namespaces",
                    _responses(self.list_schema, _OK, _LIST_MEDIA),
                ),
                "parameters": [*LIST_PARAMETERS, P_PRETTY],
            }
        if "watch" in verbs:
            self._watch_paths()
        for sub in rt.subresources:
            self._subresource(sub)

    def _watch_paths(self) -> None:
        rt, ident, scope, kind = self.rt, self.ident, self.scope, self.rt.kind
        event = _responses(_ref(WATCH_EVENT), _OK, ("application/json;stream=watch",))
        watch_params = [*LIST_PARAMETERS, P_PRETTY]
        self.doc.paths[self.watch_collection] = {
            "get": self._op(
                "watchlist",
                f"watch{ident}{scope}{kind}List",
                f"watch changes to a list of {kind} objects (deprecated: use watch=true)",
                event,
            ),
            "parameters": [*self.scope_params, *watch_params],
        }
        self.doc.paths[self.watch_collection + "/{name}"] = {
            "get": self._op(
                "watch",
                f"watch{ident}{scope}{kind}",
                f"watch changes to a {kind} (deprecated: use watch=true with a field selector)",
                event,
            ),
            "parameters": [self.p_name, *self.scope_params, *watch_params],
        }
        if rt.namespaced:
            self.doc.paths[f"{self.doc.prefix}/watch/{rt.plural}"] = {
                "get": self._op(
                    "watchlist",
                    f"watch{ident}{kind}ListForAllNamespaces",
                    f"watch changes to {kind} objects in all namespaces (deprecated)",
                    event,
                ),
                "parameters": watch_params,
            }

    def _subresource(self, sub: Subresource) -> None:
        rt, ident, scope = self.rt, self.ident, self.scope
        suffix = _camel([sub.name])
        group = rt.group if sub.group is None else sub.group
        version = rt.version if sub.version is None else sub.version
        kind = sub.kind or rt.kind
        gvk = {"group": group, "kind": kind, "version": version}
        if (group, version, kind) == (rt.group, rt.version, rt.kind):
            schema = self.kind_schema
        else:
            name = self.doc._definition(group, version, kind)
            schema = _ref(name) if name else None
        item: dict[str, Any] = {}
        for verb in sorted(set(sub.verbs)):
            method = _METHOD_OF_VERB.get(verb)
            if method is None:
                continue
            if sub.name in _CONNECT:
                item[method] = self._op(
                    "connect",
                    f"connect{ident}{_camel([method])}{scope}{rt.kind}{suffix}",
                    f"connect {method.upper()} requests to {sub.name} of a {rt.kind}",
                    _responses(_STRING_SCHEMA, _OK, ("*/*",)),
                    gvk=gvk,
                )
            elif sub.name == "log":
                item[method] = self._op(
                    "get",
                    f"read{ident}{scope}{rt.kind}Log",
                    f"read the log of a {rt.kind}",
                    _responses(_STRING_SCHEMA, _OK, _TEXT),
                    LOG_PARAMETERS,
                    gvk=gvk,
                )
            else:
                item[method] = self._subresource_op(method, sub.name, suffix, schema, gvk)
        if item:
            item["parameters"] = [
                _path_param("name", f"name of the {kind}"),
                *self.scope_params,
                P_PRETTY,
            ]
            self.doc.paths[f"{self.item}/{sub.name}"] = item

    def _subresource_op(
        self,
        method: str,
        name: str,
        suffix: str,
        schema: dict[str, str] | None,
        gvk: dict[str, str],
    ) -> dict[str, Any]:
        rt, ident, scope = self.rt, self.ident, self.scope
        operation_id = f"{_OPERATION_WORD[method]}{ident}{scope}{rt.kind}{suffix}"
        if method == "get":
            return self._op(
                "get",
                operation_id,
                f"read the {name} of a {rt.kind}",
                _responses(schema, _OK, _JSON_ONLY),
                gvk=gvk,
            )
        if method == "put":
            return self._op(
                "put",
                operation_id,
                f"replace the {name} of a {rt.kind}",
                _responses(schema, _WRITE_CODES, _JSON_ONLY),
                WRITE_PARAMETERS,
                self._body(schema),
                gvk=gvk,
            )
        if method == "patch":
            return self._op(
                "patch",
                operation_id,
                f"partially update the {name} of a {rt.kind}",
                _responses(schema, _WRITE_CODES, _JSON_ONLY),
                PATCH_PARAMETERS,
                self._patch_body(),
                gvk=gvk,
            )
        if method == "post":
            return self._op(
                "post",
                operation_id,
                f"create the {name} of a {rt.kind}",
                _responses(schema, _CREATE_CODES, _JSON_ONLY),
                WRITE_PARAMETERS,
                self._body(schema),
                gvk=gvk,
            )
        return self._op(
            "delete",
            operation_id,
            f"delete the {name} of a {rt.kind}",
            _responses(_ref(STATUS), _DELETE_CODES, _JSON_ONLY),
            DELETE_PARAMETERS,
            self._body(_ref(DELETE_OPTIONS), required=False),
            gvk=gvk,
        )
