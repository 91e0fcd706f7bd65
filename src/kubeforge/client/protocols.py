"""What a client can do, as protocols: controller-runtime's client.Reader, client.Writer and
client.SubResourceWriter (for status), and their union.

`Client` (the live client), `CachedClient` (a reconciler's: cached reads, live writes) and
anything else with these methods satisfy `Reader`, `Writer`, `StatusWriter` and
`ObjectClient`; `SyncClient` satisfies the blocking twins `SyncReader`, `SyncWriter`,
`SyncStatusWriter` and `SyncObjectClient`, with the same parameters. Helpers typed against
these protocols work with every client, and a read returns the kind asked for: a typed
class gives its instances, a `GroupVersionKind` or `"apps/v1/Deployment"` string gives dicts.

Writes follow decision 0018: `create`, `update` and `update_status` change the object given
in place into the object as stored and return it; `patch`, `patch_status`, `apply` and
`apply_status` return the object as stored and leave their arguments alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, overload

from kubeforge.api.meta import GroupVersionKind, PartialObjectMetadata
from kubeforge.client.client import KindLike, ObjectList, PatchType, PropagationPolicy

__all__ = [
    "ObjectClient",
    "Reader",
    "StatusWriter",
    "SyncObjectClient",
    "SyncReader",
    "SyncStatusWriter",
    "SyncWriter",
    "Writer",
]

T = TypeVar("T")


class Reader(Protocol):
    """Reads objects: one by name, or a list (of one namespace, or of all namespaces)."""

    @overload
    async def get(self, kind: type[T], name: str, *, namespace: str | None = None) -> T: ...
    @overload
    async def get(
        self, kind: GroupVersionKind | str, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    @overload
    async def list(
        self,
        kind: type[T],
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[T]: ...
    @overload
    async def list(
        self,
        kind: GroupVersionKind | str,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[dict[str, Any]]: ...

    async def get_metadata(
        self, kind: KindLike, name: str, *, namespace: str | None = None
    ) -> PartialObjectMetadata: ...

    async def list_metadata(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[PartialObjectMetadata]: ...


class Writer(Protocol):
    """Creates, replaces, patches, applies and deletes objects."""

    async def create(
        self,
        obj: T,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T: ...

    async def update(
        self,
        obj: T,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T: ...

    @overload
    async def patch(
        self,
        kind: type[T],
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> T: ...
    @overload
    async def patch(
        self,
        kind: GroupVersionKind | str,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> dict[str, Any]: ...

    async def apply(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> T: ...

    async def delete(
        self,
        kind: KindLike,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str | None] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]: ...

    async def delete_object(
        self,
        obj: Any,
        *,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str | None] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]: ...

    async def delete_all_of(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        dry_run: bool = False,
    ) -> None: ...


class StatusWriter(Protocol):
    """Writes the status subresource."""

    async def update_status(
        self,
        obj: T,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T: ...

    @overload
    async def patch_status(
        self,
        kind: type[T],
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> T: ...
    @overload
    async def patch_status(
        self,
        kind: GroupVersionKind | str,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> dict[str, Any]: ...

    async def apply_status(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> T: ...


class ObjectClient(Reader, Writer, StatusWriter, Protocol):
    """Reads and writes objects and their status (controller-runtime's client.Client)."""


class SyncReader(Protocol):
    """`Reader`, blocking: for plain `def` reconcilers running in a worker thread."""

    @overload
    def get(self, kind: type[T], name: str, *, namespace: str | None = None) -> T: ...
    @overload
    def get(
        self, kind: GroupVersionKind | str, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    @overload
    def list(
        self,
        kind: type[T],
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[T]: ...
    @overload
    def list(
        self,
        kind: GroupVersionKind | str,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[dict[str, Any]]: ...

    def get_metadata(
        self, kind: KindLike, name: str, *, namespace: str | None = None
    ) -> PartialObjectMetadata: ...

    def list_metadata(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[PartialObjectMetadata]: ...


class SyncWriter(Protocol):
    """`Writer`, blocking."""

    def create(
        self,
        obj: T,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T: ...

    def update(
        self,
        obj: T,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T: ...

    @overload
    def patch(
        self,
        kind: type[T],
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> T: ...
    @overload
    def patch(
        self,
        kind: GroupVersionKind | str,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> dict[str, Any]: ...

    def apply(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> T: ...

    def delete(
        self,
        kind: KindLike,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str | None] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]: ...

    def delete_object(
        self,
        obj: Any,
        *,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str | None] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]: ...

    def delete_all_of(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        dry_run: bool = False,
    ) -> None: ...


class SyncStatusWriter(Protocol):
    """`StatusWriter`, blocking."""

    def update_status(
        self,
        obj: T,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T: ...

    @overload
    def patch_status(
        self,
        kind: type[T],
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> T: ...
    @overload
    def patch_status(
        self,
        kind: GroupVersionKind | str,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> dict[str, Any]: ...

    def apply_status(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> T: ...


class SyncObjectClient(SyncReader, SyncWriter, SyncStatusWriter, Protocol):
    """`ObjectClient`, blocking."""
