"""Committing a write to the store, then telling everything that follows commits.

Every write ends here, a client's and the server's own: the store commits it (one new
revision, one event for the watches) and then each observer hears of it, in the order they
were added. The admission configuration, RBAC, the served CRDs, the Service allocators and
the server's controllers keep their state current this way, inside the write that changed
it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kubeforge._apiserver.storage.store import Store, StoredObject
from kubeforge._apiserver.types.resource import ResourceType

__all__ = ["Commits", "Observer"]

log = logging.getLogger("kubeforge.apiserver")

# Called after every commit: (type, event type, new state, previous state).
Observer = Callable[[ResourceType, str, StoredObject, StoredObject | None], None]


class Commits:
    """The store's writes, each announced to the observers once committed."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.observers: list[Observer] = []

    def create(self, rt: ResourceType, obj: dict[str, Any]) -> StoredObject:
        """Store a new object (in its storage form)."""
        stored = self.store.create(rt.group_resource, obj)
        self.notify(rt, "ADDED", stored, None)
        return stored

    def update(self, rt: ResourceType, obj: dict[str, Any], old: StoredObject) -> StoredObject:
        """Replace `old` with `obj` (in its storage form)."""
        stored = self.store.update(rt.group_resource, obj, old)
        self.notify(rt, "MODIFIED", stored, old)
        old.release()
        return stored

    def delete(
        self, rt: ResourceType, old: StoredObject, last: dict[str, Any] | None = None
    ) -> StoredObject:
        """Remove `old`; watchers see `last` (in its storage form), default the stored one."""
        deleted = self.store.delete(rt.group_resource, old, last)
        self.notify(rt, "DELETED", deleted, old)
        old.release()
        deleted.release()
        return deleted

    def notify(
        self, rt: ResourceType, kind: str, new: StoredObject, old: StoredObject | None
    ) -> None:
        """Tell every observer of a committed change. The commit stands whatever an observer
        does, so one that fails is logged and the others still hear of it."""
        for observer in self.observers:
            try:
                observer(rt, kind, new, old)
            except Exception:
                log.exception(
                    "an observer of %s failed on %s %s at revision %d",
                    rt.qualified(),
                    kind,
                    "/".join(p for p in new.key if p),
                    new.rv,
                )
