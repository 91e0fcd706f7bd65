"""What a controller reads of every cached object of a kind, worked out once per change.

The cache keeps objects encoded and decodes each read (a private copy). A controller that
reads every object of a kind on every event or sync (the scheduler every Node for every
pod, the endpoint controllers every Service of a pod's namespace for every pod event) would
spend most of its time decoding the same bytes again; `Facts` keeps, per object, what the
controller reads of it, until the object changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import orjson

from kubeforge._runtime.cache import Cache
from kubeforge._runtime.store import NAMESPACE_INDEX

__all__ = ["Facts"]

T = TypeVar("T")


class Facts(Generic[T]):
    """`read(obj)` of each cached object of `kind`, worked out once per change of it.
    `read` gets a decoded copy of its own and must treat what it keeps as read-only."""

    def __init__(self, cache: Cache, kind: str, read: Callable[[dict[str, Any]], T]) -> None:
        self.cache = cache
        self.kind = kind
        self.read = read
        self._known: dict[str, tuple[bytes, T]] = {}

    def all(self) -> list[T]:
        """Of every object, by key."""
        store = self.cache.informer_for(self.kind).store
        return self._of(sorted(store.keys()))

    def in_namespace(self, namespace: str) -> list[T]:
        """Of the objects of a namespace, by key."""
        store = self.cache.informer_for(self.kind).store
        return self._of(store.by_index(NAMESPACE_INDEX, namespace))

    def _of(self, keys: Iterable[str]) -> list[T]:
        store = self.cache.informer_for(self.kind).store
        known = self._known
        if len(known) > 2 * len(store) + 100:
            # Objects gone from the cache leave their entries behind; sweep now and then.
            self._known = known = {k: v for k, v in known.items() if k in store}
        found: list[T] = []
        for key in keys:
            data = store.raw(key)
            if data is None:
                continue
            entry = known.get(key)
            if entry is None or entry[0] is not data:
                entry = known[key] = (data, self.read(orjson.loads(data)))
            found.append(entry[1])
        return found
