"""Identifying kinds and objects: a kind's group, version and name (`GroupVersionKind`),
what `@resource` records about a class (`ResourceInfo`, `registered_resources`), the shapes
of object the helpers and clients accept (`KubeObject`: a typed model or a dict;
`HasMetadata`), metadata-only objects (`PartialObjectMetadata`) and a condition's status.

The metadata types themselves are at the root (`kubeforge.ObjectMeta`, `kubeforge.Condition`)
and, with every other meta/v1 type, in `kubeforge.models`.
"""

from __future__ import annotations

from kubeforge._api.meta import (
    ConditionStatus,
    GroupVersionKind,
    HasMetadata,
    KubeObject,
    PartialObjectMetadata,
    ResourceInfo,
)
from kubeforge._api.resource import registered_resources

__all__ = [
    "ConditionStatus",
    "GroupVersionKind",
    "HasMetadata",
    "KubeObject",
    "PartialObjectMetadata",
    "ResourceInfo",
    "registered_resources",
]
