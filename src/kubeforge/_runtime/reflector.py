"""Reflector: keeps an informer's store equal to what its watchers see, and says what changed.

The second step of an informer (watcher.py -> here -> informer.py's handlers). Each event a
watcher hands over is prepared (the informer's transform), applied to the `Store`
(store.py) and told to a `ResourceEventHandler` with the object it replaced: an add, an
update (old, new) or a delete. The first list of an empty store fills it as the pages
arrive, each object an initial add. A re-list gathers the new state first and then, in one
step, makes the store's objects of that namespace (or all) equal to it, telling exactly
what changed.

Reading your own writes: `written` puts an object a write returned into the store at once,
so a reconcile that runs before the write's watch event arrives reads what it wrote, not an
older copy. Handlers still hear of the change from the watch event, with the version they
last saw as the old object; watch events older than a written object (by resourceVersion)
reach handlers but do not replace it in the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from kubeforge._api.machinery.compactjson import dumps_exact
from kubeforge._runtime.store import NAMESPACE_INDEX, Store, key_of

__all__ = ["Reflector", "ResourceEventHandler", "resource_version_number"]

# A re-list's objects by key, with their stored bytes.
_Listed = dict[str, tuple[dict[str, Any], bytes]]


class ResourceEventHandler(Protocol):
    """What an informer tells about changes. Handlers must not modify the objects."""

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None: ...
    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None: ...
    def on_delete(self, obj: dict[str, Any]) -> None: ...


@dataclass
class _Written:
    """A key whose stored object came from a write, not yet confirmed by the watch."""

    version: int | None  # the written object's resourceVersion (None: not comparable)
    seen: bytes | None  # what handlers were last told about the key (None: nothing)
    deleted: bool = False  # a delete (or a change out of the selection) removed it


def resource_version_number(obj: Mapping[str, Any]) -> int | None:
    """The object's resourceVersion as a number. Versions are opaque to clients, but every
    Kubernetes storage hands out increasing integers; client-go's mutation cache relies on
    the same ordering. A version that is not a number is never compared."""
    text = (obj.get("metadata") or {}).get("resourceVersion")
    if not isinstance(text, str):
        return None
    try:
        return int(text)
    except ValueError:
        return None


class Reflector:
    """Applies the events of the watchers of `scopes` (namespaces; None: all) to `store`,
    telling `handler` what changed; `prepare` makes each object what the store keeps.

    `synced` is set once every scope's first list is in the store.
    """

    def __init__(
        self,
        store: Store,
        handler: ResourceEventHandler,
        prepare: Callable[[dict[str, Any]], dict[str, Any]],
        scopes: Sequence[str | None],
    ) -> None:
        self.store = store
        self.handler = handler
        self.prepare = prepare
        self.synced = asyncio.Event()
        self._scopes = tuple(scopes)
        self._listed: set[str | None] = set()
        # Each scope's list in progress: whether it is a first one, and the objects gathered
        # so far (None: the first list of an empty store, put straight in).
        self._lists: dict[str | None, tuple[bool, _Listed | None]] = {}
        self._written: dict[str, _Written] = {}

    @property
    def unconfirmed(self) -> int:
        """Objects stored from writes whose watch events have not arrived yet."""
        return len(self._written)

    # a list ---------------------------------------------------------------------------------

    def init(self, scope: str | None) -> None:
        first = scope not in self._listed
        # The first list of an empty store fills it directly; a re-list gathers the new
        # state first and then makes the store equal to it in one step.
        direct = first and not self.store
        self._lists[scope] = (first, None if direct else {})

    def init_page(self, scope: str | None, objects: list[dict[str, Any]]) -> None:
        _, fresh = self._lists[scope]
        for item in objects:
            obj = self.prepare(item)
            if fresh is None:
                self.store.put(obj)
                self.handler.on_add(obj, True)
            else:
                fresh[key_of(obj)] = (obj, dumps_exact(obj))

    def init_done(self, scope: str | None) -> None:
        first, fresh = self._lists.pop(scope)
        if fresh is not None:
            self._replace(scope, fresh, initial=first)
        self._listed.add(scope)
        if len(self._listed) == len(self._scopes):
            self.synced.set()

    def _replace(self, scope: str | None, fresh: _Listed, initial: bool) -> None:
        """Make the store's objects of `scope` those of a re-list, telling the handler what
        changed. Runs without yielding, so no reader sees a half-replaced store."""
        store = self.store
        if len(self._scopes) == 1:
            in_scope = set(store.keys())
            self._written.clear()
        else:
            in_scope = set(store.by_index(NAMESPACE_INDEX, scope or ""))
            prefix = f"{scope}/"
            for key in [k for k in self._written if k.startswith(prefix)]:
                del self._written[key]
        for key, (obj, data) in fresh.items():
            before = store.raw(key)
            if before is None:
                store.put(obj, data)
                self.handler.on_add(obj, initial)
            elif before != data:
                store.put(obj, data)
                self.handler.on_update(orjson.loads(before), obj)
        for key in in_scope - fresh.keys():
            old = store.delete(key)
            if old is not None:
                self.handler.on_delete(orjson.loads(old))

    # watch events ---------------------------------------------------------------------------

    def apply(self, obj: dict[str, Any]) -> None:
        self._watched(obj, deleted=False)

    def delete(self, obj: dict[str, Any]) -> None:
        self._watched(obj, deleted=True)

    def _watched(self, obj: dict[str, Any], *, deleted: bool) -> None:
        obj = self.prepare(obj)
        key = key_of(obj)
        written = self._written.get(key) if self._written else None
        if written is not None:
            self._confirm(key, written, obj, deleted=deleted)
        elif deleted:
            self.store.delete(key)
            self.handler.on_delete(obj)
        else:
            data = dumps_exact(obj)
            previous, before = self.store.replace(obj, data)
            if previous is None:
                self.handler.on_add(obj, False)
            elif previous != data:
                # The store decoded the old object to move it in its indexes.
                self.handler.on_update(
                    before if before is not None else orjson.loads(previous), obj
                )

    def _confirm(self, key: str, written: _Written, obj: dict[str, Any], *, deleted: bool) -> None:
        """A watch event for a key the store holds a written object of."""
        version = resource_version_number(obj)
        if deleted:
            if (
                not written.deleted
                and written.version is not None
                and version is not None
                and version < written.version
            ):
                # An earlier object of that name went away; the one written since stays.
                written.seen = None
            else:
                del self._written[key]
                self.store.delete(key)
            self.handler.on_delete(obj)
            return
        data = dumps_exact(obj)
        seen = written.seen
        caught_up = not written.deleted and (
            written.version is None or version is None or version >= written.version
        )
        if caught_up:
            # The watch has reached the write: from here on it is the source again.
            del self._written[key]
            self.store.put(obj, data)
        else:
            written.seen = data
        if seen is None:
            self.handler.on_add(obj, False)
        else:
            self.handler.on_update(orjson.loads(seen), obj)

    # reading your own writes ----------------------------------------------------------------

    def written(self, obj: dict[str, Any]) -> None:
        """Store an object a write returned, unless the store already holds a newer
        version. It is given to the reflector, not copied."""
        obj = self.prepare(obj)
        key = key_of(obj)
        version = resource_version_number(obj)
        written = self._written.get(key)
        current = self.store.raw(key)
        if written is None and current is not None and version is not None:
            stored = resource_version_number(orjson.loads(current))
            if stored is not None and stored >= version:
                return  # the watch already brought this version or a later one
        elif (
            written is not None
            and not written.deleted
            and written.version is not None
            and version is not None
            and version < written.version
        ):
            return  # an older write's answer arriving late
        seen = written.seen if written is not None else current
        self._written[key] = _Written(version, seen)
        self.store.put(obj)

    def removed(self, key: str) -> None:
        """Drop an object a delete removed (or a write moved out of the selection)."""
        written = self._written.get(key)
        current = self.store.raw(key)
        if written is None and current is None:
            return
        seen = written.seen if written is not None else current
        self._written[key] = _Written(None, seen, deleted=True)
        self.store.delete(key)
