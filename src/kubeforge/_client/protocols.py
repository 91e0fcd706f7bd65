"""What a client can do, as protocols: controller-runtime's client.Reader, client.Writer and
client.SubResourceWriter (for status), and their union.

Each verb is defined once, here: its object, and its options as one `TypedDict`
(`kubeforge._client.options`). `Client` (the live client), `CachedClient` (a reconciler's:
cached reads, live writes) and anything else with these methods satisfy `Reader`, `Writer`,
`StatusWriter` and `ObjectClient`; `SyncClient` satisfies the blocking twins `SyncReader`,
`SyncWriter`, `SyncStatusWriter` and `SyncObjectClient`, which are made from them. Helpers
typed against these protocols work with every client, and a read returns the kind asked for:
a typed class gives its instances, a `GroupVersionKind` or `"apps/v1/Deployment"` string
gives dicts.

Writes follow decision 0018: `create`, `update` and `update_status` change the object given
in place into the object as stored and return it; `patch`, `patch_status`, `apply` and
`apply_status` return the object as stored and leave their arguments alone.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, Unpack

from kubeforge._api.meta import PartialObjectMetadata
from kubeforge._client.client import KindLike, KindOf, Obj, ObjectList
from kubeforge._client.forwarding import blocking_member
from kubeforge._client.options import (
    ApplyOptions,
    CreateOptions,
    DeleteAllOfOptions,
    DeleteOptions,
    GetOptions,
    ListOptions,
    PatchOptions,
    UpdateOptions,
)

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

    async def get(self, kind: KindOf[Obj], name: str, **options: Unpack[GetOptions]) -> Obj:
        """One object by name; NotFound when it does not exist."""

    async def list(self, kind: KindOf[Obj], **options: Unpack[ListOptions]) -> ObjectList[Obj]:
        """The objects of a kind that match the options."""

    async def get_metadata(
        self, kind: KindLike, name: str, **options: Unpack[GetOptions]
    ) -> PartialObjectMetadata:
        """One object's apiVersion, kind and metadata."""

    async def list_metadata(
        self, kind: KindLike, **options: Unpack[ListOptions]
    ) -> ObjectList[PartialObjectMetadata]:
        """`list`, with each object's apiVersion, kind and metadata only."""


class Writer(Protocol):
    """Creates, replaces, patches, applies and deletes objects."""

    async def create(self, obj: T, **options: Unpack[CreateOptions]) -> T:
        """Create `obj` (AlreadyExists when the name is taken); it becomes the object as
        stored, in place, and is returned."""

    async def update(self, obj: T, **options: Unpack[UpdateOptions]) -> T:
        """Replace `obj` (Conflict when its resourceVersion is stale); it becomes the object
        as stored, in place, and is returned."""

    async def patch(
        self, kind: KindOf[Obj], name: str, patch: Any, **options: Unpack[PatchOptions]
    ) -> Obj:
        """Patch an object; returns it as stored."""

    async def apply(self, obj: T, **options: Unpack[ApplyOptions]) -> T:
        """Server-side apply `obj` (left as it is); returns the object as stored."""

    async def delete(
        self, kind: KindLike, name: str, **options: Unpack[DeleteOptions]
    ) -> dict[str, Any]:
        """Delete an object; returns the server's answer (the object while finalizers hold
        it, or a Status). NotFound when it does not exist."""

    async def delete_object(self, obj: Any, **options: Unpack[DeleteOptions]) -> dict[str, Any]:
        """Delete the object `obj` names (by kind, namespace and name); `obj` is unchanged."""

    async def delete_all_of(self, kind: KindLike, **options: Unpack[DeleteAllOfOptions]) -> None:
        """Delete every object of a kind in a namespace that matches the selectors."""


class StatusWriter(Protocol):
    """Writes the status subresource."""

    async def update_status(self, obj: T, **options: Unpack[UpdateOptions]) -> T:
        """Replace `obj`'s status; it becomes the object as stored, in place."""

    async def patch_status(
        self, kind: KindOf[Obj], name: str, patch: Any, **options: Unpack[PatchOptions]
    ) -> Obj:
        """Patch an object's status; returns the object as stored."""

    async def apply_status(self, obj: T, **options: Unpack[ApplyOptions]) -> T:
        """Server-side apply of `obj`'s status; returns the object as stored."""


class ObjectClient(Reader, Writer, StatusWriter, Protocol):
    """Reads and writes objects and their status (controller-runtime's client.Client)."""


# The blocking twins: each member is the verb above, returning its result instead of a
# coroutine (the placeholder under each declaration only names it).


class SyncReader(Protocol):
    """`Reader`, blocking: for plain `def` reconcilers running in a worker thread."""

    @blocking_member(Reader.get)
    def get(self) -> None: ...
    @blocking_member(Reader.list)
    def list(self) -> None: ...
    @blocking_member(Reader.get_metadata)
    def get_metadata(self) -> None: ...
    @blocking_member(Reader.list_metadata)
    def list_metadata(self) -> None: ...


class SyncWriter(Protocol):
    """`Writer`, blocking."""

    @blocking_member(Writer.create)
    def create(self) -> None: ...
    @blocking_member(Writer.update)
    def update(self) -> None: ...
    @blocking_member(Writer.patch)
    def patch(self) -> None: ...
    @blocking_member(Writer.apply)
    def apply(self) -> None: ...
    @blocking_member(Writer.delete)
    def delete(self) -> None: ...
    @blocking_member(Writer.delete_object)
    def delete_object(self) -> None: ...
    @blocking_member(Writer.delete_all_of)
    def delete_all_of(self) -> None: ...


class SyncStatusWriter(Protocol):
    """`StatusWriter`, blocking."""

    @blocking_member(StatusWriter.update_status)
    def update_status(self) -> None: ...
    @blocking_member(StatusWriter.patch_status)
    def patch_status(self) -> None: ...
    @blocking_member(StatusWriter.apply_status)
    def apply_status(self) -> None: ...


class SyncObjectClient(SyncReader, SyncWriter, SyncStatusWriter, Protocol):
    """`ObjectClient`, blocking."""
