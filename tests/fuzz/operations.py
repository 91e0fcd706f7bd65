"""Requests to fuzz the server with: creates, updates, every patch type, deletes, status and
scale writes, gets, lists and watches, each with bodies and query strings that are valid,
nearly valid or hostile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

from tests.fuzz.kinds import ANNOTATIONS, KINDS, LABELS, Kind
from tests.fuzz.values import (
    Dup,
    Raw,
    hostile,
    hostile_numbers,
    hostile_text,
    to_json,
    to_yaml,
    with_yaml_scalars,
)

__all__ = ["NAMES", "Example", "Op", "examples", "number_examples", "odd_numbers"]

JSON = "application/json"
YAML = "application/yaml"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Names of the objects an example works on (in its own namespace, or with its prefix for
# cluster-scoped kinds); URL names that can name no object are drawn now and then.
NAMES = ("obj-a", "obj-b")
_BAD_URL_NAMES = ("UPPER", "a..b", "x" * 300, "%20", "a%2Fb", "-a", "%C3%BC", "a%00b", "a.")


@dataclass
class Op:
    """One request. `{ns}` and `{prefix}` in the path and body text are the example's."""

    method: str
    path: str  # "" for the collection, "/<name>[/<subresource>]" for an object
    query: str
    body: str | bytes | None
    content_type: str | None
    name: str | None  # the object the request is about
    dry_run: bool
    watch: bool = False
    accept: str = "application/json"

    @property
    def write(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH", "DELETE")

    def describe(self) -> str:
        body = self.body if isinstance(self.body, str) else repr(self.body)
        shown = (body or "")[:2000]
        return (
            f"{self.method} {self.path}?{self.query} [{self.content_type}] "
            f"(Accept: {self.accept}) {shown}"
        )


@dataclass
class Example:
    kind: Kind
    seed: dict[str, Any] | None  # a valid object created first, as NAMES[0]
    ops: list[Op]


# What reads may ask for: plain JSON or YAML, Tables (what kubectl get asks for), partial
# metadata, or something the server does not serve.
_ACCEPT = st.sampled_from(
    [
        "application/json",
        "application/yaml",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json",
        "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
        "application/vnd.kubernetes.protobuf",
        "text/html",
        "*/*",
    ]
)

# -- query strings -------------------------------------------------------------------------

_SELECTOR = st.one_of(
    st.sampled_from(
        [
            "app=web",
            "app!=web",
            "app in (a,b)",
            "app notin (a)",
            "app",
            "!app",
            "tier==x,app",
            "example.com/role=db",
            "a=b=c",
            "in (",
            "app in ()",
            "=",
            ",",
            "!",
            "app=" + "x" * 70,
            "x y",
        ]
    ),
    hostile_text,
)
_FIELD_SELECTOR = st.one_of(
    st.sampled_from(
        [
            "metadata.name=obj-a",
            "metadata.name!=obj-a",
            "metadata.namespace=default",
            "metadata.name==x,metadata.namespace!=y",
            "spec.mode=A",
            "spec.nodeName=n1",
            "status.phase=Running",
            "type=Opaque",
            "spec.unknown=x",
            "metadata.name",
            "=x",
            "metadata.name=a\\,b",
            "metadata.name=a\\",
        ]
    ),
    hostile_text,
)
_RV = st.one_of(
    st.sampled_from(["0", "1", "", "-1", "abc", "99999999999", "18446744073709551616", "1.5"]),
    st.integers(min_value=0, max_value=10**6).map(str),
)
_INT_TEXT = st.one_of(
    st.sampled_from(["0", "1", "-1", "10", "1e3", "2147483648", "99999999999999999999", "x", ""]),
    st.integers(min_value=-5, max_value=500).map(str),
)
_BOOL_TEXT = st.sampled_from(["true", "false", "True", "0", "1", "", "yes", "FALSE"])
_DRY_RUN = st.sampled_from(["All", "all", "", "x", "All,All"])
_FIELD_VALIDATION = st.sampled_from(["Strict", "Warn", "Ignore", "strict", "", "x"])
_PROPAGATION = st.sampled_from(["Orphan", "Background", "Foreground", "orphan", "", "x"])
_MANAGER = st.one_of(
    st.sampled_from(["fuzz", "kubectl", "a" * 129, "", "ü", "x y"]), st.text(max_size=8)
)

_PARAMS: dict[str, st.SearchStrategy[str]] = {
    "labelSelector": _SELECTOR,
    "fieldSelector": _FIELD_SELECTOR,
    "resourceVersion": _RV,
    "resourceVersionMatch": st.sampled_from(["Exact", "NotOlderThan", "", "exact", "x"]),
    "limit": _INT_TEXT,
    "continue": st.one_of(
        st.sampled_from(["", "abc", "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", "e30", "%%%"]),
        st.binary(max_size=20).map(lambda b: __import__("base64").b64encode(b).decode()),
    ),
    "timeoutSeconds": st.sampled_from(["1", "0", "-1", "x", "1e3", "99999999999"]),
    "allowWatchBookmarks": _BOOL_TEXT,
    "sendInitialEvents": _BOOL_TEXT,
    "dryRun": _DRY_RUN,
    "fieldValidation": _FIELD_VALIDATION,
    "fieldManager": _MANAGER,
    "force": _BOOL_TEXT,
    "propagationPolicy": _PROPAGATION,
    "gracePeriodSeconds": _INT_TEXT,
    "orphanDependents": _BOOL_TEXT,
    "pretty": _BOOL_TEXT,
    "includeObject": st.sampled_from(["None", "Metadata", "Object", "x"]),
    "watch": _BOOL_TEXT,
}
_VERB_PARAMS = {
    "list": (
        "labelSelector",
        "fieldSelector",
        "resourceVersion",
        "resourceVersionMatch",
        "limit",
        "continue",
        "timeoutSeconds",
        "pretty",
        "watch",
    ),
    "watch": (
        "labelSelector",
        "fieldSelector",
        "resourceVersion",
        "resourceVersionMatch",
        "allowWatchBookmarks",
        "sendInitialEvents",
        "timeoutSeconds",
    ),
    "get": ("resourceVersion", "pretty"),
    "create": ("dryRun", "fieldValidation", "fieldManager", "pretty"),
    "update": ("dryRun", "fieldValidation", "fieldManager", "pretty"),
    "patch": ("dryRun", "fieldValidation", "fieldManager", "force"),
    "delete": ("dryRun", "propagationPolicy", "gracePeriodSeconds", "orphanDependents"),
    "deletecollection": (
        "dryRun",
        "propagationPolicy",
        "gracePeriodSeconds",
        "labelSelector",
        "fieldSelector",
        "limit",
    ),
}
_RAW_QUERY_BITS = st.sampled_from(
    ["%zz", "a=%", "&&", "=x", "dryRun", "dryRun=All&dryRun=x", "limit=1&limit=2", "%00=1", "+=+"]
)


@st.composite
def _query(draw: st.DrawFn, verb: str, always: dict[str, str] | None = None) -> tuple[str, bool]:
    """A query string for `verb`, and whether it asks for a dry run (as the server reads it:
    any dryRun value; an unknown one is refused)."""
    pairs: list[tuple[str, str]] = list((always or {}).items())
    names = _VERB_PARAMS[verb]
    for name in draw(st.lists(st.sampled_from(names), max_size=3, unique=True)):
        pairs.append((name, draw(_PARAMS[name])))
    text = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        text = f"{text}&{draw(_RAW_QUERY_BITS)}" if text else draw(_RAW_QUERY_BITS)
    return text, "dryRun" in text


# -- bodies --------------------------------------------------------------------------------

_META_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "labels": LABELS,
    "annotations": ANNOTATIONS,
    "generateName": st.sampled_from(["gen-", "Gen", ""]),
    "namespace": st.sampled_from(["{ns}", "other", "", "BAD"]),
    "uid": st.sampled_from(["", "6b1f0f4e-0000-4000-8000-000000000000", "x"]),
    "resourceVersion": _RV,
    "generation": st.integers(min_value=-2, max_value=2**63),
    "creationTimestamp": st.sampled_from(["2024-01-01T00:00:00Z", "yesterday", None]),
    "deletionTimestamp": st.sampled_from(["2024-01-01T00:00:00Z"]),
    "deletionGracePeriodSeconds": st.integers(min_value=-1, max_value=30),
    "finalizers": st.sampled_from([["example.com/x"], ["bad finalizer"], [], ["kubernetes"]]),
    "ownerReferences": st.sampled_from(
        [
            [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1"}],
            [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "o",
                    "uid": "u1",
                    "controller": True,
                }
            ]
            * 2,
            [{"kind": "X"}],
        ]
    ),
    "managedFields": st.sampled_from(
        [
            [],
            [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {}}],
            [{"manager": "m", "operation": "Update", "fieldsV1": {"f:x": 1}}],
            [{"operation": "bogus"}],
        ]
    ),
    "selfLink": st.just("/x"),
}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path inside a JSON value, parents first."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


@st.composite
def _mutated(draw: st.DrawFn, obj: dict[str, Any], values: st.SearchStrategy[Any]) -> Any:
    """`obj` with one to three hostile changes: a value replaced (of another type, a huge or
    fractional number, odd text), a field added or removed, a key repeated, metadata
    fields set."""
    obj = _copy(obj)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(obj)
        path = draw(st.sampled_from(paths))
        how = draw(
            st.sampled_from(["replace", "replace", "number", "add", "remove", "meta", "dup"])
        )
        if how == "number":
            # Numbers where the kind has them: fractions, exponents, overflows.
            numeric = [
                p
                for p in paths
                if p
                and isinstance(_get(obj, p), int | float)
                and not isinstance(_get(obj, p), bool)
            ]
            if numeric:
                path = draw(st.sampled_from(numeric))
                _get(obj, path[:-1])[path[-1]] = draw(hostile_numbers)
            continue
        if how == "meta":
            meta = obj.setdefault("metadata", {}) if isinstance(obj, dict) else None
            if isinstance(meta, dict):
                field = draw(st.sampled_from(sorted(_META_FIELDS)))
                meta[field] = _copy(draw(st.one_of(_META_FIELDS[field], values)))
            continue
        if not path:
            if how == "replace":
                return _copy(draw(values))
            continue
        parent = _get(obj, path[:-1])
        if isinstance(parent, Dup):
            continue
        if how == "replace":
            parent[path[-1]] = _copy(draw(values))
        elif how == "remove":
            del parent[path[-1]]
        elif how == "add":
            target = _get(obj, path)
            if isinstance(target, dict):
                target[draw(st.text(max_size=6))] = _copy(draw(values))
            elif isinstance(target, list):
                target.append(_copy(draw(values)))
        elif how == "dup" and isinstance(parent, dict) and isinstance(parent[path[-1]], dict):
            inner = parent[path[-1]]
            pairs = list(inner.items())
            if pairs:
                first = pairs[0]
                pairs.append((first[0], _copy(draw(values))))
                parent[path[-1]] = Dup(tuple(pairs))
    return obj


def _object(kind: Kind, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta, **_copy(spec)}


@st.composite
def _encoded(draw: st.DrawFn, body: Any, yaml_ok: bool = True) -> tuple[str | bytes, str]:
    """A body in a form a client may send: JSON, YAML (flow or block), or as something
    else altogether."""
    form = draw(
        st.sampled_from(
            ["json"] * 6 + (["yaml-flow", "yaml-block"] if yaml_ok else []) + ["odd", "garbage"]
        )
    )
    if form == "json":
        return to_json(body, ascii_only=draw(st.booleans())), JSON
    if form == "yaml-flow":
        return to_yaml(body, flow=True), YAML
    if form == "yaml-block":
        return to_yaml(body, flow=False), YAML
    if form == "odd":
        ctype = draw(
            st.sampled_from(
                ["text/plain", "application/vnd.kubernetes.protobuf", "", "application/xml", "*/*"]
            )
        )
        return to_json(body), ctype
    text = to_json(body)
    cut = draw(st.integers(min_value=0, max_value=max(len(text) - 1, 0)))
    garbage = draw(
        st.sampled_from([text[:cut], text + "}", "\ufeff" + text, text + "\n{}", "\x00"])
    )
    return garbage.encode("utf-8", "surrogatepass"), JSON


def _pointer(path: tuple[Any, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


@st.composite
def _json_patch(draw: st.DrawFn, current: dict[str, Any]) -> Any:
    paths = [p for p in _paths(current) if p]
    pointers = st.one_of(
        st.sampled_from(paths).map(_pointer) if paths else st.just("/metadata"),
        st.sampled_from(["", "/", "/spec/-", "/metadata/labels/a~1b", "/x/y", "/~2", "//"]),
    )
    ops = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        op: dict[str, Any] = {
            "op": draw(
                st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"])
            ),
            "path": draw(pointers),
        }
        if op["op"] in ("add", "replace", "test") or draw(st.booleans()):
            op["value"] = draw(hostile)
        if op["op"] in ("move", "copy"):
            op["from"] = draw(pointers)
        if draw(st.integers(min_value=0, max_value=9)) == 0:
            op = draw(_mutated(op, hostile))
        ops.append(op)
    return ops if draw(st.integers(min_value=0, max_value=9)) else draw(hostile)


_SMP_DIRECTIVES = st.sampled_from(
    [
        ("$patch", "delete"),
        ("$patch", "replace"),
        ("$patch", "merge"),
        ("$patch", "bogus"),
        ("$retainKeys", ["data"]),
        ("$retainKeys", "x"),
        ("$setElementOrder/containers", [{"name": "c"}]),
        ("$setElementOrder/ports", [1]),
        ("$deleteFromPrimitiveList/finalizers", ["a"]),
        ("$deleteFromPrimitiveList/command", "x"),
    ]
)


@st.composite
def _merge_patch(draw: st.DrawFn, current: dict[str, Any], strategic: bool) -> Any:
    """Part of the object with changed, nulled or hostile values (and, for strategic merge
    patches, directives and list items marked for deletion)."""
    patch: dict[str, Any] = {}
    values = st.one_of(st.none(), hostile)
    for path in draw(st.lists(st.sampled_from([p for p in _paths(current) if p]), max_size=3)):
        node = patch
        for part in path[:-1]:
            if isinstance(part, int):
                break
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        else:
            last = path[-1]
            if not isinstance(last, int):
                node[last] = draw(values)
                if strategic and draw(st.booleans()):
                    key, value = draw(_SMP_DIRECTIVES)
                    node[key] = value
            elif strategic:
                node["$patch"] = draw(st.sampled_from(["delete", "replace"]))
    if strategic and draw(st.booleans()):
        spec = patch.setdefault("spec", {})
        if isinstance(spec, dict):
            spec["containers"] = [{"name": "c0", "$patch": draw(st.sampled_from(["delete", "x"]))}]
    return patch if draw(st.integers(min_value=0, max_value=9)) else draw(hostile)


@st.composite
def examples(draw: st.DrawFn, kinds: tuple[str, ...] = tuple(KINDS)) -> Example:
    """A kind, a valid object of it to start from, and one to four requests about it."""
    kind = KINDS[draw(st.sampled_from(kinds))]
    seed_spec = draw(kind.spec)
    seed = _object(kind, NAMES[0], seed_spec) if draw(st.integers(0, 5)) else None
    current = seed or _object(kind, NAMES[0], seed_spec)
    ops = [draw(_op(kind, current)) for _ in range(draw(st.integers(min_value=1, max_value=4)))]
    return Example(kind, seed, ops)


@st.composite
def _op(draw: st.DrawFn, kind: Kind, current: dict[str, Any]) -> Op:
    name = draw(st.sampled_from(NAMES)) if draw(st.integers(0, 14)) else None
    url_name = name or draw(st.sampled_from(_BAD_URL_NAMES))
    verb = draw(
        st.sampled_from(
            ["create"] * 3
            + ["update"] * 2
            + ["patch"] * 4
            + ["delete", "deletecollection", "get", "list", "watch"]
            + (["status", "scale"] if kind.subresources else [])
        )
    )
    spec = (
        draw(kind.spec)
        if draw(st.booleans())
        else {k: v for k, v in current.items() if k not in ("apiVersion", "kind", "metadata")}
    )
    valid = _object(kind, name or url_name, spec)
    body_values = hostile
    obj: Any = valid if draw(st.integers(0, 3)) == 0 else draw(_mutated(valid, body_values))
    if verb == "create":
        query, dry = draw(_query("create"))
        if draw(st.integers(0, 4)) == 0:
            obj = draw(_mutated(obj, with_yaml_scalars(hostile)))
        body, ctype = draw(_encoded(obj))
        return Op("POST", "", query, body, ctype, name, dry)
    if verb == "update":
        query, dry = draw(_query("update"))
        body, ctype = draw(_encoded(obj))
        return Op("PUT", f"/{url_name}", query, body, ctype, name, dry)
    if verb == "patch":
        types = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH] + (
            [STRATEGIC_PATCH] if kind.strategic else []
        )
        ctype = draw(st.sampled_from([*types, "application/x-bogus-patch"]))
        force = {}
        if ctype == APPLY_PATCH:
            force = {"fieldManager": "fuzz"} if draw(st.integers(0, 5)) else {}
        query, dry = draw(_query("patch", force))
        if ctype == JSON_PATCH:
            body_value = draw(_json_patch(current))
            body = to_json(body_value)
        elif ctype == APPLY_PATCH:
            applied = obj if draw(st.booleans()) else valid
            body = to_yaml(applied, flow=draw(st.booleans()))
        else:
            body = to_json(draw(_merge_patch(current, ctype == STRATEGIC_PATCH)))
        return Op("PATCH", f"/{url_name}", query, body, ctype, name, dry)
    if verb == "delete":
        query, dry = draw(_query("delete"))
        options: Any = None
        if draw(st.booleans()):
            options = {"kind": "DeleteOptions", "apiVersion": "v1"}
            for key, values in (
                ("propagationPolicy", _PROPAGATION),
                ("gracePeriodSeconds", st.integers(-5, 100)),
                ("orphanDependents", st.booleans()),
                ("dryRun", st.sampled_from([["All"], ["x"], []])),
                ("preconditions", st.sampled_from([{"uid": "x"}, {"resourceVersion": "1"}, {}])),
            ):
                if draw(st.booleans()):
                    options[key] = draw(values)
            if draw(st.booleans()):
                options = draw(_mutated(options, hostile))
        if options is not None:
            # With a body, the server reads the options from it alone.
            dry = isinstance(options, dict) and bool(options.get("dryRun"))
        body = None if options is None else to_json(options)
        return Op("DELETE", f"/{url_name}", query, body, JSON if body else None, name, dry)
    if verb == "deletecollection":
        query, dry = draw(_query("deletecollection"))
        return Op("DELETE", "", query, None, None, None, dry)
    if verb == "get":
        query, _ = draw(_query("get"))
        return Op("GET", f"/{url_name}", query, None, None, name, False, accept=draw(_ACCEPT))
    if verb == "list":
        query, _ = draw(_query("list"))
        watching = "watch" in query
        return Op("GET", "", query, None, None, None, False, watching, draw(_ACCEPT))
    if verb == "watch":
        query, _ = draw(_query("watch", {"watch": "true"}))
        return Op("GET", "", query, None, None, None, False, True, draw(_ACCEPT))
    sub = draw(st.sampled_from(kind.subresources))
    method = draw(st.sampled_from(["GET", "PUT", "PATCH"]))
    if sub == "scale":
        scale: Any = {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": name or url_name},
            "spec": {"replicas": draw(st.integers(0, 5))},
        }
        if draw(st.booleans()):
            scale = draw(_mutated(scale, hostile))
        obj = scale
    query, dry = draw(_query("update" if method == "PUT" else "patch"))
    if method == "GET":
        return Op("GET", f"/{url_name}/{sub}", "", None, None, name, False)
    if method == "PUT":
        body, ctype = draw(_encoded(obj))
        return Op("PUT", f"/{url_name}/{sub}", query, body, ctype, name, dry)
    ctype = draw(st.sampled_from([MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH, APPLY_PATCH]))
    if ctype == JSON_PATCH:
        body = to_json(draw(_json_patch(obj if isinstance(obj, dict) else current)))
    elif ctype == APPLY_PATCH:
        query = f"{query}&fieldManager=fuzz" if query else "fieldManager=fuzz"
        body = to_yaml(obj, flow=True)
    else:
        body = to_json(draw(_merge_patch(current, ctype == STRATEGIC_PATCH)))
    return Op("PATCH", f"/{url_name}/{sub}", query, body, ctype, name, dry)


# -- numbers where they are not expected ---------------------------------------------------

# Number literals Go's decoders and ours could read differently: integers beyond int32,
# int64 and uint64, negative zero, exponents that overflow or underflow a float64, and
# text that is no JSON number at all (NaN, Infinity) -- a 400 for the body's syntax.
_ODD_NUMBERS = (
    "99999999999999999999999",
    "-99999999999999999999999",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "9007199254740993",
    "2147483648",
    "-0",
    "-0.0",
    "0e0",
    "1e+308",
    "-1e+308",
    "1.7976931348623157e308",
    "1e308",
    "1e400",
    "-1e400",
    "1e-400",
    "4.9e-324",
    "1E21",
    "1e20",
    "123456789012345678901234567890.5",
    "0.1e1",
    "3.0",
    "NaN",
    "Infinity",
    "-Infinity",
)
odd_numbers = st.one_of(
    st.sampled_from(_ODD_NUMBERS).map(Raw),
    st.integers(min_value=-(2**80), max_value=2**80).map(lambda n: Raw(str(n))),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: Raw(repr(f))),
)

# Where numbers go beyond the fields a kind has: new fields, labels and annotations (maps of
# strings), and the metadata fields whose Go types are strings or int64.
_EXTRA_PATHS: tuple[tuple[str, ...], ...] = (
    ("metadata", "labels", "n"),
    ("metadata", "annotations", "n"),
    ("metadata", "generation"),
    ("metadata", "resourceVersion"),
    ("metadata", "deletionGracePeriodSeconds"),
    ("metadata", "name"),
    ("metadata", "finalizers"),
    ("spec", "unknownNumber"),
    ("spec", "tags", 0),
    ("spec", "entries", 0, "name"),
    ("spec", "containers", 0, "ports", 0, "containerPort"),
    ("rules", 0, "verbs", 0),
    ("spec", "free", "n"),
    ("spec", "template", "data", "n"),
    ("spec", "template", "metadata", "generation"),
    ("status", "replicas"),
    ("data", "n"),
)


def _place(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`obj` with `value` at `path` (containers made on the way; a list index past the end
    appends)."""
    if not path:
        return value
    node = obj
    for i, part in enumerate(path[:-1]):
        child = node[part] if _has(node, part) else None
        if not isinstance(child, dict | list):
            child = [] if isinstance(path[i + 1], int) else {}
            if isinstance(node, list):
                node.append(child)
            else:
                node[part] = child
        node = child
    last = path[-1]
    if isinstance(node, list) and isinstance(last, int):
        if last < len(node):
            node[last] = value
        else:
            node.append(value)
    elif isinstance(node, dict):
        node[last] = value
    return obj


def _has(node: Any, part: Any) -> bool:
    if isinstance(node, list):
        return isinstance(part, int) and part < len(node)
    return isinstance(node, dict) and part in node


def _nested(path: tuple[Any, ...], value: Any) -> Any:
    """A merge patch that sets `value` at `path` (a list on the way is replaced by a list
    holding the value)."""
    for part in reversed(path):
        value = [value] if isinstance(part, int) else {part: value}
    return value


@st.composite
def _number_paths(draw: st.DrawFn, obj: dict[str, Any]) -> tuple[Any, ...]:
    """A path of `obj` (any field: string, integer, number, boolean, list or map, the object
    itself excepted) or one beyond the fields it has."""
    paths = [p for p in _paths(obj) if p and p[0] not in ("apiVersion", "kind")]
    inside = st.sampled_from(paths) if paths else st.just(("spec",))
    # A list's element and a position past its end too.
    lists = [p for p in paths if isinstance(_get(obj, p), list)]
    appended = st.sampled_from(lists).map(lambda p: (*p, 0)) if lists else inside
    return draw(st.one_of(inside, inside, appended, st.sampled_from(_EXTRA_PATHS)))


@st.composite
def number_examples(draw: st.DrawFn, kinds: tuple[str, ...] = tuple(KINDS)) -> Example:
    """A valid object of a kind, created first, then one to three writes that put an odd
    number literal anywhere in it: through create, update, every patch type (strategic
    merge for built-in kinds) and the status and scale subresources."""
    kind = KINDS[draw(st.sampled_from(kinds))]
    seed = _object(kind, NAMES[0], draw(kind.spec))
    ops = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        number = draw(odd_numbers)
        path = draw(_number_paths(seed))
        placed = _place(_copy(seed), path, number)
        patch_types = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH] + (
            [STRATEGIC_PATCH] if kind.strategic else []
        )
        verb = draw(st.sampled_from(["create", "update", *patch_types, "subresource"]))
        query = draw(st.sampled_from(["", "dryRun=All", "fieldValidation=Strict"]))
        dry = "dryRun" in query
        if verb == "create":
            placed = (
                _place(placed, ("metadata", "name"), NAMES[1])
                if path[:2]
                != (
                    "metadata",
                    "name",
                )
                else placed
            )
            body, ctype = draw(
                _encoded(placed, yaml_ok=True).filter(lambda e: e[1] in (JSON, YAML))
            )
            ops.append(Op("POST", "", query, body, ctype, NAMES[1], dry))
        elif verb == "update":
            ops.append(Op("PUT", f"/{NAMES[0]}", query, to_json(placed), JSON, NAMES[0], dry))
        elif verb == JSON_PATCH:
            op = draw(st.sampled_from(["replace", "add", "test"]))
            patch = [{"op": op, "path": _pointer(path), "value": number}]
            ops.append(Op("PATCH", f"/{NAMES[0]}", query, to_json(patch), verb, NAMES[0], dry))
        elif verb == APPLY_PATCH:
            manager = "fieldManager=fuzz&force=true"
            text = to_yaml(placed, flow=True)
            q = f"{query}&{manager}" if query else manager
            ops.append(Op("PATCH", f"/{NAMES[0]}", q, text, verb, NAMES[0], dry))
        elif verb == "subresource" and kind.subresources:
            sub = draw(st.sampled_from(kind.subresources))
            if sub == "scale":
                scale = {
                    "apiVersion": "autoscaling/v1",
                    "kind": "Scale",
                    "metadata": {"name": NAMES[0]},
                    "spec": {"replicas": 1},
                }
                scale_path = draw(st.sampled_from([("spec", "replicas"), ("metadata", "name")]))
                body = to_json(_place(scale, scale_path, number))
                ops.append(Op("PUT", f"/{NAMES[0]}/scale", query, body, JSON, NAMES[0], dry))
            else:
                patch_body = to_json(_nested(path, number))
                ops.append(
                    Op("PATCH", f"/{NAMES[0]}/{sub}", query, patch_body, MERGE_PATCH, NAMES[0], dry)
                )
        else:
            ctype = verb if verb in (MERGE_PATCH, STRATEGIC_PATCH) else MERGE_PATCH
            body = to_json(_nested(path, number))
            ops.append(Op("PATCH", f"/{NAMES[0]}", query, body, ctype, NAMES[0], dry))
    return Example(kind, seed, ops)
