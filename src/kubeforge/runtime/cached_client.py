"""The client a reconciler uses: reads from the shared cache, writes to the API server.

`get` and `list` answer from memory for kinds the cache watches and raise `NotCached` for
others (read those through `api`, the uncached client). Every write goes to the server.
`SyncClient` offers the same calls to plain `def` reconcilers running in worker threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

from kubeforge.api.selectors import LabelSelector
from kubeforge.client.client import Client, KindLike
from kubeforge.runtime.cache import Cache

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

    async def get(self, kind: KindLike, name: str, *, namespace: str | None = None) -> Any:
        """An object from the cache (NotFound when absent, NotCached for unwatched kinds)."""
        return self.cache.get(kind, name, namespace=namespace)

    async def list(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> list[Any]:
        """Objects from the cache, filtered by namespace, selectors and field indexes."""
        return self.cache.list(
            kind,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            matching_fields=matching_fields,
        )

    # Writes go straight to the API server.

    async def create(self, obj: T, **options: Any) -> T:
        return await self.api.create(obj, **options)

    async def update(self, obj: T, **options: Any) -> T:
        return await self.api.update(obj, **options)

    async def update_status(self, obj: T, **options: Any) -> T:
        return await self.api.update_status(obj, **options)

    async def patch(self, kind: KindLike, name: str, patch: Any, **options: Any) -> Any:
        return await self.api.patch(kind, name, patch, **options)

    async def patch_status(self, kind: KindLike, name: str, patch: Any, **options: Any) -> Any:
        return await self.api.patch_status(kind, name, patch, **options)

    async def apply(self, obj: T, **options: Any) -> T:
        return await self.api.apply(obj, **options)

    async def apply_status(self, obj: T, **options: Any) -> T:
        return await self.api.apply_status(obj, **options)

    async def delete(self, kind: KindLike, name: str, **options: Any) -> dict[str, Any]:
        return await self.api.delete(kind, name, **options)

    async def delete_object(self, obj: Any, **options: Any) -> dict[str, Any]:
        return await self.api.delete_object(obj, **options)

    async def delete_all_of(self, kind: KindLike, **options: Any) -> None:
        await self.api.delete_all_of(kind, **options)

    async def scale(
        self, kind: KindLike, name: str, replicas: int, *, namespace: str | None = None
    ) -> dict[str, Any]:
        return await self.api.scale(kind, name, replicas, namespace=namespace)

    async def create_subresource(
        self, kind: KindLike, name: str, subresource: str, body: Mapping[str, Any], **options: Any
    ) -> dict[str, Any]:
        return await self.api.create_subresource(kind, name, subresource, body, **options)


class SyncClient:
    """Blocking versions of CachedClient's calls, for reconcilers running in a thread.

    Each call runs on the manager's event loop; never call it from that loop itself.
    """

    def __init__(self, client: CachedClient, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._client = client
        self._loop = loop

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop the calls run on (the manager binds its own when it starts)."""
        self._loop = loop

    def _run(self, awaitable: Awaitable[T]) -> T:
        if self._loop is None:
            raise RuntimeError("SyncClient is not bound to an event loop yet")

        async def wrapped() -> T:
            return await awaitable

        return asyncio.run_coroutine_threadsafe(wrapped(), self._loop).result()

    @property
    def api(self) -> Client:
        return self._client.api

    def get(self, kind: KindLike, name: str, *, namespace: str | None = None) -> Any:
        return self._run(self._client.get(kind, name, namespace=namespace))

    def list(self, kind: KindLike, **options: Any) -> list[Any]:
        return self._run(self._client.list(kind, **options))

    def create(self, obj: T, **options: Any) -> T:
        return self._run(self._client.create(obj, **options))

    def update(self, obj: T, **options: Any) -> T:
        return self._run(self._client.update(obj, **options))

    def update_status(self, obj: T, **options: Any) -> T:
        return self._run(self._client.update_status(obj, **options))

    def patch(self, kind: KindLike, name: str, patch: Any, **options: Any) -> Any:
        return self._run(self._client.patch(kind, name, patch, **options))

    def patch_status(self, kind: KindLike, name: str, patch: Any, **options: Any) -> Any:
        return self._run(self._client.patch_status(kind, name, patch, **options))

    def apply(self, obj: T, **options: Any) -> T:
        return self._run(self._client.apply(obj, **options))

    def delete(self, kind: KindLike, name: str, **options: Any) -> dict[str, Any]:
        return self._run(self._client.delete(kind, name, **options))

    def delete_object(self, obj: Any, **options: Any) -> dict[str, Any]:
        return self._run(self._client.delete_object(obj, **options))
