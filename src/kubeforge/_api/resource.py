"""Typed custom resources: `class Machine(Resource[MachineSpec, MachineStatus])`.

    @resource(group="useless.container.training", version="v1alpha1", short_names=["mach"])
    class Machine(Resource[MachineSpec, MachineStatus]):
        \"\"\"A useless machine: whatever you do, it turns its switch back off.\"\"\"

The decorator records the kind's names, scope and CRD options in `__kubeforge__`; the CRD,
its schema and client-side validation are all derived from the class.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Generic, Literal, TypeVar

from pydantic import Field

from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.meta import (
    GroupVersionKind,
    ObjectMeta,
    PrinterColumn,
    ResourceInfo,
    Scale,
    WebhookConversion,
)
from kubeforge._api.model import Model
from kubeforge._api.schema import schema_for_model

__all__ = ["Resource", "pluralize", "registered_resources", "resource"]

SpecT = TypeVar("SpecT")
StatusT = TypeVar("StatusT")
R = TypeVar("R", bound=type)

_REGISTRY: list[type[Any]] = []
_schemas: dict[type[Any], dict[str, Any]] = {}


class Resource(Model, Generic[SpecT, StatusT]):
    """A Kubernetes object with a typed spec and status.

    The class's kind, group, version, plural and scope live in `__kubeforge__` (set by
    `@resource`); apiVersion and kind are filled in from it when an instance is created
    without them.
    """

    __kubeforge__: ClassVar[ResourceInfo]
    # apiVersion, kind and metadata of a top-level object take the standard schema (schema.py).
    __kubeforge_object__: ClassVar[bool] = True

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: SpecT
    status: StatusT | None = None

    def model_post_init(self, context: Any, /) -> None:
        info = getattr(type(self), "__kubeforge__", None)
        if isinstance(info, ResourceInfo):
            if not self.api_version:
                self.api_version = info.gvk.api_version
            if not self.kind:
                self.kind = info.gvk.kind

    def validate(self, old: Resource[SpecT, StatusT] | None = None) -> list[FieldError]:  # type: ignore[override]
        """Check the object as the API server will (schema, CEL rules, name); `old` for an
        update (transition rules). Returns the problems, with the server's field paths."""
        return type(self).validate_data(self.to_dict(), None if old is None else old.to_dict())

    @classmethod
    def validate_data(
        cls, data: Mapping[str, Any], old: Mapping[str, Any] | None = None
    ) -> list[FieldError]:
        """`validate()` for an object given in its JSON form (which may not even parse as
        this class, e.g. a wrong type)."""
        from kubeforge._api.machinery import crvalidation
        from kubeforge._api.machinery.defaulting import apply_defaults
        from kubeforge._api.machinery.names import validate_object_meta
        from kubeforge._api.machinery.pruning import prune

        schema = _schemas.get(cls)
        if schema is None:
            schema = _schemas[cls] = schema_for_model(cls)
        obj = copy.deepcopy(dict(data))
        # The server's order: prune unknown fields, apply defaults, then validate.
        prune(obj, schema)
        apply_defaults(obj, schema)
        errors: list[FieldError] = []
        meta = obj.get("metadata")
        if isinstance(meta, Mapping):
            info = cls.__kubeforge__
            meta = dict(meta)
            if info.namespaced and not meta.get("namespace"):
                meta["namespace"] = "default"  # the server fills it from the request
            errors += validate_object_meta(meta, info.namespaced, "subdomain", old is None)
        previous = None
        if old is not None:
            previous = copy.deepcopy(dict(old))
            prune(previous, schema)
            apply_defaults(previous, schema)
        errors += crvalidation.validate(obj, schema, old=previous)
        return errors


def pluralize(kind: str) -> str:
    """The resource name Kubernetes tooling derives from a kind: `Switch` -> `switches`."""
    word = kind.lower()
    if re.search(r"(s|x|z|ch|sh)$", word):
        return word + "es"
    if re.search(r"[^aeiou]y$", word):
        return word[:-1] + "ies"
    return word + "s"


def resource(
    *,
    group: str,
    version: str,
    kind: str | None = None,
    plural: str | None = None,
    singular: str | None = None,
    scope: Literal["Namespaced", "Cluster"] = "Namespaced",
    short_names: Iterable[str] = (),
    categories: Iterable[str] = (),
    printer_columns: Iterable[PrinterColumn] = (),
    status: bool = True,
    scale: Scale | None = None,
    storage: bool = True,
    served: bool = True,
    deprecated: bool = False,
    deprecation_warning: str | None = None,
    selectable_fields: Iterable[str] = (),
    conversion: WebhookConversion | None = None,
    crd_labels: Mapping[str, str] | None = None,
    crd_annotations: Mapping[str, str] | None = None,
    embedded_object_meta: bool = False,
) -> Callable[[R], R]:
    """Make a Resource subclass a custom resource kind of `group`/`version`.

    `kind` defaults to the class name and `plural` to its English plural. `status` enables
    the status subresource; `scale` the scale subresource. When a kind has several versions
    (one class per version), exactly one of them is the `storage` version.
    `embedded_object_meta` keeps the name, namespace, labels, annotations and finalizers of
    ObjectMeta embedded in the schema (a pod template's metadata), as controller-gen's
    `crd:generateEmbeddedObjectMeta=true` does; otherwise it is a bare object, and the API
    server prunes what it holds.
    """
    if scope not in ("Namespaced", "Cluster"):
        raise ValueError(f"scope must be Namespaced or Cluster, not {scope!r}")

    def decorate(cls: R) -> R:
        name = kind or cls.__name__
        info = ResourceInfo(
            gvk=GroupVersionKind(group, version, name),
            plural=plural or pluralize(name),
            namespaced=scope == "Namespaced",
            singular=singular or name.lower(),
            short_names=tuple(short_names),
            categories=tuple(categories),
            printer_columns=tuple(printer_columns),
            status_subresource=status,
            scale=scale,
            storage=storage,
            served=served,
            deprecated=deprecated,
            deprecation_warning=deprecation_warning,
            selectable_fields=tuple(selectable_fields),
            conversion=conversion,
            crd_labels=tuple(sorted((crd_labels or {}).items())),
            crd_annotations=tuple(sorted((crd_annotations or {}).items())),
            embedded_object_meta=embedded_object_meta,
        )
        cls.__kubeforge__ = info  # type: ignore[attr-defined]
        _REGISTRY.append(cls)
        return cls

    return decorate


def registered_resources() -> list[type[Any]]:
    """Every class decorated with @resource so far, in definition order."""
    return list(_REGISTRY)
