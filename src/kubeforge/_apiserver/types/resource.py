"""What the server knows about one served resource (a group/version/plural)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from kubeforge._apiserver.types.conversion import CRDConversion

__all__ = [
    "ALL_VERBS",
    "GroupResource",
    "NameRule",
    "ResourceType",
    "ScalePaths",
    "Subresource",
]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

NameRule = Literal["subdomain", "label", "dns1035", "path"]

# Converts an object between its served form and the form it is stored in (same dict shape
# otherwise); used where two API versions share one storage, e.g. core/v1 and events.k8s.io/v1.
Converter = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class GroupResource:
    """The storage identity of a resource: objects of all its versions live together."""

    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


@dataclass(frozen=True, slots=True)
class Subresource:
    """A subresource entry in discovery (`pods/log`, `deployments/scale`)."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str | None = None  # None: the parent's group and version
    version: str | None = None


@dataclass(frozen=True, slots=True)
class ScalePaths:
    """Where the scale subresource reads and writes replicas (JSON paths like `.spec.replicas`)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = ".status.selector"


@dataclass(eq=False)
class ResourceType:
    """One resource served at one group/version, built in or defined by a CRD."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    verbs: tuple[str, ...] = ALL_VERBS
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[Subresource, ...] = ()
    # Fields usable in fieldSelector besides metadata.name and metadata.namespace.
    field_selectors: tuple[str, ...] = ()
    # Whether metadata.generation is kept (set to 1, bumped on non-metadata changes).
    tracks_generation: bool = False
    # Whether a /status write may also change annotations (Deployments record their
    # revision that way, as upstream's status strategy allows).
    status_keeps_annotations: bool = False
    # Whether DELETE answers the deleted object rather than a Status.
    returns_deleted_object: bool = False
    name_rule: NameRule = "subdomain"
    # Whether PUT without metadata.resourceVersion is allowed.
    unconditional_update: bool = True
    # Built-ins: the schema definition name in the official definitions.
    definition: str | None = None
    # CRD-defined: the version's openAPIV3Schema, printer columns and the owning CRD.
    schema: dict[str, Any] | None = None
    printer_columns: tuple[dict[str, Any], ...] = ()
    crd_name: str | None = None
    storage_version: str | None = None
    deprecated: bool = False
    deprecation_warning: str | None = None
    scale: ScalePaths | None = None
    # CRD-defined: how objects convert between the CRD's versions (conversion.py).
    conversion: CRDConversion | None = None
    # Storage sharing (see Converter); None means stored as served under its own plural.
    storage: GroupResource | None = None
    to_storage: Converter | None = None
    from_storage: Converter | None = None
    # create-only review resources (SelfSubjectAccessReview ...) are answered, never stored.
    virtual: bool = False
    extras: dict[str, Any] = field(default_factory=dict)
    # `conversion` when a webhook converts the objects (None: apiVersion is all that changes
    # between versions); the one check the read and write paths make.
    webhook_conversion: CRDConversion | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        conversion = self.conversion
        if conversion is not None and conversion.webhook is not None:
            self.webhook_conversion = conversion

    # What these derived values come from is fixed once a type is built (a changed CRD
    # makes new types), and every request reads them, so each is worked out once.

    @cached_property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @cached_property
    def group_resource(self) -> GroupResource:
        return self.storage or GroupResource(self.group, self.plural)

    @property
    def is_crd(self) -> bool:
        return self.crd_name is not None

    @cached_property
    def storage_api_version(self) -> str:
        """The apiVersion objects are written in (a CRD's storage version)."""
        if self.is_crd and self.storage_version:
            return f"{self.group}/{self.storage_version}"
        return self.api_version

    @cached_property
    def has_status(self) -> bool:
        return self.subresource("status") is not None

    def subresource(self, name: str) -> Subresource | None:
        for sub in self.subresources:
            if sub.name == name:
                return sub
        return None

    def qualified(self) -> str:
        """`deployments.apps`, `configmaps`: how error messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural
