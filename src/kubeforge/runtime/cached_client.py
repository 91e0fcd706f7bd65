"""The client a reconciler uses: reads from the shared cache, writes to the API server.

`get` and `list` answer from memory for kinds the cache watches and raise `NotCached` for
others (read those through `api`, the uncached client). Every write goes to the server, and
the object it returns goes into the cache at once, so the next read sees it. `CachedClient`
satisfies `ObjectClient` (Reader, Writer, StatusWriter); `SyncClient` offers the same calls,
blocking, to plain `def` reconcilers running in worker threads (`SyncObjectClient`).

`namespace=None` in a cached `list` means every namespace the cache holds, as in
controller-runtime; the live client's means its default namespace. Pass `namespace=` or
`all_namespaces=True` to mean the same with both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar, overload

from kubeforge.api.machinery.selectors import LabelSelector
from kubeforge.api.meta import GroupVersionKind, PartialObjectMetadata
from kubeforge.client.client import Client, KindLike, ObjectList, PatchType, PropagationPolicy
from kubeforge.runtime.cache import Cache, FieldSelectorUnverified

__all__ = ["CachedClient", "SyncClient"]

T = TypeVar("T")


class CachedClient:
    """Cached reads, live writes: what `Reconciler.client` is."""

    def __init__(self, api: Client, cache: Cache) -> None:
        self.api = api
        self.cache = cache

    @property
    def namespace(self) -> str:
        return self.api.namespace

    # reads ----------------------------------------------------------------------------------

    @overload
    async def get(self, kind: type[T], name: str, *, namespace: str | None = None) -> T: ...
    @overload
    async def get(
        self, kind: GroupVersionKind | str, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def get(self, kind: KindLike, name: str, *, namespace: str | None = None) -> Any:
        """An object from the cache (NotFound when absent, NotCached for unwatched kinds)."""
        return self.cache.get(kind, name, namespace=namespace)

    @overload
    async def list(
        self,
        kind: type[T],
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | LabelSelector | None = None,
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
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[dict[str, Any]]: ...

    async def list(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[Any]:
        """Objects from the cache, filtered by namespace (None: every cached namespace),
        selectors and field indexes (`matching_fields`)."""
        return await self._list(
            kind,
            None if all_namespaces else namespace,
            label_selector,
            field_selector,
            matching_fields,
            metadata_only=False,
        )

    async def get_metadata(
        self, kind: KindLike, name: str, *, namespace: str | None = None
    ) -> PartialObjectMetadata:
        """An object's metadata from the cache (a metadata-only informer, or the whole one)."""
        result: PartialObjectMetadata = self.cache.get(
            kind, name, namespace=namespace, metadata_only=True
        )
        return result

    async def list_metadata(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[PartialObjectMetadata]:
        """`list` of metadata only (PartialObjectMetadata)."""
        return await self._list(
            kind,
            None if all_namespaces else namespace,
            label_selector,
            field_selector,
            matching_fields,
            metadata_only=True,
        )

    async def _list(
        self,
        kind: KindLike,
        namespace: str | None,
        label_selector: str | LabelSelector | None,
        field_selector: str | None,
        matching_fields: Mapping[str, str] | None,
        *,
        metadata_only: bool,
    ) -> ObjectList[Any]:
        def read() -> list[Any]:
            return self.cache.list(
                kind,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                matching_fields=matching_fields,
                metadata_only=metadata_only,
            )

        try:
            items = read()
        except FieldSelectorUnverified as unverified:
            # Ask the server once whether it supports these fields for the kind: it answers
            # a refused one with 400 and the message an uncached list would get. Asked in a
            # namespace the cache watches, which the operator may list even without
            # cluster-wide permissions.
            watched = self.cache.informer_serving(kind, metadata_only=metadata_only).namespaces
            probe = namespace or (watched[0] if watched else None)
            await self.api.list_page(
                kind,
                namespace=probe,
                all_namespaces=probe is None,
                label_selector=None if label_selector is None else str(label_selector),
                field_selector=field_selector,
                limit=1,
                metadata_only=True,
            )
            self.cache.accept_fields(kind, unverified.fields)
            items = read()
        informer = self.cache.informer_serving(kind, metadata_only=metadata_only)
        return ObjectList(items, informer.last_resource_version)

    # writes: straight to the API server -----------------------------------------------------

    async def create(
        self,
        obj: T,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T:
        """Create `obj`; it becomes the object as stored (in place) and is returned."""
        return await self.api.create(
            obj,
            namespace=namespace,
            dry_run=dry_run,
            field_manager=field_manager,
            field_validation=field_validation,
        )

    async def update(
        self,
        obj: T,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T:
        """Replace `obj` (Conflict when stale); it becomes the object as stored, in place."""
        return await self.api.update(
            obj, dry_run=dry_run, field_manager=field_manager, field_validation=field_validation
        )

    async def update_status(
        self,
        obj: T,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T:
        """Replace `obj`'s status; it becomes the object as stored, in place."""
        return await self.api.update_status(
            obj, dry_run=dry_run, field_manager=field_manager, field_validation=field_validation
        )

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

    async def patch(
        self,
        kind: KindLike,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> Any:
        """Patch an object; returns it as stored."""
        return await self.api.patch(
            kind,
            name,
            patch,
            patch_type=patch_type,
            namespace=namespace,
            dry_run=dry_run,
            field_manager=field_manager,
            force=force,
            field_validation=field_validation,
        )

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

    async def patch_status(
        self,
        kind: KindLike,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> Any:
        """Patch an object's status; returns the object as stored."""
        return await self.api.patch_status(
            kind,
            name,
            patch,
            patch_type=patch_type,
            namespace=namespace,
            dry_run=dry_run,
            field_manager=field_manager,
            force=force,
            field_validation=field_validation,
        )

    async def apply(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> T:
        """Server-side apply `obj` (left unchanged); returns the object as stored."""
        return await self.api.apply(obj, field_manager=field_manager, force=force, dry_run=dry_run)

    async def apply_status(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> T:
        """Server-side apply of `obj`'s status; returns the object as stored."""
        return await self.api.apply_status(
            obj, field_manager=field_manager, force=force, dry_run=dry_run
        )

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
    ) -> dict[str, Any]:
        """Delete an object; returns the server's answer."""
        return await self.api.delete(
            kind,
            name,
            namespace=namespace,
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=preconditions,
            dry_run=dry_run,
        )

    async def delete_object(
        self,
        obj: Any,
        *,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str | None] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete the object `obj` names; returns the server's answer."""
        return await self.api.delete_object(
            obj,
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=preconditions,
            dry_run=dry_run,
        )

    async def delete_all_of(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        dry_run: bool = False,
    ) -> None:
        """Delete every matching object of a kind in a namespace."""
        await self.api.delete_all_of(
            kind,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            propagation_policy=propagation_policy,
            dry_run=dry_run,
        )

    async def scale(
        self, kind: KindLike, name: str, replicas: int, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Set an object's replicas through its scale subresource."""
        return await self.api.scale(kind, name, replicas, namespace=namespace)

    async def create_subresource(
        self,
        kind: KindLike,
        name: str,
        subresource: str,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """`POST <object>/<subresource>`: eviction, binding, token ..."""
        return await self.api.create_subresource(kind, name, subresource, body, namespace=namespace)


class SyncClient:
    """Blocking versions of CachedClient's calls, for reconcilers running in a thread.

    Each call runs on the manager's event loop; calling one from that loop's own thread
    would wait for itself, and raises RuntimeError instead.
    """

    def __init__(self, client: CachedClient, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._client = client
        self._loop = loop

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop the calls run on (the manager binds its own when it starts)."""
        self._loop = loop

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the calls run on."""
        return self._loop

    @property
    def cached(self) -> CachedClient:
        """The async client the calls go through."""
        return self._client

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the bound event loop and wait for its result."""
        loop = self._loop
        if loop is None:
            coroutine.close()
            raise RuntimeError("SyncClient is not bound to an event loop yet")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coroutine.close()
            raise RuntimeError(
                "a SyncClient call from the event loop's own thread would wait for itself: "
                "use the async client there"
            )
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    @property
    def api(self) -> Client:
        return self._client.api

    @property
    def namespace(self) -> str:
        return self._client.namespace

    @overload
    def get(self, kind: type[T], name: str, *, namespace: str | None = None) -> T: ...
    @overload
    def get(
        self, kind: GroupVersionKind | str, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    def get(self, kind: KindLike, name: str, *, namespace: str | None = None) -> Any:
        return self.run(self._client.get(kind, name, namespace=namespace))

    @overload
    def list(
        self,
        kind: type[T],
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | LabelSelector | None = None,
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
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[dict[str, Any]]: ...

    def list(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[Any]:
        return self.run(
            self._client.list(
                kind,
                namespace=namespace,
                all_namespaces=all_namespaces,
                label_selector=label_selector,
                field_selector=field_selector,
                matching_fields=matching_fields,
            )
        )

    def get_metadata(
        self, kind: KindLike, name: str, *, namespace: str | None = None
    ) -> PartialObjectMetadata:
        return self.run(self._client.get_metadata(kind, name, namespace=namespace))

    def list_metadata(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> ObjectList[PartialObjectMetadata]:
        return self.run(
            self._client.list_metadata(
                kind,
                namespace=namespace,
                all_namespaces=all_namespaces,
                label_selector=label_selector,
                field_selector=field_selector,
                matching_fields=matching_fields,
            )
        )

    def create(
        self,
        obj: T,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T:
        return self.run(
            self._client.create(
                obj,
                namespace=namespace,
                dry_run=dry_run,
                field_manager=field_manager,
                field_validation=field_validation,
            )
        )

    def update(
        self,
        obj: T,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T:
        return self.run(
            self._client.update(
                obj,
                dry_run=dry_run,
                field_manager=field_manager,
                field_validation=field_validation,
            )
        )

    def update_status(
        self,
        obj: T,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T:
        return self.run(
            self._client.update_status(
                obj,
                dry_run=dry_run,
                field_manager=field_manager,
                field_validation=field_validation,
            )
        )

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

    def patch(
        self,
        kind: KindLike,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> Any:
        return self.run(
            self._client.patch(
                kind,
                name,
                patch,
                patch_type=patch_type,
                namespace=namespace,
                dry_run=dry_run,
                field_manager=field_manager,
                force=force,
                field_validation=field_validation,
            )
        )

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

    def patch_status(
        self,
        kind: KindLike,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> Any:
        return self.run(
            self._client.patch_status(
                kind,
                name,
                patch,
                patch_type=patch_type,
                namespace=namespace,
                dry_run=dry_run,
                field_manager=field_manager,
                force=force,
                field_validation=field_validation,
            )
        )

    def apply(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> T:
        return self.run(
            self._client.apply(obj, field_manager=field_manager, force=force, dry_run=dry_run)
        )

    def apply_status(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> T:
        return self.run(
            self._client.apply_status(
                obj, field_manager=field_manager, force=force, dry_run=dry_run
            )
        )

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
    ) -> dict[str, Any]:
        return self.run(
            self._client.delete(
                kind,
                name,
                namespace=namespace,
                propagation_policy=propagation_policy,
                grace_period_seconds=grace_period_seconds,
                preconditions=preconditions,
                dry_run=dry_run,
            )
        )

    def delete_object(
        self,
        obj: Any,
        *,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str | None] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        return self.run(
            self._client.delete_object(
                obj,
                propagation_policy=propagation_policy,
                grace_period_seconds=grace_period_seconds,
                preconditions=preconditions,
                dry_run=dry_run,
            )
        )

    def delete_all_of(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        dry_run: bool = False,
    ) -> None:
        self.run(
            self._client.delete_all_of(
                kind,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                propagation_policy=propagation_policy,
                dry_run=dry_run,
            )
        )

    def scale(
        self, kind: KindLike, name: str, replicas: int, *, namespace: str | None = None
    ) -> dict[str, Any]:
        return self.run(self._client.scale(kind, name, replicas, namespace=namespace))

    def create_subresource(
        self,
        kind: KindLike,
        name: str,
        subresource: str,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        return self.run(
            self._client.create_subresource(kind, name, subresource, body, namespace=namespace)
        )
