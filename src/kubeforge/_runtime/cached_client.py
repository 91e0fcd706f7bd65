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
from collections.abc import Coroutine
from typing import Any, TypeVar, Unpack

from kubeforge._api.meta import PartialObjectMetadata
from kubeforge._client.client import Client, KindLike, KindOf, Obj, ObjectList
from kubeforge._client.errors import NotFound
from kubeforge._client.forwarding import blocking, forward
from kubeforge._client.options import GetOptions, ListOptions
from kubeforge._client.protocols import StatusWriter, Writer
from kubeforge._runtime.cache import Cache, FieldSelectorUnverified, kind_key
from kubeforge._runtime.logs import current_reconcile
from kubeforge._runtime.observer import Observers, Read, object_version

__all__ = ["CachedClient", "SyncClient"]

T = TypeVar("T")


class CachedClient:
    """Cached reads, live writes: what `Reconciler.client` is. `observers` are told about
    every read (observer.py)."""

    def __init__(self, api: Client, cache: Cache, observers: Observers | None = None) -> None:
        self.api = api
        self.cache = cache
        self.observers = observers if observers is not None else Observers()

    @property
    def namespace(self) -> str:
        return self.api.namespace

    # reads ----------------------------------------------------------------------------------

    async def get(self, kind: KindOf[Obj], name: str, **options: Unpack[GetOptions]) -> Obj:
        """An object from the cache (NotFound when absent, NotCached for unwatched kinds)."""
        namespace = options.get("namespace")
        if self.observers:
            observed: Obj = self._observed_get(kind, name, namespace, metadata_only=False)
            return observed
        result: Obj = self.cache.get(kind, name, namespace=namespace)
        return result

    def _observed_get(
        self, kind: KindLike, name: str, namespace: str | None, *, metadata_only: bool
    ) -> Any:
        """A cached get, told to the observers."""
        where = namespace or ""
        try:
            found = self.cache.get(kind, name, namespace=namespace, metadata_only=metadata_only)
        except NotFound as exc:
            self._tell("get", kind, where, name, (), str(exc))
            raise
        self._tell("get", kind, where, name, (object_version(found),))
        return found

    def _tell(
        self,
        verb: str,
        kind: KindLike,
        namespace: str,
        name: str,
        objects: tuple[tuple[str, str, str], ...],
        error: str | None = None,
    ) -> None:
        self.observers.emit(
            Read(
                current_reconcile(), "cache", verb, kind_key(kind), namespace, name, objects, error
            )
        )

    async def list(self, kind: KindOf[Obj], **options: Unpack[ListOptions]) -> ObjectList[Obj]:
        """Objects from the cache, filtered by namespace (None: every cached namespace),
        selectors and field indexes (`matching_fields`)."""
        return await self._list(kind, options, metadata_only=False)

    async def get_metadata(
        self, kind: KindLike, name: str, **options: Unpack[GetOptions]
    ) -> PartialObjectMetadata:
        """An object's metadata from the cache (a metadata-only informer, or the whole one)."""
        if self.observers:
            observed: PartialObjectMetadata = self._observed_get(
                kind, name, options.get("namespace"), metadata_only=True
            )
            return observed
        result: PartialObjectMetadata = self.cache.get(
            kind, name, namespace=options.get("namespace"), metadata_only=True
        )
        return result

    async def list_metadata(
        self, kind: KindLike, **options: Unpack[ListOptions]
    ) -> ObjectList[PartialObjectMetadata]:
        """`list` of metadata only (PartialObjectMetadata)."""
        return await self._list(kind, options, metadata_only=True)

    async def _list(
        self, kind: KindLike, options: ListOptions, *, metadata_only: bool
    ) -> ObjectList[Any]:
        namespace = None if options.get("all_namespaces") else options.get("namespace")
        label_selector = options.get("label_selector")
        field_selector = options.get("field_selector")

        def read() -> list[Any]:
            return self.cache.list(
                kind,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                matching_fields=options.get("matching_fields"),
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
        if self.observers:
            self._tell("list", kind, namespace or "", "", tuple(object_version(i) for i in items))
        return ObjectList(items, informer.last_resource_version)

    # writes: straight to the API server (whose client puts what they return in the cache) --

    create = forward(Writer.create, via="api")
    update = forward(Writer.update, via="api")
    patch = forward(Writer.patch, via="api")
    apply = forward(Writer.apply, via="api")
    delete = forward(Writer.delete, via="api")
    delete_object = forward(Writer.delete_object, via="api")
    delete_all_of = forward(Writer.delete_all_of, via="api")
    update_status = forward(StatusWriter.update_status, via="api")
    patch_status = forward(StatusWriter.patch_status, via="api")
    apply_status = forward(StatusWriter.apply_status, via="api")
    scale = forward(Client.scale, via="api")
    create_subresource = forward(Client.create_subresource, via="api")


class SyncClient:
    """Blocking versions of CachedClient's calls, for reconcilers running in a thread: each
    is the cached client's call, with its parameters, run to its result (`blocking`).

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

    get = blocking(CachedClient.get, via="cached")
    list = blocking(CachedClient.list, via="cached")
    get_metadata = blocking(CachedClient.get_metadata, via="cached")
    list_metadata = blocking(CachedClient.list_metadata, via="cached")
    create = blocking(CachedClient.create, via="cached")
    update = blocking(CachedClient.update, via="cached")
    patch = blocking(CachedClient.patch, via="cached")
    apply = blocking(CachedClient.apply, via="cached")
    delete = blocking(CachedClient.delete, via="cached")
    delete_object = blocking(CachedClient.delete_object, via="cached")
    delete_all_of = blocking(CachedClient.delete_all_of, via="cached")
    update_status = blocking(CachedClient.update_status, via="cached")
    patch_status = blocking(CachedClient.patch_status, via="cached")
    apply_status = blocking(CachedClient.apply_status, via="cached")
    scale = blocking(CachedClient.scale, via="cached")
    create_subresource = blocking(CachedClient.create_subresource, via="cached")
