#!/usr/bin/env python3
"""Generate `src/kubeforge/models/`: typed pydantic models of the built-in Kubernetes kinds.

The source is the Kubernetes 1.33 OpenAPI definitions shipped by `kubernetes-validate`
(``kubernetes-json-schema/v1.33.0-local/_definitions.json``). Each group-version becomes one
module (``core_v1.py``, ``apps_v1.py``, ...); each definition one class, a subclass of
``kubeforge._api.model.Model`` (snake_case attributes, camelCase JSON, unknown fields kept):

- a property's type follows its schema: ``str``, ``int``, ``bool``, ``int | float`` for
  numbers (an integral number stays an integer), nested models by class, ``list[...]`` and
  ``dict[str, ...]``; IntOrString is ``int | str``, Quantity ``str | int | float``; Time and
  MicroTime are aware datetimes (``kubeforge._api.machinery.timestamps.Time`` /
  ``MicroTime``), written back as Kubernetes writes them, so a round trip reproduces them
  exactly;
- properties are optional (``X | None = None``) unless the definition lists them as required
  (a few that servers are known to leave out are relaxed, see ``RELAXED``);
- ``metadata`` of a top-level kind defaults to an empty ``ObjectMeta`` and ``apiVersion`` and
  ``kind`` default to the kind's own, so a new ``Pod(...)`` serializes as a complete object;
- the description of a property is the docstring under its attribute (editors show it);
- every class carries ``__kubeforge_definition__`` (the definition name) and each served kind
  ``__kubeforge__`` (its ResourceInfo: plural and scope come from the embedded API server's
  table of built-in resources, ``kubeforge._apiserver.types.builtin_types``);
- ObjectMeta, OwnerReference, LabelSelector, LabelSelectorRequirement and Condition are the
  hand-written models of ``kubeforge._api.meta``, reused rather than generated.

The output is deterministic and already in ``ruff format`` style; a unit test checks that the
committed modules equal a fresh generation. Run from the repository root::

    .venv/bin/python tools/gen_models.py           # (re)write src/kubeforge/models/
    .venv/bin/python tools/gen_models.py --check   # exit 1 when the files are stale
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes_validate
import orjson
from pydantic.alias_generators import to_camel

from kubeforge._api.meta import GroupVersionKind
from kubeforge._api.model import Model
from kubeforge._apiserver.types.builtin_types import builtin_types
from kubeforge._apiserver.types.resource import ResourceType

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "src" / "kubeforge" / "models"
KUBERNETES_VERSION = "1.33"
LINE = 100
DEFS = "#/$defs/"


def definitions_path() -> Path:
    """Where kubernetes-validate keeps the Kubernetes 1.33 definitions."""
    base = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    return base / f"v{KUBERNETES_VERSION}.0-local" / "_definitions.json"


@dataclass(frozen=True)
class GroupVersion:
    module: str
    prefix: str  # definition names are f"{prefix}.{Kind}"
    label: str  # as in the module docstring


API = "io.k8s.api"
GROUP_VERSIONS = (
    GroupVersion("meta_v1", "io.k8s.apimachinery.pkg.apis.meta.v1", "meta/v1"),
    GroupVersion("core_v1", f"{API}.core.v1", "core/v1"),
    GroupVersion("apps_v1", f"{API}.apps.v1", "apps/v1"),
    GroupVersion("batch_v1", f"{API}.batch.v1", "batch/v1"),
    GroupVersion("autoscaling_v1", f"{API}.autoscaling.v1", "autoscaling/v1"),
    GroupVersion("autoscaling_v2", f"{API}.autoscaling.v2", "autoscaling/v2"),
    GroupVersion("coordination_v1", f"{API}.coordination.v1", "coordination.k8s.io/v1"),
    GroupVersion("discovery_v1", f"{API}.discovery.v1", "discovery.k8s.io/v1"),
    GroupVersion("events_v1", f"{API}.events.v1", "events.k8s.io/v1"),
    GroupVersion("networking_v1", f"{API}.networking.v1", "networking.k8s.io/v1"),
    GroupVersion("policy_v1", f"{API}.policy.v1", "policy/v1"),
    GroupVersion("rbac_v1", f"{API}.rbac.v1", "rbac.authorization.k8s.io/v1"),
    GroupVersion("scheduling_v1", f"{API}.scheduling.v1", "scheduling.k8s.io/v1"),
    GroupVersion("storage_v1", f"{API}.storage.v1", "storage.k8s.io/v1"),
    GroupVersion(
        "admissionregistration_v1",
        f"{API}.admissionregistration.v1",
        "admissionregistration.k8s.io/v1",
    ),
    GroupVersion(
        "apiextensions_v1",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
        "apiextensions.k8s.io/v1",
    ),
)

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
APIEXT = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"

# Hand-written models of kubeforge._api.meta used in place of generated ones; the module of
# their group-version exports them.
REUSED = {
    **{
        f"{META}.{name}": name
        for name in (
            "Condition",
            "LabelSelector",
            "LabelSelectorRequirement",
            "ObjectMeta",
            "OwnerReference",
        )
    },
    # What kubeforge.get_reference returns (the runtime does not import kubeforge.models).
    f"{API}.core.v1.ObjectReference": "ObjectReference",
}

# The field types of kubeforge._api.machinery.timestamps, imported by the modules using them.
TIME_TYPES = ("MicroTime", "Time")

# Definitions that are not objects: the Python type written for them. `{props}` is the
# JSONSchemaProps class as seen from the module using it.
SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "str | int | float",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int | str",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "dict[str, Any]",
    f"{META}.Time": "Time",
    f"{META}.MicroTime": "MicroTime",
    f"{META}.FieldsV1": "dict[str, Any]",
    f"{META}.Patch": "dict[str, Any]",
    f"{APIEXT}.JSON": "Any",
    f"{APIEXT}.JSONSchemaPropsOrArray": "{props} | list[{props}]",
    f"{APIEXT}.JSONSchemaPropsOrBool": "{props} | bool",
    f"{APIEXT}.JSONSchemaPropsOrStringArray": "{props} | list[str]",
}

# Required upstream, yet real servers return objects without them.
RELAXED = {
    # Events recorded through core/v1 have no eventTime when read as events.k8s.io/v1.
    (f"{API}.events.v1.Event", "eventTime"),
    # A slice without endpoints is serialized with `"endpoints": null`.
    (f"{API}.discovery.v1.EndpointSlice", "endpoints"),
}


@dataclass(frozen=True)
class Served:
    """A served resource the embedded server does not implement (Kubernetes 1.33 facts)."""

    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status: bool = False


EXTRA_RESOURCES: dict[str, Served] = {}

# Kinds that are objects with a GroupVersionKind but no resource of their own.
NOT_RESOURCES = {
    f"{API}.autoscaling.v1.Scale",
    f"{API}.policy.v1.Eviction",
    f"{META}.APIGroup",
    f"{META}.APIVersions",
    f"{META}.Status",
}

# What `kubeforge.models` re-exports by name, and from where (the rest: `models.core_v1.X`).
COMMON = {
    "meta_v1": (
        "Condition",
        "LabelSelector",
        "LabelSelectorRequirement",
        "ListMeta",
        "ObjectMeta",
        "OwnerReference",
        "Status",
    ),
    "core_v1": (
        "Affinity",
        "Binding",
        "Capabilities",
        "ConfigMap",
        "ConfigMapEnvSource",
        "ConfigMapKeySelector",
        "ConfigMapVolumeSource",
        "Container",
        "ContainerPort",
        "ContainerStatus",
        "EmptyDirVolumeSource",
        "EndpointAddress",
        "EndpointPort",
        "EndpointSubset",
        "Endpoints",
        "EnvFromSource",
        "EnvVar",
        "EnvVarSource",
        "Event",
        "ExecAction",
        "HTTPGetAction",
        "KeyToPath",
        "LimitRange",
        "LocalObjectReference",
        "Namespace",
        "Node",
        "NodeSelector",
        "ObjectFieldSelector",
        "ObjectReference",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "PersistentVolumeClaimSpec",
        "PersistentVolumeClaimVolumeSource",
        "Pod",
        "PodCondition",
        "PodSecurityContext",
        "PodSpec",
        "PodStatus",
        "PodTemplate",
        "PodTemplateSpec",
        "Probe",
        "ReplicationController",
        "ResourceQuota",
        "ResourceRequirements",
        "Secret",
        "SecretEnvSource",
        "SecretKeySelector",
        "SecretVolumeSource",
        "SecurityContext",
        "Service",
        "ServiceAccount",
        "ServicePort",
        "ServiceSpec",
        "ServiceStatus",
        "TCPSocketAction",
        "Toleration",
        "TopologySpreadConstraint",
        "Volume",
        "VolumeMount",
    ),
    "apps_v1": (
        "ControllerRevision",
        "DaemonSet",
        "DaemonSetSpec",
        "Deployment",
        "DeploymentSpec",
        "DeploymentStatus",
        "DeploymentStrategy",
        "ReplicaSet",
        "ReplicaSetSpec",
        "RollingUpdateDeployment",
        "StatefulSet",
        "StatefulSetSpec",
    ),
    "batch_v1": ("CronJob", "CronJobSpec", "Job", "JobSpec", "JobStatus", "JobTemplateSpec"),
    "autoscaling_v1": ("Scale",),
    "autoscaling_v2": ("HorizontalPodAutoscaler", "HorizontalPodAutoscalerSpec"),
    "coordination_v1": ("Lease", "LeaseSpec"),
    "discovery_v1": ("EndpointSlice",),
    "networking_v1": ("Ingress", "IngressClass", "IngressSpec", "NetworkPolicy"),
    "policy_v1": ("Eviction", "PodDisruptionBudget", "PodDisruptionBudgetSpec"),
    "rbac_v1": (
        "ClusterRole",
        "ClusterRoleBinding",
        "PolicyRule",
        "Role",
        "RoleBinding",
        "RoleRef",
        "Subject",
    ),
    "scheduling_v1": ("PriorityClass",),
    "storage_v1": ("StorageClass",),
    "admissionregistration_v1": (
        "MutatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
    ),
    "apiextensions_v1": (
        "CustomResourceDefinition",
        "CustomResourceDefinitionSpec",
        "JSONSchemaProps",
    ),
}

HEADER = (
    f"# Generated by tools/gen_models.py from the Kubernetes {KUBERNETES_VERSION} definitions"
    " of kubernetes-validate.\n"
    "# Do not edit by hand: change the generator and run it again.\n"
)

# Attribute names that would shadow what a class body or pydantic already defines.
TYPE_NAMES = {"Any", "ClassVar", "Field", "bool", "dict", "float", "int", "list", "str"}
SHADOWED = {name for name in dir(Model) if not name.startswith("_")}
MODULE_NAMES = frozenset(gv.module for gv in GROUP_VERSIONS)


# Names ------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z]+[0-9]*|[0-9]+")


def snake_case(json_name: str) -> str:
    """`podIPs` -> `pod_ips`, `openAPIV3Schema` -> `open_apiv3_schema`, `$ref` -> `ref`."""
    words: list[str] = []
    for part in re.split(r"[^0-9A-Za-z]+", json_name):
        words.extend(w.lower() for w in _WORD.findall(part))
    return "_".join(words)


def attribute_name(json_name: str, module_names: frozenset[str]) -> str:
    """A Python attribute for a JSON property: snake_case, never a keyword or a shadow."""
    name = snake_case(json_name)
    if not name.isidentifier():
        raise ValueError(f"cannot name property {json_name!r}")
    if (
        keyword.iskeyword(name)
        or name in SHADOWED
        or name in TYPE_NAMES
        or name in module_names
        or name.startswith("model_")
    ):
        name += "_"
    return name


def needs_alias(attr: str, json_name: str) -> bool:
    """Whether the alias generator (snake -> camel) would miss the JSON name."""
    return to_camel(attr) != json_name


# Docstrings --------------------------------------------------------------------------------


def docstring(text: str, indent: int) -> list[str]:
    """A triple-quoted docstring, wrapped to the line limit, as source lines."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').replace("\t", "    ")
    text = text.strip()
    if text.endswith('"'):
        text = text[:-1] + '\\"'
    width = LINE - indent - 3  # room for the quotes that open or close the docstring
    lines = _wrap(text, width)
    if len(lines) == 1 and len(lines[0]) > width - 3:
        lines = _wrap(text, width - 3)  # the one line would hold both quotes
    pad = " " * indent
    lines[0] = '"""' + lines[0].lstrip()
    lines[-1] += '"""'
    return [pad + line if line else "" for line in lines]


def _wrap(text: str, width: int) -> list[str]:
    """Wrap each line of `text`, keeping blank lines between paragraphs and indentation."""
    lines: list[str] = []
    for raw in text.split("\n"):
        stripped = raw.rstrip()
        if not stripped:
            if lines and lines[-1]:
                lines.append("")
            continue
        lead = stripped[: len(stripped) - len(stripped.lstrip())]
        lines.extend(
            textwrap.wrap(
                stripped.lstrip(),
                width,
                initial_indent=lead,
                subsequent_indent=lead,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    while lines and not lines[-1]:
        lines.pop()
    return lines


# Types -------------------------------------------------------------------------------------


@dataclass
class Context:
    """Per module: where each definition lives and what the module must import."""

    module: str
    home: dict[str, str]  # definition -> module
    class_names: dict[str, str]  # definition -> class name
    modules: set[str] = field(default_factory=set)  # sibling modules referenced
    reused: set[str] = field(default_factory=set)  # kubeforge._api.meta names referenced
    times: set[str] = field(
        default_factory=set
    )  # kubeforge._api.machinery.timestamps names referenced
    typing: set[str] = field(default_factory=set)  # typing names referenced
    uses_field: bool = False
    defined: set[str] = field(default_factory=set)  # classes of this module defined so far
    pending: set[str] = field(default_factory=set)  # local classes the current field names
    bases: set[str] = field(default_factory=set)  # base classes used

    def ref(self, name: str) -> str:
        if name in SPECIAL:
            text = SPECIAL[name]
            if text in TIME_TYPES:
                self.times.add(text)
            if "Any" in text:
                self.typing.add("Any")
            if "{props}" in text:
                text = text.replace("{props}", self.ref(f"{APIEXT}.JSONSchemaProps"))
            return text
        if name in REUSED:
            self.reused.add(REUSED[name])
            return REUSED[name]
        home = self.home.get(name)
        if home is None:
            raise KeyError(f"{self.module}: no class for {name}")
        cls = self.class_names[name]
        if home == self.module:
            if cls not in self.defined:
                self.pending.add(cls)
            return cls
        self.modules.add(home)
        return f"{home}.{cls}"

    def type_of(self, schema: dict[str, Any]) -> str:
        """The Python type of a property schema (without the `| None`)."""
        if "$ref" in schema:
            return self.ref(schema["$ref"].removeprefix(DEFS))
        types = schema.get("type")
        kinds = [t for t in types if t != "null"] if isinstance(types, list) else [types]
        kind = kinds[0] if len(kinds) == 1 else None
        if kind == "string":
            return "str"
        if kind == "integer":
            return "int"
        if kind == "boolean":
            return "bool"
        if kind == "number":
            return "int | float"
        if kind == "array":
            return f"list[{self.type_of(schema['items'])}]"
        if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
            return f"dict[str, {self.type_of(schema['additionalProperties'])}]"
        if kind == "object" and "properties" not in schema:
            self.typing.add("Any")
            return "dict[str, Any]"
        raise ValueError(f"{self.module}: unsupported schema {schema!r}")


def optional(type_text: str) -> str:
    return f"{type_text} | None"


# Classes -----------------------------------------------------------------------------------


def single_kind(definition: dict[str, Any]) -> GroupVersionKind | None:
    """The one kind a definition is the object of (None for shared types like DeleteOptions)."""
    gvks = definition.get("x-kubernetes-group-version-kind") or []
    if len(gvks) != 1:
        return None
    gvk = gvks[0]
    return GroupVersionKind(gvk["group"], gvk["version"], gvk["kind"])


def tuple_text(items: tuple[str, ...]) -> str:
    inner = ", ".join(f'"{item}"' for item in items)
    return f"({inner},)" if len(items) == 1 else f"({inner})"


def resource_info_lines(kind: GroupVersionKind, served: ResourceType | Served) -> list[str]:
    """The `__kubeforge__ = ResourceInfo(...)` assignment of a served kind."""
    plural, namespaced = served.plural, served.namespaced
    short, categories = served.short_names, served.categories
    if isinstance(served, ResourceType):
        status = any(sub.name == "status" for sub in served.subresources)
        scale = served.scale
    else:
        status, scale = served.status, None
    gvk_args = f'"{kind.group}", "{kind.version}", "{kind.kind}"'
    args = [
        f"gvk=GroupVersionKind({gvk_args})",
        f'plural="{plural}"',
        f"namespaced={namespaced}",
        f'singular="{kind.kind.lower()}"',
    ]
    if short:
        args.append(f"short_names={tuple_text(short)}")
    if categories:
        args.append(f"categories={tuple_text(categories)}")
    args.append(f"status_subresource={status}")
    if scale is not None:
        selector = f'"{scale.label_selector}"' if scale.label_selector else "None"
        paths = f'"{scale.spec_replicas}", "{scale.status_replicas}", {selector}'
        args.append(f"scale=Scale({paths})")
    lines = ["    __kubeforge__: ClassVar[ResourceInfo] = ResourceInfo("]
    for arg in args:
        if len(f"        {arg},") <= LINE:
            lines.append(f"        {arg},")
        else:
            call, _, inner = arg.partition("(")
            lines += [f"        {call}(", f"            {inner.removesuffix(')')}", "        ),"]
    lines.append("    )")
    return lines


def assignment_lines(target: str, value: str) -> list[str]:
    """`target = value` in a class body; a long value goes in parentheses, as ruff does."""
    line = f"    {target} = {value}"
    if len(line) <= LINE:
        return [line]
    return [f"    {target} = (", f"        {value}", "    )"]


def field_lines(attr: str, type_text: str, default: str | None, alias: str | None) -> list[str]:
    """`attr: type = default`, through `Field(...)` when an alias is needed.

    Long lines are split the way `ruff format` splits them, so formatting is a no-op.
    """
    rhs: str | None = default
    if alias is not None:
        args = [] if default is None else [f"default={default}"]
        args.append(f'alias="{alias}"')
        rhs = f"Field({', '.join(args)})"
    assign = "" if rhs is None else f" = {rhs}"
    line = f"    {attr}: {type_text}{assign}"
    if len(line) <= LINE:
        return [line]
    if rhs is not None:
        head = f"    {attr}: {type_text} = Field("
        inner = rhs.removeprefix("Field(").removesuffix(")")
        if rhs.startswith("Field(") and len(head) <= LINE and len(f"        {inner}") <= LINE:
            return [head, f"        {inner}", "    )"]
        head = f"    {attr}: {type_text} = ("
        if len(head) <= LINE and len(f"        {rhs}") <= LINE:
            return [head, f"        {rhs}", "    )"]
    # The annotation itself is too long: it goes in parentheses.
    lines = [f"    {attr}: (", f"        {type_text}", f"    ){assign}"]
    if max(len(text) for text in lines) > LINE:
        raise ValueError(f"cannot fit {attr}: {type_text} in {LINE} columns")
    return lines


def class_lines(
    name: str, definition: dict[str, Any], ctx: Context, served: ResourceType | Served | None
) -> list[str]:
    """The source of one model class."""
    cls = ctx.class_names[name]
    short = name.rsplit(".", 1)[1]
    description = definition.get("description") or f"{short}, a Kubernetes API type."
    kind = single_kind(definition)
    properties: dict[str, Any] = definition.get("properties") or {}
    base = "BuiltinModel"
    if (
        kind is not None
        and properties.get("metadata", {}).get("$ref") == f"{DEFS}{META}.ObjectMeta"
    ):
        base = "BuiltinObject"
    ctx.bases.add(base)
    lines = [f"class {cls}({base}):", *docstring(description, 4), ""]
    lines += assignment_lines("__kubeforge_definition__: ClassVar[str]", f'"{name}"')
    if served is not None:
        if kind is None:
            raise ValueError(f"{name} is served but has no single kind")
        lines += resource_info_lines(kind, served)
    required = set(definition.get("required") or ())
    seen: dict[str, str] = {}
    for json_name, schema in properties.items():
        attr = attribute_name(json_name, MODULE_NAMES)
        if attr in seen:
            raise ValueError(f"{name}: {json_name} and {seen[attr]} both map to {attr}")
        seen[attr] = json_name
        alias = json_name if needs_alias(attr, json_name) else None
        ctx.pending.clear()
        type_text = ctx.type_of(schema)
        default: str | None
        if kind is not None and json_name in ("apiVersion", "kind") and type_text == "str":
            default = f'"{kind.api_version if json_name == "apiVersion" else kind.kind}"'
        elif kind is not None and json_name == "metadata" and type_text == "ObjectMeta":
            # Always present on a read object; a default lets `obj.metadata.name` type-check.
            default = "Field(default_factory=ObjectMeta)"
            ctx.uses_field = True
        elif json_name in required and (name, json_name) not in RELAXED:
            default = None
        else:
            type_text = optional(type_text)
            default = "None"
        if ctx.pending:
            # A class defined further down (the types are recursive): a forward reference.
            type_text = f'"{type_text}"'
        lines.append("")
        lines += field_lines(attr, type_text, default, alias)
        ctx.uses_field = ctx.uses_field or alias is not None
        if schema.get("description"):
            lines += docstring(schema["description"], 4)
    return lines


# Modules -----------------------------------------------------------------------------------


def served_kinds() -> dict[str, ResourceType | Served]:
    """Definition name -> what the cluster serves for it."""
    served: dict[str, ResourceType | Served] = {}
    for rtype in builtin_types():
        if rtype.definition and rtype.definition not in served:
            served[rtype.definition] = rtype
    for name, extra in EXTRA_RESOURCES.items():
        if name in served:
            raise ValueError(f"{name} is served by the embedded server already")
        served[name] = extra
    return served


def owned_definitions(defs: dict[str, Any]) -> dict[str, list[str]]:
    """Module -> the definitions it declares, in the order of the definitions file."""
    owned: dict[str, list[str]] = {gv.module: [] for gv in GROUP_VERSIONS}
    for name in defs:
        prefix = name.rpartition(".")[0]
        for gv in GROUP_VERSIONS:
            if prefix == gv.prefix and name not in REUSED and name not in SPECIAL:
                owned[gv.module].append(name)
    return owned


def _natural(text: str) -> tuple[str | int, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def all_key(name: str) -> tuple[int, tuple[str | int, ...]]:
    """The order of names in `__all__` (ruff RUF022): CONSTANTS, Classes, others; by case."""
    group = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return (group, _natural(name))


def import_key(name: str) -> tuple[int, tuple[str | int, ...]]:
    """The order of imported names (ruff isort): CONSTANTS, Classes, others; ignoring case."""
    group = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return (group, _natural(name.lower()))


def class_refs(schema: Any, home: dict[str, str], module: str) -> Iterator[str]:
    """Definitions declared in `module` that a schema names (JSONSchemaPropsOr* included)."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref.removeprefix(DEFS)
            if "{props}" in SPECIAL.get(name, ""):
                name = f"{APIEXT}.JSONSchemaProps"
            if home.get(name) == module:
                yield name
        for value in schema.values():
            yield from class_refs(value, home, module)
    elif isinstance(schema, list):
        for item in schema:
            yield from class_refs(item, home, module)


def dependency_order(names: list[str], defs: dict[str, Any], home: dict[str, str]) -> list[str]:
    """`names` with every class after the classes its fields name, where cycles allow.

    Annotations are then evaluated as plain expressions when a class is created (no string
    annotations to parse), which keeps importing a module cheap.
    """
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for dep in class_refs(defs[name].get("properties") or {}, home, home[name]):
            visit(dep)
        order.append(name)

    for name in names:
        visit(name)
    return order


def import_block(names: list[str], module: str) -> list[str]:
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= LINE:
        return [line]
    return [f"from {module} import (", *(f"    {n}," for n in names), ")"]


def module_source(
    gv: GroupVersion,
    names: list[str],
    defs: dict[str, Any],
    home: dict[str, str],
    class_names: dict[str, str],
    served: dict[str, ResourceType | Served],
) -> str:
    """The full text of one generated module."""
    ctx = Context(gv.module, home, class_names)
    body: list[str] = []
    meta_imports: set[str] = set()
    kinds: list[str] = []
    for name in dependency_order(names, defs, home):
        info = served.get(name)
        if info is not None:
            kinds.append(class_names[name])
            meta_imports |= {"GroupVersionKind", "ResourceInfo"}
            if isinstance(info, ResourceType) and info.scale is not None:
                meta_imports.add("Scale")
        body += ["", "", *class_lines(name, defs[name], ctx, info)]
        ctx.defined.add(class_names[name])
    exported = [class_names[n] for n in names]
    # The reused hand-written types are part of their group-version too.
    for definition, reused in REUSED.items():
        if definition.rpartition(".")[0] == gv.prefix:
            ctx.reused.add(reused)
            exported.append(reused)
    if gv.module == "meta_v1":
        # So are the time types of meta/v1.
        ctx.times.update(TIME_TYPES)
        exported += TIME_TYPES
    exported.sort(key=all_key)
    meta_imports |= ctx.reused
    typing_names = sorted({"ClassVar", *ctx.typing})
    doc_kinds = ", ".join(kinds) if kinds else "types shared by every group"
    summary = f"Typed {gv.label} models (Kubernetes {KUBERNETES_VERSION}): {doc_kinds}."
    lines = [HEADER.rstrip("\n")]
    lines += docstring(summary, 0)
    lines.append("")
    lines += import_block(typing_names, "typing")
    lines.append("")
    if ctx.uses_field:
        lines += ["from pydantic import Field", ""]
    if ctx.times:
        lines += import_block(
            sorted(ctx.times, key=import_key), "kubeforge._api.machinery.timestamps"
        )
    if meta_imports:
        lines += import_block(sorted(meta_imports, key=import_key), "kubeforge._api.meta")
    if ctx.modules:
        lines += import_block(sorted(ctx.modules), "kubeforge.models")
    lines += import_block(sorted(ctx.bases), "kubeforge.models._base")
    lines += ["", "__all__ = ["]
    lines += [f'    "{name}",' for name in exported]
    lines.append("]")
    lines += body
    return "\n".join(lines) + "\n"


def init_source(exports: dict[str, str]) -> str:
    """`kubeforge/models/__init__.py`: lazy access to modules and the common kinds."""
    modules = sorted(gv.module for gv in GROUP_VERSIONS)
    lines = [HEADER.rstrip("\n")]
    lines += docstring(
        "Typed models of the built-in Kubernetes kinds, generated from the Kubernetes "
        f"{KUBERNETES_VERSION} OpenAPI definitions.\n\n"
        "    from kubeforge.models import Container, Deployment, Pod\n"
        "    from kubeforge.models import core_v1  # every core/v1 type\n\n"
        "One module per group-version (`core_v1`, `apps_v1`, ...); the common kinds are "
        "re-exported here. Nothing is imported until it is used.",
        0,
    )
    lines += [
        "",
        "from __future__ import annotations",
        "",
        "import importlib",
        "from typing import TYPE_CHECKING, Any",
        "",
        "# The generated modules, one per group-version.",
        "MODULES = (",
        *(f'    "{m}",' for m in modules),
        ")",
        "",
        "# Re-exported name -> the module defining it.",
        "_EXPORTS: dict[str, str] = {",
        *(f'    "{name}": "{module}",' for name, module in sorted(exports.items())),
        "}",
        "",
        "__all__ = [",
        *(f'    "{name}",' for name in sorted(["MODULES", *exports, *modules], key=all_key)),
        "]",
        "",
        "",
        "def __getattr__(name: str) -> Any:",
        "    if name in MODULES:",
        '        value = importlib.import_module(f"{__name__}.{name}")',
        "    elif name in _EXPORTS:",
        '        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)',
        "    else:",
        '        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
        "    globals()[name] = value",
        "    return value",
        "",
        "",
        "def __dir__() -> list[str]:",
        "    return __all__",
        "",
        "",
        "if TYPE_CHECKING:",
    ]
    by_module: dict[str, list[str]] = {}
    for name, module in exports.items():
        by_module.setdefault(module, []).append(name)
    lines.append("    from kubeforge.models import (")
    lines += [f"        {m}," for m in modules]
    lines.append("    )")
    for module in sorted(by_module):
        names = sorted(by_module[module], key=import_key)
        line = f"    from kubeforge.models.{module} import {', '.join(names)}"
        if len(line) <= LINE:
            lines.append(line)
        else:
            lines.append(f"    from kubeforge.models.{module} import (")
            lines += [f"        {n}," for n in names]
            lines.append("    )")
    return "\n".join(lines) + "\n"


def generate() -> dict[str, str]:
    """File name (within src/kubeforge/models) -> its generated text."""
    doc = orjson.loads(definitions_path().read_bytes())
    defs: dict[str, Any] = doc["$defs"]
    owned = owned_definitions(defs)
    home = {name: module for module, names in owned.items() for name in names}
    class_names = {name: name.rsplit(".", 1)[1] for name in home}
    served = {k: v for k, v in served_kinds().items() if k in home}
    for name in EXTRA_RESOURCES:
        if name not in home:
            raise ValueError(f"{name} is not a generated definition")
    for name in home:
        kind = single_kind(defs[name])
        if (
            kind is not None
            and name not in served
            and name not in NOT_RESOURCES
            and not kind.kind.endswith("List")
        ):
            raise ValueError(f"{name}: say whether it is served (EXTRA_RESOURCES or NOT_RESOURCES)")
    # _base.py is written by hand: the base classes are not generated from definitions.
    files: dict[str, str] = {}
    for gv in GROUP_VERSIONS:
        files[f"{gv.module}.py"] = module_source(
            gv, owned[gv.module], defs, home, class_names, served
        )
    exports: dict[str, str] = {}
    for module, names in COMMON.items():
        for name in names:
            if name in exports:
                raise ValueError(f"{name} is exported from {exports[name]} and {module}")
            exports[name] = module
    defined = {(home[name], class_names[name]) for name in home}
    prefixes = {gv.prefix: gv.module for gv in GROUP_VERSIONS}
    defined |= {(prefixes[d.rpartition(".")[0]], name) for d, name in REUSED.items()}
    for name, module in exports.items():
        if (module, name) not in defined:
            raise ValueError(f"{module} does not define {name}")
    files["__init__.py"] = init_source(exports)
    return files


def stale(files: dict[str, str], directory: Path) -> Iterator[str]:
    """Files under `directory` that differ from `files` (or are missing)."""
    for name, text in sorted(files.items()):
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            yield name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail when files are stale")
    parser.add_argument("-o", "--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    files = generate()
    if args.check:
        bad = list(stale(files, args.output))
        for name in bad:
            print(f"stale: {args.output / name}", file=sys.stderr)
        return 1 if bad else 0
    args.output.mkdir(parents=True, exist_ok=True)
    for name in stale(files, args.output):
        (args.output / name).write_text(files[name], encoding="utf-8")
        print(f"wrote {args.output / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
