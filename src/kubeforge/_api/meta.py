"""Identifying kinds and objects: GroupVersionKind, object references, namespaced names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Protocol, TypeAlias

from pydantic import Field

from kubeforge._api.machinery.timestamps import Time
from kubeforge._api.markers import Format, MaxLength, Minimum, MinLength, Pattern, Required
from kubeforge._api.model import Model

__all__ = [
    "Condition",
    "ConditionStatus",
    "GroupVersionKind",
    "HasMetadata",
    "KubeObject",
    "LabelSelector",
    "LabelSelectorRequirement",
    "NamespacedName",
    "ObjectMeta",
    "ObjectReference",
    "OwnerReference",
    "PartialObjectMetadata",
    "PrinterColumn",
    "ResourceInfo",
    "Scale",
    "WebhookConversion",
    "gvk_of",
    "split_api_version",
]


def split_api_version(api_version: str) -> tuple[str, str]:
    """`apps/v1` -> ("apps", "v1"); `v1` -> ("", "v1")."""
    group, _, version = api_version.rpartition("/")
    return group, version


@dataclass(frozen=True, slots=True)
class GroupVersionKind:
    """A kind in one API version: `GroupVersionKind("apps", "v1", "Deployment")`."""

    group: str
    version: str
    kind: str

    @classmethod
    def of(cls, api_version: str, kind: str) -> GroupVersionKind:
        """From an apiVersion string and a kind: `of("apps/v1", "Deployment")`."""
        group, version = split_api_version(api_version)
        return cls(group, version, kind)

    @classmethod
    def parse(cls, text: str) -> GroupVersionKind:
        """From `apps/v1/Deployment` or `v1/ConfigMap` (apiVersion, a slash, the kind)."""
        api_version, sep, kind = text.rpartition("/")
        if not sep or not api_version or not kind:
            raise ValueError(
                f"{text!r} is not a kind: write the apiVersion and the kind, "
                "e.g. 'apps/v1/Deployment'"
            )
        return cls.of(api_version, kind)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.api_version}/{self.kind}"


def gvk_of(obj: Mapping[str, Any]) -> GroupVersionKind:
    """The kind of an object given as a dict (its `apiVersion` and `kind`)."""
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
        raise ValueError("the object has no apiVersion and kind")
    return GroupVersionKind.of(api_version, kind)


@dataclass(frozen=True, slots=True, order=True)
class NamespacedName:
    """An object's key: namespace ("" for cluster-scoped) and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """A column of `kubectl get` for a custom resource (additionalPrinterColumns).

    `type`: string, integer, number, boolean or date; `priority` > 0 shows only with -o wide.
    """

    name: str
    json_path: str
    type: str = "string"
    format: str | None = None
    priority: int = 0
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Scale:
    """The scale subresource: where replicas live (paths like `.spec.replicas`)."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = None


@dataclass(frozen=True, slots=True)
class WebhookConversion:
    """Convert between a CRD's versions through a conversion webhook (served at `path`)."""

    service_name: str = "webhook-service"
    service_namespace: str = "system"
    path: str = "/convert"
    port: int = 443
    review_versions: tuple[str, ...] = ("v1",)


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """What a typed resource class knows about itself: its kind, names, scope and CRD options.

    Classes carrying `__kubeforge__: ResourceInfo` (and `from_dict` / `to_dict`) can be passed
    to the client wherever a kind is expected, and their objects are returned typed.
    """

    gvk: GroupVersionKind
    plural: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    printer_columns: tuple[PrinterColumn, ...] = ()
    status_subresource: bool = True
    scale: Scale | None = None
    storage: bool = True
    served: bool = True
    deprecated: bool = False
    deprecation_warning: str | None = None
    selectable_fields: tuple[str, ...] = ()
    conversion: WebhookConversion | None = None
    crd_labels: tuple[tuple[str, str], ...] = ()
    crd_annotations: tuple[tuple[str, str], ...] = ()
    embedded_object_meta: bool = False


class HasMetadata(Protocol):
    """A typed object: a resource or model with a `metadata` attribute."""

    @property
    def metadata(self) -> Any: ...


KubeObject: TypeAlias = HasMetadata | Mapping[str, Any]
"""An object as the helpers take it: a typed resource or model, or a dict in JSON form."""


# Typed metadata models (the JSON form is camelCase; unknown fields are kept). -----------------


class OwnerReference(Model):
    """An owner of an object; `controller=True` marks the managing controller."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectReference(Model):
    """A reference to an object, or to a part of one (core/v1 ObjectReference): what
    `kubeforge.get_reference` makes, and the type of such fields in the built-in models."""

    # Its CRD schema is the upstream definition's, descriptions included.
    __kubeforge_definition__: ClassVar[str] = "io.k8s.api.core.v1.ObjectReference"

    api_version: str | None = None
    """API version of the referent."""

    field_path: str | None = None
    """The part of the object referred to, e.g. `spec.containers{name}`."""

    kind: str | None = None
    """Kind of the referent."""

    name: str | None = None
    """Name of the referent."""

    namespace: str | None = None
    """Namespace of the referent."""

    resource_version: str | None = None
    """The resourceVersion the reference is made to, if any."""

    uid: str | None = None
    """UID of the referent."""


class ObjectMeta(Model):
    """Standard object metadata."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    finalizers: list[str] | None = None
    owner_references: list[OwnerReference] | None = None
    managed_fields: list[dict[str, object]] | None = None


class PartialObjectMetadata(Model):
    """An object's apiVersion, kind and metadata only (metav1.PartialObjectMetadata): what
    metadata-only reads and watches return, naming the object's own kind."""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)


ConditionStatus: TypeAlias = Literal["True", "False", "Unknown"]
"""The status of a condition."""

# metav1.Condition's limits, as its +kubebuilder markers state them (apimachinery
# pkg/apis/meta/v1/types.go): a type is a qualified name, optionally prefixed by a DNS
# subdomain and a slash; a reason is a CamelCase identifier.
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


class Condition(Model):
    """One aspect of the state of an object: metav1.Condition, with the same schema (a
    `conditions` list of these validates in a CRD exactly as controller-gen's does)."""

    type: Annotated[str, Pattern(CONDITION_TYPE_PATTERN), MaxLength(316)]
    """What the condition is about, in CamelCase (or example.com/CamelCase), e.g. Ready."""

    status: ConditionStatus
    """Whether the condition holds: True, False or Unknown."""

    observed_generation: Annotated[int, Minimum(0), Format("int64")] | None = None
    """The object's metadata.generation the condition was worked out from."""

    last_transition_time: Annotated[Time | None, Required()] = None
    """When the status last changed (set_status_condition fills it in)."""

    reason: Annotated[str, MinLength(1), MaxLength(1024), Pattern(CONDITION_REASON_PATTERN)]
    """Why the status is what it is: a CamelCase identifier, never empty."""

    message: Annotated[str, MaxLength(32768)]
    """Details for people; may be empty ("") but must be given."""


class LabelSelectorRequirement(Model):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(Model):
    """matchLabels and matchExpressions (metav1.LabelSelector)."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = Field(default=None)
