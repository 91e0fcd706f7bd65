"""What one admission request is about: the operation, the resource, the objects and who asks.

Built as kube-apiserver's handlers build `admission.Attributes` (k8s.io/apiserver
pkg/endpoints/handlers create.go, update.go, patch.go, delete.go, rest.go for CONNECT).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeforge._apiserver.request.user import UserInfo
from kubeforge._apiserver.types.resource import ResourceType

__all__ = ["GVK", "Attributes", "operation_options"]

# (group, version, kind)
GVK = tuple[str, str, str]

_OPTIONS_KINDS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


@dataclass(slots=True)
class Attributes:
    """One admission request. `object` is None on DELETE and `old_object` on CREATE."""

    operation: str
    rt: ResourceType
    subresource: str
    kind: GVK
    name: str
    namespace: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    options: dict[str, Any] | None
    dry_run: bool
    user: UserInfo

    @property
    def is_namespace(self) -> bool:
        """Whether the request is about a Namespace object itself."""
        return self.rt.group == "" and self.rt.plural == "namespaces"


def operation_options(
    operation: str, query: Mapping[str, str], body: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The CreateOptions, UpdateOptions or DeleteOptions a request carried (PATCH requests
    are admitted with the UpdateOptions or CreateOptions their PatchOptions amount to)."""
    kind = _OPTIONS_KINDS.get(operation)
    if kind is None:
        return None
    options: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if operation == "DELETE":
        for key, value in (body or {}).items():
            if key not in ("kind", "apiVersion") and value is not None:
                options[key] = value
        if query.get("dryRun"):
            options["dryRun"] = [query["dryRun"]]
        return options
    if query.get("dryRun"):
        options["dryRun"] = [query["dryRun"]]
    for key in ("fieldManager", "fieldValidation"):
        if query.get(key):
            options[key] = query[key]
    return options
