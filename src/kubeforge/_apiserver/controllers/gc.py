"""Owner-reference garbage collection, as the controller manager's collector does it.

The collector keeps a graph of every object's uid and of each dependent's owners, fed by
the commit observers, and works on a background task: a DELETE answers first and the
dependents go afterwards. An owner is absent when no object with its uid exists where the
reference can point (same namespace, or cluster scope); a dependent none of whose owners is
left is deleted, one that keeps a live owner loses the dangling references. Owners deleted
in the foreground (`foregroundDeletion` finalizer) go once no dependent blocks them any
more; owners deleted with `orphan` first strip their reference from every dependent.

`WorkQueue` (the background task) and `StorageTypes` are shared with the namespace
controller.
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, NamedTuple

from kubeforge import clock
from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._apiserver.controllers.writer import Writer
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.writes import run_now
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.store import Store, StoredObject
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import GroupResource, ResourceType

__all__ = ["GarbageCollector", "OwnerRef", "StorageTypes", "WorkQueue", "controller_call"]

log = logging.getLogger("kubeforge.apiserver.gc")

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
CONTROLLER_AGENT = "kube-controller-manager/v1.33.0"

# Where an object lives: (storage, namespace or "", name).
Where = tuple[GroupResource, str, str]

_SOLID, _ABSENT, _WAITING, _INVALID = range(4)
_BATCH = 64
_MAX_BACKOFF = 30.0


class WorkQueue:
    """Keys handled one at a time by `handle` on a background task.

    A key added again before it is handled is handled once; a key can be delayed; a key
    whose handling raises is retried with exponential backoff (as controllers do). `handle`
    may be a coroutine function (writes that call a conversion webhook wait for it).
    """

    def __init__(self, handle: Callable[[str], Awaitable[None] | None], name: str) -> None:
        self._handle = handle
        self._name = name
        self._ready: dict[str, None] = {}
        self._delayed: list[tuple[float, int, str]] = []
        self._sequence = itertools.count()
        self._failures: dict[str, int] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def add(self, key: str, delay: float = 0.0) -> None:
        """Queue `key` now, or after `delay` seconds."""
        if delay > 0:
            heapq.heappush(self._delayed, (clock.monotonic() + delay, next(self._sequence), key))
        else:
            self._ready[key] = None
        self._wakeup.set()

    def __len__(self) -> int:
        return len(self._ready) + len(self._delayed)

    def start(self) -> None:
        """Start handling keys on the running event loop."""
        if self._task is None or self._task.done():
            # A fresh event: the old one may belong to another (finished) event loop.
            self._wakeup = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        """Stop handling keys; queued keys wait for the next start()."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    def _promote(self) -> None:
        now = clock.monotonic()
        delayed = self._delayed
        while delayed and delayed[0][0] <= now:
            self._ready[heapq.heappop(delayed)[2]] = None

    async def _run(self) -> None:
        handled = 0
        while True:
            self._promote()
            if not self._ready:
                self._wakeup.clear()
                timeout = self._delayed[0][0] - clock.monotonic() if self._delayed else None
                if timeout is None or timeout > 0:
                    try:
                        await clock.wait_for(self._wakeup.wait(), timeout)
                    except TimeoutError:
                        pass
                continue
            key = next(iter(self._ready))
            del self._ready[key]
            try:
                pending = self._handle(key)
                if inspect.isawaitable(pending):
                    await pending
            except Exception as exc:
                failures = self._failures.get(key, 0) + 1
                self._failures[key] = failures
                delay = min(0.05 * 2**failures, _MAX_BACKOFF)
                level = logging.WARNING if failures == 1 else logging.DEBUG
                log.log(level, "%s: %s failed (%s), retrying in %.2fs", self._name, key, exc, delay)
                self.add(key, delay)
            else:
                if self._failures:
                    self._failures.pop(key, None)
            handled += 1
            if handled % _BATCH == 0:
                await asyncio.sleep(0)  # let requests in during a long cascade


class StorageTypes:
    """One served type per stored resource (the storage version's), cached per registry
    generation: what background writers use to address stored objects."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._generation = -1
        self._types: dict[GroupResource, ResourceType] = {}

    def _refresh(self) -> dict[GroupResource, ResourceType]:
        registry = self.registry
        if registry.generation != self._generation:
            types: dict[GroupResource, ResourceType] = {}
            for rt in registry:
                if rt.virtual:
                    continue
                gr = rt.group_resource
                current = types.get(gr)
                if current is None or _rank(rt) < _rank(current):
                    types[gr] = rt
            self._types = types
            self._generation = registry.generation
        return self._types

    def get(self, gr: GroupResource) -> ResourceType | None:
        return self._refresh().get(gr)

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._refresh().values()))


def _rank(rt: ResourceType) -> int:
    """Lower is better: the type that owns its storage, in the storage version."""
    if rt.storage is not None:
        return 2
    if rt.is_crd and rt.version != rt.storage_version:
        return 1
    return 0


def controller_call(rt: ResourceType, namespace: str, name: str, verb: str) -> Call:
    """A request as the controller manager would make it."""
    info = RequestInfo(rt.group, rt.version, namespace or None, rt.plural, name, None, verb)
    return Call(info, rt, {}, CONTROLLER_AGENT)


class OwnerRef(NamedTuple):
    """The parts of an ownerReference the collector needs."""

    uid: str
    api_version: str
    kind: str
    name: str
    block: bool


def _owner_refs(raw: Any) -> tuple[OwnerRef, ...]:
    if not isinstance(raw, list):
        return ()
    refs = []
    for ref in raw:
        if isinstance(ref, dict) and ref.get("uid"):
            refs.append(
                OwnerRef(
                    str(ref["uid"]),
                    str(ref.get("apiVersion") or ""),
                    str(ref.get("kind") or ""),
                    str(ref.get("name") or ""),
                    ref.get("blockOwnerDeletion") is True,
                )
            )
    return tuple(refs)


def _gc_finalizers(meta: dict[str, Any]) -> tuple[bool, bool]:
    """(orphan, foreground) for an object being deleted."""
    finalizers = meta.get("finalizers")
    if not finalizers or not meta.get("deletionTimestamp"):
        return False, False
    return ORPHAN in finalizers, FOREGROUND in finalizers


class GarbageCollector:
    """Deletes dependents whose owners are gone; runs foreground and orphan deletion."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        codec: Codec,
        writer: Writer,
        absent_owner_grace: float = 0.1,
    ) -> None:
        self.store = store
        self.codec = codec
        self.writer = writer
        # How long a reference to an unknown uid may stay unresolved before it is treated
        # as absent (the real collector looks the owner up before acting).
        self.absent_owner_grace = absent_owner_grace
        self.types = StorageTypes(registry)
        self._where: dict[str, Where] = {}
        self._owners: dict[str, tuple[OwnerRef, ...]] = {}
        # owner uid -> {dependent uid: whether that dependent blocks the owner's deletion}
        self._dependents: dict[str, dict[str, bool]] = {}
        self._warned: set[tuple[str, str]] = set()
        self._scanned = False
        self.queue = WorkQueue(self._process, "garbage collector")
        self.registry = registry

    # lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Learn what is stored (first start) and start collecting."""
        if not self._scanned:
            self._scanned = True
            store = self.store
            for rt in self.types:
                gr = rt.group_resource
                for stored in store.current(gr)[0]:
                    uid = stored.obj["metadata"].get("uid")
                    if uid:
                        self._track(gr, str(uid), stored, None)
        self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()

    # the graph ------------------------------------------------------------------------------

    def observe(
        self, rt: ResourceType, event: str, new: StoredObject, old: StoredObject | None
    ) -> None:
        """Record a commit in the graph and queue what it may have unblocked."""
        uid = new.obj["metadata"].get("uid")
        if not uid:
            return
        if event == "DELETED":
            self._forget(uid)
        else:
            self._track(rt.group_resource, uid, new, old)

    def _track(
        self, gr: GroupResource, uid: str, stored: StoredObject, old: StoredObject | None
    ) -> None:
        meta = stored.obj["metadata"]
        if uid not in self._where:
            self._where[uid] = (gr, *stored.key)
        raw = meta.get("ownerReferences")
        before = self._owners.get(uid, ())
        # Most writes leave the references alone: compare the raw lists before parsing.
        changed = old is None or not before or raw != old.obj["metadata"].get("ownerReferences")
        if (raw or before) and changed:
            refs = _owner_refs(raw)
            if refs != before:
                self._set_owners(uid, before, refs)
                self._check_new_refs(uid, stored.key[0], refs)
        orphan, foreground = _gc_finalizers(meta)
        if orphan or foreground:
            self.queue.add(uid)
            was_waiting = old is not None and _gc_finalizers(old.obj["metadata"])[1]
            if foreground and not was_waiting:
                # The owner starts waiting for its dependents: each is looked at.
                for dependent in self._dependents.get(uid, ()):
                    self.queue.add(dependent)

    def _set_owners(
        self, uid: str, before: tuple[OwnerRef, ...], refs: tuple[OwnerRef, ...]
    ) -> None:
        now = {ref.uid: ref.block for ref in refs}
        for ref in before:
            if now.get(ref.uid) != ref.block:
                deps = self._dependents.get(ref.uid)
                if deps is not None:
                    deps.pop(uid, None)
                    if not deps:
                        del self._dependents[ref.uid]
                # An owner waiting in the foreground may be free now.
                self.queue.add(ref.uid)
        for owner, block in now.items():
            self._dependents.setdefault(owner, {})[uid] = block
        if refs:
            self._owners[uid] = refs
        else:
            self._owners.pop(uid, None)

    def _check_new_refs(self, uid: str, namespace: str, refs: tuple[OwnerRef, ...]) -> None:
        """Queue a dependent whose new references are not all to live owners."""
        unknown = unsettled = False
        for ref in refs:
            if ref.uid not in self._where:
                unknown = True
            elif self._owner_state(ref, namespace)[0] != _SOLID:
                unsettled = True
        if unknown:
            # Give a reference to an unknown uid a moment before it counts as absent.
            self.queue.add(uid, self.absent_owner_grace)
        elif unsettled:
            self.queue.add(uid)

    def _forget(self, uid: str) -> None:
        self._where.pop(uid, None)
        for ref in self._owners.pop(uid, ()):
            deps = self._dependents.get(ref.uid)
            if deps is not None:
                deps.pop(uid, None)
                if not deps:
                    del self._dependents[ref.uid]
            self.queue.add(ref.uid)
        for dependent in self._dependents.get(uid, ()):
            self.queue.add(dependent)

    def _owner_state(self, ref: OwnerRef, namespace: str) -> tuple[int, StoredObject | None]:
        """Whether the owner a dependent in `namespace` refers to is there (solid), being
        deleted in the foreground (waiting), absent, or out of the dependent's reach."""
        where = self._where.get(ref.uid)
        if where is None:
            return _ABSENT, None
        gr, owner_ns, name = where
        if owner_ns and owner_ns != namespace:
            return _INVALID, None
        if name != ref.name:
            return _ABSENT, None
        stored = self.store.get(gr, owner_ns, name)
        if stored is None or stored.obj.get("kind") != ref.kind:
            return _ABSENT, None
        meta = stored.obj["metadata"]
        if meta.get("uid") != ref.uid:
            return _ABSENT, None
        if meta.get("deletionTimestamp") and FOREGROUND in (meta.get("finalizers") or ()):
            return _WAITING, stored
        return _SOLID, stored

    # work -------------------------------------------------------------------------------

    def _current(self, uid: str) -> StoredObject | None:
        where = self._where.get(uid)
        if where is None:
            return None
        stored = self.store.get(*where)
        if stored is None or stored.obj["metadata"].get("uid") != uid:
            return None
        return stored

    async def _process(self, uid: str) -> None:
        stored = self._current(uid)
        if stored is None:
            return
        meta = stored.obj["metadata"]
        if meta.get("deletionTimestamp"):
            orphan, foreground = _gc_finalizers(meta)
            if orphan:
                await self._orphan_dependents(uid, stored)
                stored = self._current(uid)
            if foreground and stored is not None:
                await self._finish_foreground(uid, stored)
            # Otherwise the object is on its way out: its dependents are looked at when
            # it is gone.
            return
        refs = self._owners.get(uid)
        if refs:
            await self._collect(uid, stored, refs)

    async def _orphan_dependents(self, uid: str, stored: StoredObject) -> None:
        for dependent in list(self._dependents.get(uid, ())):
            await self._remove_owner_refs(dependent, {uid})
        await self._remove_finalizer(stored, ORPHAN)

    async def _finish_foreground(self, uid: str, stored: StoredObject) -> None:
        dependents = self._dependents.get(uid)
        if dependents and any(dependents.values()):
            return  # a dependent that blocks deletion is still there
        await self._remove_finalizer(stored, FOREGROUND)

    async def _collect(self, uid: str, stored: StoredObject, refs: tuple[OwnerRef, ...]) -> None:
        """Delete a dependent without live owners, or drop its references to gone ones."""
        namespace = stored.key[0]
        solid = False
        dropped: set[str] = set()
        waiting = False
        for ref in refs:
            state = self._owner_state(ref, namespace)[0]
            if state == _SOLID:
                solid = True
                continue
            dropped.add(ref.uid)
            if state == _WAITING:
                waiting = True
            elif state == _INVALID:
                self._warn_invalid(stored, ref)
        if solid:
            if dropped:
                await self._remove_owner_refs(uid, dropped)
            return
        meta = stored.obj["metadata"]
        finalizers = meta.get("finalizers") or ()
        dependents = self._dependents.get(uid)
        if waiting and dependents:
            # Its own dependents must go before it, as its owner waits for it. When one of
            # them waits for its dependents too, the references may form a cycle: this
            # object stops blocking its owners so that the wait can end.
            if any(self._waiting(dependent) for dependent in dependents):
                await self._unblock_owner_refs(uid)
                current = self._current(uid)
                if current is None:
                    return
                stored = current
            policy = "Foreground"
        elif ORPHAN in finalizers:
            policy = "Orphan"
        elif FOREGROUND in finalizers:
            policy = "Foreground"
        else:
            policy = "Background"
        await self._delete(stored, policy)

    # writes -----------------------------------------------------------------------------

    def _type_of(self, uid: str) -> ResourceType:
        gr = self._where[uid][0]
        rt = self.types.get(gr)
        if rt is None:
            raise StatusError.internal(f"no served type for {gr}")
        return rt

    async def _delete(self, stored: StoredObject, policy: str) -> None:
        uid = str(stored.obj["metadata"]["uid"])
        rt = self._type_of(uid)
        ns, name = stored.key
        options = {"propagationPolicy": policy, "preconditions": {"uid": uid}}
        await self.writer.delete_stored(
            controller_call(rt, ns, name, "delete"), stored, options, answer=False
        )

    async def _remove_owner_refs(self, uid: str, owners: set[str]) -> None:
        stored = self._current(uid)
        if stored is None:
            return
        rt = self._type_of(uid)
        obj = await self.codec.read_as(rt, stored)
        meta = obj["metadata"]
        refs = meta.get("ownerReferences") or []
        kept = [r for r in refs if not (isinstance(r, dict) and r.get("uid") in owners)]
        if len(kept) == len(refs):
            return
        if kept:
            meta["ownerReferences"] = kept
        else:
            del meta["ownerReferences"]
        ns, name = stored.key
        await self.writer.write_update(controller_call(rt, ns, name, "patch"), obj, stored)

    def _waiting(self, uid: str) -> bool:
        """Whether an object is being deleted in the foreground."""
        stored = self._current(uid)
        return stored is not None and _gc_finalizers(stored.obj["metadata"])[1]

    async def _unblock_owner_refs(self, uid: str) -> None:
        stored = self._current(uid)
        if stored is None:
            return
        rt = self._type_of(uid)
        obj = await self.codec.read_as(rt, stored)
        changed = False
        for ref in obj["metadata"].get("ownerReferences") or ():
            if isinstance(ref, dict) and ref.get("blockOwnerDeletion") is True:
                ref["blockOwnerDeletion"] = False
                changed = True
        if changed:
            ns, name = stored.key
            await self.writer.write_update(controller_call(rt, ns, name, "patch"), obj, stored)

    async def _remove_finalizer(self, stored: StoredObject, finalizer: str) -> None:
        uid = str(stored.obj["metadata"]["uid"])
        rt = self._type_of(uid)
        obj = await self.codec.read_as(rt, stored)
        meta = obj["metadata"]
        finalizers = [f for f in meta.get("finalizers") or () if f != finalizer]
        if finalizers:
            meta["finalizers"] = finalizers
        else:
            meta.pop("finalizers", None)
        ns, name = stored.key
        await self.writer.write_update(controller_call(rt, ns, name, "patch"), obj, stored)

    def _warn_invalid(self, stored: StoredObject, ref: OwnerRef) -> None:
        """Record a Warning event for a reference to an owner the dependent cannot have
        (one in another namespace, or a namespaced one for a cluster-scoped dependent)."""
        meta = stored.obj["metadata"]
        uid = str(meta["uid"])
        if (uid, ref.uid) in self._warned:
            return
        self._warned.add((uid, ref.uid))
        events = self.registry.get("", "v1", "events")
        if events is None:
            return
        ns, name = stored.key
        event_ns = ns or "default"
        involved = {
            "apiVersion": stored.obj.get("apiVersion"),
            "kind": stored.obj.get("kind"),
            "name": name,
            "uid": uid,
            "resourceVersion": meta.get("resourceVersion"),
        }
        if ns:
            involved["namespace"] = ns
        now = now_rfc3339()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{time.time_ns():x}", "namespace": event_ns},
            "involvedObject": involved,
            "reason": "OwnerRefInvalidNamespace",
            "message": (
                f"ownerRef [{ref.api_version}/{ref.kind}, namespace: {ns}, name: {ref.name}, "
                f'uid: {ref.uid}] does not exist in namespace "{ns}"'
            ),
            "type": "Warning",
            "source": {"component": "garbage-collector-controller"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            run_now(self.writer.create(controller_call(events, event_ns, "", "create"), body))
        except StatusError as exc:
            log.debug("could not record an event for %s: %s", name, exc.message)
