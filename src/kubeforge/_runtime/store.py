"""The informer's local store: objects kept as compact JSON bytes, with indexes.

Python dicts cost several times an object's JSON size; keeping each object as its encoded
bytes (decoded on every read, which also gives each reader a private copy) holds the cache
near its wire size. Indexes map index values to object keys; an object's old index values
are recomputed from its old bytes when it changes, so no reverse map is kept (`replace`
hands the decoded old object on, for the informer to tell its handlers without decoding it
again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson

from kubeforge._api.machinery.compactjson import dumps_exact

__all__ = ["IndexFunc", "Store", "key_of", "namespace_index", "owner_uid_index"]

# An index function maps an object to the values it is found under.
IndexFunc = Callable[[Mapping[str, Any]], Iterable[str]]

NAMESPACE_INDEX = "namespace"
OWNER_INDEX = "owner-uid"


def key_of(obj: Mapping[str, Any]) -> str:
    """`namespace/name`, or `name` for cluster-scoped objects (client-go's MetaNamespaceKey)."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    name = meta.get("name") or ""
    return f"{ns}/{name}" if ns else str(name)


def namespace_index(obj: Mapping[str, Any]) -> Iterable[str]:
    ns = (obj.get("metadata") or {}).get("namespace")
    return (ns,) if ns else ()


def owner_uid_index(obj: Mapping[str, Any]) -> Iterable[str]:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return tuple(r["uid"] for r in refs if isinstance(r, Mapping) and r.get("uid"))


class Store:
    """Objects by key, as JSON bytes, plus named indexes. Not thread-safe (one event loop)."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._objects: dict[str, bytes] = {}
        self._indexers: dict[str, IndexFunc] = {
            NAMESPACE_INDEX: namespace_index,
            OWNER_INDEX: owner_uid_index,
        }
        self._indexers.update(indexers or {})
        self._indexes: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, key: str) -> bool:
        return key in self._objects

    def __iter__(self) -> Iterator[str]:
        return iter(self._objects)

    def keys(self) -> Iterator[str]:
        return iter(self._objects)

    def raw(self, key: str) -> bytes | None:
        return self._objects.get(key)

    def get(self, key: str) -> dict[str, Any] | None:
        """A private copy of the object, or None."""
        data = self._objects.get(key)
        if data is None:
            return None
        obj: dict[str, Any] = orjson.loads(data)
        return obj

    def items(self) -> Iterator[tuple[str, bytes]]:
        return iter(self._objects.items())

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index; existing objects are indexed at once."""
        if name in self._indexers:
            raise ValueError(f"index {name!r} already exists")
        self._indexers[name] = fn
        index: dict[str, set[str]] = {}
        self._indexes[name] = index
        for key, data in self._objects.items():
            for value in fn(orjson.loads(data)):
                index.setdefault(value, set()).add(key)

    def _index(
        self, key: str, obj: Mapping[str, Any] | None, old: bytes | None
    ) -> dict[str, Any] | None:
        """Move `key` from the index values of its old bytes to those of `obj`; returns the
        old object decoded (None when there was none)."""
        if old is None and obj is not None:
            # A new key: nothing to take out of the indexes.
            for name, fn in self._indexers.items():
                index = self._indexes[name]
                for value in fn(obj):
                    index.setdefault(value, set()).add(key)
            return None
        old_obj: dict[str, Any] | None = orjson.loads(old) if old is not None else None
        for name, fn in self._indexers.items():
            index = self._indexes[name]
            before = set(fn(old_obj)) if old_obj is not None else set()
            after = set(fn(obj)) if obj is not None else set()
            for value in before - after:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in after - before:
                index.setdefault(value, set()).add(key)
        return old_obj

    def put(self, obj: Mapping[str, Any], data: bytes | None = None) -> bytes | None:
        """Store an object (its encoding may be given); returns the previous bytes."""
        return self.replace(obj, data)[0]

    def replace(
        self, obj: Mapping[str, Any], data: bytes | None = None
    ) -> tuple[bytes | None, dict[str, Any] | None]:
        """Store an object (its encoding may be given); returns the previous bytes and the
        previous object, decoded to move it in the indexes (None and None when new)."""
        key = key_of(obj)
        encoded = data if data is not None else dumps_exact(obj)
        old = self._objects.get(key)
        self._objects[key] = encoded
        return old, self._index(key, obj, old)

    def delete(self, key: str) -> bytes | None:
        """Remove an object; returns its last bytes."""
        old = self._objects.pop(key, None)
        if old is not None:
            self._index(key, None, old)
        return old

    def index_names(self) -> frozenset[str]:
        """The names of the indexes (the built-in namespace and owner-uid ones included)."""
        return frozenset(self._indexers)

    def keys_under(self, name: str, value: str) -> frozenset[str]:
        """Keys found under `value` in index `name`, unordered (a membership test)."""
        if name not in self._indexes:
            raise KeyError(f"no index named {name!r}")
        return frozenset(self._indexes[name].get(value, ()))

    def count_under(self, name: str, value: str) -> int:
        """How many keys are found under `value` in index `name` (nothing is copied)."""
        if name not in self._indexes:
            raise KeyError(f"no index named {name!r}")
        return len(self._indexes[name].get(value, ()))

    def counts_under(self, name: str) -> dict[str, int]:
        """How many keys each value of index `name` finds (values finding none left out)."""
        if name not in self._indexes:
            raise KeyError(f"no index named {name!r}")
        return {value: len(keys) for value, keys in self._indexes[name].items()}

    def is_under(self, name: str, value: str, key: str) -> bool:
        """Whether `key` is found under `value` in index `name` (nothing is copied)."""
        if name not in self._indexes:
            raise KeyError(f"no index named {name!r}")
        return key in self._indexes[name].get(value, ())

    def raw_under(self, name: str, value: str) -> list[tuple[str, bytes]]:
        """(key, bytes) of the objects found under `value` in index `name`, unordered."""
        if name not in self._indexes:
            raise KeyError(f"no index named {name!r}")
        objects = self._objects
        return [(key, objects[key]) for key in self._indexes[name].get(value, ())]

    def by_index(self, name: str, value: str) -> list[str]:
        """Keys of the objects found under `value` in index `name`."""
        if name not in self._indexes:
            raise KeyError(f"no index named {name!r}")
        return sorted(self._indexes[name].get(value, ()))

    def empty_copy(self) -> Store:
        """A new, empty store with the same indexes (filled during a re-list)."""
        fresh = Store()
        fresh._indexers = dict(self._indexers)
        fresh._indexes = {name: {} for name in self._indexers}
        return fresh

    def take(self, other: Store) -> None:
        """Become `other`'s contents at once (the atomic swap after a re-list)."""
        self._objects = other._objects
        self._indexes = other._indexes
        other._objects, other._indexes = {}, {name: {} for name in other._indexers}
