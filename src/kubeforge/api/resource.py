"""Typed custom resources: `class Machine(Resource[MachineSpec, MachineStatus])`."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from pydantic import Field

from kubeforge.api.meta import ObjectMeta, ResourceInfo
from kubeforge.api.model import Model

__all__ = ["Resource"]

SpecT = TypeVar("SpecT")
StatusT = TypeVar("StatusT")


class Resource(Model, Generic[SpecT, StatusT]):
    """A Kubernetes object with a typed spec and status.

    The class's kind, group, version, plural and scope live in `__kubeforge__`; apiVersion
    and kind are filled in from it when an instance is created without them.
    """

    __kubeforge__: ClassVar[ResourceInfo]

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: SpecT
    status: StatusT | None = None

    def model_post_init(self, context: Any, /) -> None:
        info = type(self).__dict__.get("__kubeforge__") or getattr(
            type(self), "__kubeforge__", None
        )
        if isinstance(info, ResourceInfo):
            if not self.api_version:
                self.api_version = info.gvk.api_version
            if not self.kind:
                self.kind = info.gvk.kind
