"""The versioned object store: one revision counter, per-resource history and watch fan-out.

Every write bumps a single global revision (like etcd's) and becomes an `Event`. Events are
kept in a bounded per-resource history so that watches can resume from a resourceVersion and
paginated lists can be served from a consistent snapshot; a request older than the history
gets 410 Gone. Each event is encoded to JSON once and the same bytes go to every watcher.

Objects are kept encoded; of each resource, the live objects written or read last (up to
`decoded_objects`) also keep their decoded form, which the write path and the server's own
loops read. A decoded object is some six times its JSON: thousands of pods or events would
otherwise hold most of the server's memory for objects nobody reads.

All methods are synchronous and run on the event loop, so a read-check-write sequence without
an `await` in between is atomic.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, Protocol

import orjson

from kubeforge._api.machinery.compactjson import dumps_exact
from kubeforge._apiserver.types.resource import GroupResource

__all__ = [
    "Backend",
    "Collection",
    "Event",
    "EventGate",
    "EventType",
    "Expired",
    "Revisions",
    "Store",
    "StoredObject",
    "Watcher",
]

log = logging.getLogger("kubeforge.apiserver")

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Key = tuple[str, str]  # (namespace or "", name)
Predicate = Callable[[dict[str, Any]], bool]


class Expired(Exception):
    """The requested resourceVersion is older than the history kept."""

    def __init__(self, requested: int, oldest: int, message: str | None = None) -> None:
        super().__init__(message or f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class DecodedObjects:
    """The live objects of one resource whose decoded form is kept: the `size` decoded last.
    Others keep their encoding only; `StoredObject.obj` decodes one again when it is read."""

    __slots__ = ("_kept", "size")

    def __init__(self, size: int) -> None:
        self.size = max(size, 1)
        self._kept: OrderedDict[int, StoredObject] = OrderedDict()

    def keep(self, stored: StoredObject) -> None:
        # Only a version not kept (new, or let go) comes here: it goes to the end.
        kept = self._kept
        kept[id(stored)] = stored
        if len(kept) > self.size:
            _, oldest = kept.popitem(last=False)
            oldest._obj = None


class StoredObject:
    """One committed version of an object. `obj` must never be mutated; copy it with `thaw()`.

    A live version keeps its decoded form while it is among the last its resource decoded
    (`DecodedObjects`); a version another has replaced lives on only in the watch history
    (for watches resuming from it) and in requests that read it earlier: `release()` drops
    its decoded form for good. Either way `obj` decodes it again when it is read.
    """

    __slots__ = ("_decoded", "_obj", "api_version", "key", "raw", "rv")

    def __init__(
        self,
        key: Key,
        obj: dict[str, Any] | None,
        raw: bytes,
        rv: int,
        decoded: DecodedObjects | None = None,
    ) -> None:
        self.key = key
        self._obj = obj
        self.raw = raw
        self.rv = rv
        # The version it is stored in, which readers compare without decoding it again.
        self.api_version: str | None = (obj if obj is not None else orjson.loads(raw)).get(
            "apiVersion"
        )
        self._decoded = decoded
        if decoded is not None and obj is not None:
            decoded.keep(self)

    @property
    def obj(self) -> dict[str, Any]:
        obj = self._obj
        if obj is None:
            obj = orjson.loads(self.raw)
            if self._decoded is not None:
                # Live: read again soon, most likely (the next write of it, its watchers).
                self._obj = obj
                self._decoded.keep(self)
        return obj

    def release(self) -> None:
        """Keep only the encoded form (this version has been replaced or deleted)."""
        self._obj = None
        self._decoded = None

    def thaw(self) -> dict[str, Any]:
        """A private deep copy of the object, safe to modify."""
        copy: dict[str, Any] = orjson.loads(self.raw)
        return copy


class Event:
    """A committed change. `old` is the previous version (None for ADDED)."""

    __slots__ = ("converted", "new", "old", "type")

    def __init__(self, type: EventType, new: StoredObject, old: StoredObject | None) -> None:
        self.type = type
        self.new = new
        self.old = old
        # `new` converted by a conversion webhook, encoded, by apiVersion: converted once
        # for every watch of that version (as kube-apiserver's watch cache of each version).
        self.converted: dict[str, bytes] | None = None

    @property
    def rv(self) -> int:
        return self.new.rv

    def encoded(self, type: str | None = None) -> bytes:
        """The watch line for this event (or for it seen as `type`): the stored encoding in
        a frame, put together for each watcher rather than kept (the history holds thousands
        of events, each line a copy of its object)."""
        t = type or self.type
        return b'{"type":"' + t.encode() + b'","object":' + self.new.raw + b"}\n"


class Backend(Protocol):
    """Durable storage under the in-memory store (_apiserver/storage/persistence.py)."""

    def load(self) -> tuple[int, Iterable[tuple[GroupResource, bytes]]]:
        """The last revision and every stored object."""

    def load_events(self) -> list[tuple[int, GroupResource, str, bytes, bytes | None]]:
        """The recent events, oldest first: (revision, resource, type, object, previous)."""

    def write(
        self,
        gr: GroupResource,
        key: Key,
        raw: bytes | None,
        revision: int,
        event_type: str,
        event_data: bytes,
        previous: bytes | None,
    ) -> None:
        """Persist one change (raw None: deleted) and its event before it is acknowledged."""


class EventGate(Protocol):
    """Holds back or reshapes what one watch delivers: a fault a test installs (a lagging or
    coalescing stream). Without one a watch delivers every event as it is committed."""

    def admit(self, batch: list[tuple[Event, str]]) -> list[tuple[Event, str]]:
        """What of `batch` (and of what it held before) goes out now, in order."""

    @property
    def holding(self) -> bool:
        """Whether events are held back (a bookmark now would skip them)."""


class Watcher:
    """One watch stream's queue of events. The server drains it with `next_batch()`."""

    def __init__(
        self,
        collection: Collection,
        namespace: str | None,
        predicate: Predicate | None,
        max_pending: int,
    ) -> None:
        self.collection = collection
        self.namespace = namespace
        self.predicate = predicate
        self.max_pending = max_pending
        self.pending: list[tuple[Event, str]] = []
        self.overflowed = False
        self.closed = False
        # Set when the stream ends because its history was compacted away (410 Gone).
        self.expired: Expired | None = None
        self.gate: EventGate | None = None
        self._wakeup: asyncio.Event = asyncio.Event()

    def _matches(self, stored: StoredObject | None) -> bool:
        if stored is None:
            return False
        if self.namespace is not None and stored.key[0] != self.namespace:
            return False
        return self.predicate is None or self.predicate(stored.obj)

    def offer(self, event: Event) -> None:
        """Queue an event as this watch sees it (selectors may turn it into ADDED/DELETED)."""
        if self.closed:
            return
        now = self._matches(event.new)
        if event.type == "MODIFIED":
            before = self._matches(event.old)
            if now and not before:
                seen = "ADDED"
            elif before and not now:
                seen = "DELETED"
            elif now:
                seen = "MODIFIED"
            else:
                return
        elif now:
            seen = event.type
        else:
            return
        self.pending.append((event, seen))
        if len(self.pending) > self.max_pending:
            # A consumer this far behind would hold the server's memory hostage; end its
            # watch so it re-lists or resumes from its last resourceVersion.
            self.overflowed = True
            self.close()
        self._wakeup.set()

    async def next_batch(self, timeout: float | None) -> list[tuple[Event, str]]:
        """Every queued event (possibly none after `timeout` seconds or on close)."""
        if not self.pending and not self.closed:
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), timeout)
            except TimeoutError:
                pass
        batch, self.pending = self.pending, []
        gate = self.gate
        if gate is not None:
            return gate.admit(batch)
        return batch

    @property
    def settled(self) -> bool:
        """Nothing queued or held back: a bookmark at the current revision skips nothing."""
        return not self.pending and (self.gate is None or not self.gate.holding)

    def wake(self) -> None:
        """Have `next_batch` return now (a gate has events due)."""
        self._wakeup.set()

    def close(self) -> None:
        self.closed = True
        self.collection.watchers.discard(self)
        self._wakeup.set()

    def expire(self, exc: Expired) -> None:
        """End the stream as a compaction past its revision does: with 410 Gone."""
        self.expired = exc
        self.close()


def _deliver(watcher: Watcher, event: Event) -> None:
    """Offer one watcher an event. A watcher that fails to take it is ended (its client
    resumes or re-lists, as after any ended watch); the write and the other watchers go on."""
    try:
        watcher.offer(event)
    except Exception:
        log.exception(
            "a watch on %s failed to take the event at revision %d; ending that watch",
            watcher.collection.gr,
            event.rv,
        )
        watcher.close()


def _stored(raw: bytes, decoded: DecodedObjects | None = None) -> StoredObject:
    """A stored version read back from its encoding: live (decoded, kept as `decoded`
    allows) when `decoded` is given, else a replaced one (encoded only)."""
    obj = orjson.loads(raw)
    meta = obj["metadata"]
    key = (meta.get("namespace", ""), meta["name"])
    stored = StoredObject(key, obj, raw, int(meta.get("resourceVersion") or 0), decoded)
    if decoded is None:
        stored.release()
    return stored


def _event_rv(event: Event) -> int:
    return event.rv


class Collection:
    """All objects of one group-resource, their recent history and their watchers."""

    def __init__(self, gr: GroupResource, history_size: int, decoded_objects: int) -> None:
        self.gr = gr
        self.objects: dict[Key, StoredObject] = {}
        self.decoded = DecodedObjects(decoded_objects)
        self.history: deque[Event] = deque()
        self.history_size = history_size
        # Events with rv <= floor may have left the history; every later one is kept.
        self.floor = 0
        self.watchers: set[Watcher] = set()
        self._sorted: list[Key] | None = None

    def sorted_keys(self, namespace: str | None = None) -> list[Key]:
        if self._sorted is None:
            self._sorted = sorted(self.objects)
        keys = self._sorted
        if namespace is None:
            return keys
        lo = bisect.bisect_left(keys, (namespace, ""))
        hi = bisect.bisect_left(keys, (namespace + "\x00", ""))
        return keys[lo:hi]

    def record(self, event: Event) -> None:
        self.history.append(event)
        while len(self.history) > self.history_size:
            self.floor = self.history.popleft().rv
        if self.watchers:
            for watcher in list(self.watchers):
                _deliver(watcher, event)

    def events_since(self, rv: int) -> list[Event]:
        """Events after `rv`, or Expired when some of them are no longer kept."""
        if rv < self.floor:
            raise Expired(rv, self.floor + 1)
        # History is in rv order; skip the prefix at or before rv.
        events = self.history
        if not events or events[-1].rv <= rv:
            return []
        start = bisect.bisect_right(events, rv, key=_event_rv)
        return [events[i] for i in range(start, len(events))]

    def snapshot(self, rv: int) -> dict[Key, StoredObject]:
        """The objects as they were at revision `rv` (undoing later events)."""
        later = self.events_since(rv)
        if not later:
            return self.objects
        state = dict(self.objects)
        for event in reversed(later):
            if event.type == "ADDED":
                state.pop(event.new.key, None)
            elif event.old is not None:
                state[event.old.key] = event.old
        return state


class Revisions(Protocol):
    """What a read needs of the store: the objects now or at a past revision. `Store` is one;
    a view pinned to an older revision is another."""

    @property
    def revision(self) -> int:
        """The newest revision this view has."""

    def get(self, gr: GroupResource, namespace: str, name: str) -> StoredObject | None:
        """One object, or None."""

    def state_at(
        self, gr: GroupResource, rv: int | None, namespace: str | None = None
    ) -> tuple[Mapping[Key, StoredObject], list[Key]]:
        """The objects by key and their keys in order, now (None) or as of revision `rv`."""


class Store:
    """Objects of every resource under one revision counter."""

    def __init__(
        self,
        history_size: int = 10_000,
        backend: Backend | None = None,
        max_pending: int = 100_000,
        decoded_objects: int = 2048,
    ) -> None:
        self.revision = 0
        self.history_size = history_size
        # Per resource, how many live objects keep their decoded form (DecodedObjects).
        self.decoded_objects = decoded_objects
        self.max_pending = max_pending
        self.backend = backend
        # Keyed by (group, resource): a tuple hashes without calling into Python, which a
        # GroupResource (a frozen dataclass) does, and every read and write looks one up.
        self._collections: dict[tuple[str, str], Collection] = {}
        # Where this store's memory of events begins: nothing before it can be replayed.
        self._base = 0
        if backend is not None:
            self._load(backend)

    def _load(self, backend: Backend) -> None:
        revision, rows = backend.load()
        for gr, raw in rows:
            coll = self.collection(gr)
            stored = _stored(raw, coll.decoded)
            coll.objects[stored.key] = stored
        events = backend.load_events()
        # The persisted log is a contiguous suffix of history: watches may resume from any
        # revision at or after the one before its first event.
        self._base = events[0][0] - 1 if events else revision
        self.revision = revision
        for collection in self._collections.values():
            collection.floor = self._base
            collection._sorted = None
        for _, gr, kind, data, previous in events:
            coll = self.collection(gr)
            old = _stored(previous) if previous is not None else None
            event = Event(kind, _stored(data), old)  # type: ignore[arg-type]
            coll.history.append(event)
            while len(coll.history) > coll.history_size:
                coll.floor = coll.history.popleft().rv

    def collection(self, gr: GroupResource) -> Collection:
        coll = self._collections.get((gr.group, gr.resource))
        if coll is None:
            # A collection seen for the first time has missed no event since the base.
            coll = Collection(gr, self.history_size, self.decoded_objects)
            coll.floor = self._base
            self._collections[(gr.group, gr.resource)] = coll
        return coll

    def get(self, gr: GroupResource, namespace: str, name: str) -> StoredObject | None:
        coll = self._collections.get((gr.group, gr.resource))
        return None if coll is None else coll.objects.get((namespace, name))

    def current(
        self, gr: GroupResource, namespace: str | None = None
    ) -> tuple[list[StoredObject], int]:
        """Current objects in key order, and the revision they are current at."""
        coll = self._collections.get((gr.group, gr.resource))
        if coll is None:
            return [], self.revision
        objects = coll.objects
        return [objects[k] for k in coll.sorted_keys(namespace)], self.revision

    def list_at(
        self, gr: GroupResource, rv: int, namespace: str | None = None
    ) -> list[StoredObject]:
        """Objects as of revision `rv` in key order; Expired if that is no longer known."""
        state, keys = self.state_at(gr, rv, namespace)
        return [state[k] for k in keys]

    def state_at(
        self, gr: GroupResource, rv: int | None, namespace: str | None = None
    ) -> tuple[Mapping[Key, StoredObject], list[Key]]:
        """The objects (by key) and their keys in order, now (rv None) or as of revision `rv`.

        Pages of a large list walk the ordered keys from their start point, so the current
        state is returned as is rather than copied.
        """
        coll = self.collection(gr)
        if rv is None:
            return coll.objects, coll.sorted_keys(namespace)
        state = coll.snapshot(rv)
        if state is coll.objects:
            return state, coll.sorted_keys(namespace)
        return state, sorted(k for k in state if namespace is None or k[0] == namespace)

    def _commit(
        self, gr: GroupResource, obj: dict[str, Any], type: EventType, old: StoredObject | None
    ) -> StoredObject:
        # Whatever can fail (encoding, the durable write) happens before anything is visible:
        # a write either reaches storage, memory and every watcher, or none of them.
        rv = self.revision + 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(rv)
        key = (meta.get("namespace", ""), meta["name"])
        raw = dumps_exact(obj)
        coll = self.collection(gr)
        stored = StoredObject(key, obj, raw, rv, coll.decoded)
        if self.backend is not None:
            previous = old.raw if old is not None else None
            self.backend.write(gr, key, None if type == "DELETED" else raw, rv, type, raw, previous)
        self.revision = rv
        if type == "DELETED":
            del coll.objects[key]
            coll._sorted = None
        else:
            if old is None:
                coll._sorted = None
            coll.objects[key] = stored
        coll.record(Event(type, stored, old))
        return stored

    def create(self, gr: GroupResource, obj: dict[str, Any]) -> StoredObject:
        """Commit a new object (the caller has checked that its key is free)."""
        return self._commit(gr, obj, "ADDED", None)

    def update(self, gr: GroupResource, obj: dict[str, Any], old: StoredObject) -> StoredObject:
        """Commit a new version of `old`."""
        return self._commit(gr, obj, "MODIFIED", old)

    def delete(
        self, gr: GroupResource, old: StoredObject, last: dict[str, Any] | None = None
    ) -> StoredObject:
        """Remove an object; watchers see its last state (`last`, default the stored one)
        under the deletion's revision."""
        return self._commit(gr, old.thaw() if last is None else last, "DELETED", old)

    def watch(
        self,
        gr: GroupResource,
        namespace: str | None,
        predicate: Predicate | None,
        since: int | None,
    ) -> Watcher:
        """Register a watch. since=None: ADDED for every current object first, then changes;
        since=N: every change after revision N (Expired if history no longer reaches back)."""
        coll = self.collection(gr)
        watcher = Watcher(coll, namespace, predicate, self.max_pending)
        if since is None:
            for key in coll.sorted_keys(namespace):
                stored = coll.objects[key]
                if predicate is None or predicate(stored.obj):
                    watcher.pending.append((Event("ADDED", stored, None), "ADDED"))
        else:
            for event in coll.events_since(since):
                _deliver(watcher, event)
        if not watcher.closed:
            coll.watchers.add(watcher)
        return watcher

    def compact(self, rv: int | None = None) -> None:
        """Forget history at or before `rv` (default: all of it), as etcd compaction does."""
        target = self.revision if rv is None else rv
        for coll in self._collections.values():
            while coll.history and coll.history[0].rv <= target:
                coll.floor = coll.history.popleft().rv
            coll.floor = max(coll.floor, target)

    def drop(self, gr: GroupResource) -> None:
        """Close every watch on a resource that stops being served."""
        coll = self._collections.get((gr.group, gr.resource))
        if coll is not None:
            for watcher in list(coll.watchers):
                watcher.close()
