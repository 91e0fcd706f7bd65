"""The manager's shared cache, as controller-runtime's `cache` and client-go's
`tools/cache`: `Cache` (one informer per kind, its options per kind in `CacheOptions`),
`CachedClient` and `SyncClient` (the manager's client: reads from the cache, writes to the
server; a reconciler sees it as an `ObjectClient`), and the informers beneath it:
`Informer`, its `Store` and `HandlerFuncs` for event handlers of your own.
"""

from __future__ import annotations

from kubeforge._runtime.cache import (
    ALL_NAMESPACES,
    Cache,
    CacheOptions,
    FieldSelectorUnverified,
    NotCached,
)
from kubeforge._runtime.cached_client import CachedClient, SyncClient
from kubeforge._runtime.informer import HandlerFuncs, Informer, strip_managed_fields
from kubeforge._runtime.store import Store

__all__ = [
    "ALL_NAMESPACES",
    "Cache",
    "CacheOptions",
    "CachedClient",
    "FieldSelectorUnverified",
    "HandlerFuncs",
    "Informer",
    "NotCached",
    "Store",
    "SyncClient",
    "strip_managed_fields",
]
