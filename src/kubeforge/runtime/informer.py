"""Informer: list, then watch, keeping a local store in step with the server.

The first list fills the store page by page and tells handlers about each object as an
initial add. Then a watch runs from the list's resourceVersion; when the server ends it, it
resumes from the last revision seen (bookmarks keep that fresh). If the server no longer has
that history (410 Gone), the informer lists again and, in one step, makes the store equal to
the new list, telling handlers exactly what changed: adds, updates and deletes. Failures
back off with jitter (0.8 s doubling to 30 s) and are counted; the informer never stops on
its own. Every `resync_period` (10 h ± 10% by default) handlers see every object again as an
update from itself, which controllers treat as low-priority work.

An informer watches all namespaces, one, or several (one list and watch per namespace, into
one store). A metadata-only informer keeps each object's apiVersion, kind and metadata only.

Reading your own writes: `observe_write` puts an object a write returned into the store at
once, so a reconcile that runs before the write's watch event arrives reads what it wrote,
not an older copy. Handlers still hear of the change from the watch event, with the version
they last saw as the old object; watch events older than a written object (by
resourceVersion) reach handlers but do not replace it in the store.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from kubeforge.api.machinery.compactjson import dumps_exact
from kubeforge.api.machinery.selectors import LabelSelector
from kubeforge.client.client import Client, KindLike
from kubeforge.client.errors import Gone
from kubeforge.client.watch import BOOKMARK, DELETED
from kubeforge.runtime.store import NAMESPACE_INDEX, IndexFunc, Store, key_of

__all__ = [
    "HandlerFuncs",
    "Informer",
    "ResourceEventHandler",
    "Transform",
    "strip_managed_fields",
]

log = logging.getLogger("kubeforge.informer")

Transform = Callable[[dict[str, Any]], dict[str, Any]]
DEFAULT_RESYNC = 10 * 3600.0


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The default transform: managedFields are large and controllers rarely read them."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


class ResourceEventHandler(Protocol):
    """What an informer tells about changes. Handlers must not modify the objects."""

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None: ...
    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None: ...
    def on_delete(self, obj: dict[str, Any]) -> None: ...


@dataclass
class HandlerFuncs:
    """A handler built from optional functions."""

    add: Callable[[dict[str, Any], bool], None] | None = None
    update: Callable[[dict[str, Any], dict[str, Any]], None] | None = None
    delete: Callable[[dict[str, Any]], None] | None = None

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        if self.add is not None:
            self.add(obj, is_in_initial_list)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if self.update is not None:
            self.update(old, new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        if self.delete is not None:
            self.delete(obj)


class _Backoff:
    """client-go's reflector backoff: 0.8 s doubling to 30 s, full jitter, reset after 2 min
    without failures."""

    def __init__(self, initial: float = 0.8, cap: float = 30.0, reset_after: float = 120.0):
        self.initial, self.cap, self.reset_after = initial, cap, reset_after
        self.current = initial
        self.last_failure = 0.0

    def next(self) -> float:
        now = time.monotonic()
        if now - self.last_failure > self.reset_after:
            self.current = self.initial
        self.last_failure = now
        delay = self.current * (1 + random.random())
        self.current = min(self.current * 2, self.cap)
        return min(delay, self.cap)


@dataclass
class _Written:
    """A key whose stored object came from a write, not yet confirmed by the watch."""

    version: int | None  # the written object's resourceVersion (None: not comparable)
    seen: bytes | None  # what handlers were last told about the key (None: nothing)
    deleted: bool = False  # a delete (or a change out of the selection) removed it


def _version(obj: Mapping[str, Any]) -> int | None:
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


def _metadata_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": obj.get("metadata") or {},
    }


class Informer:
    """Keeps `store` equal to the server's objects of one kind (with optional selectors).

    `namespace` watches one namespace, `namespaces` several, neither all of them.
    `metadata_only` keeps apiVersion, kind and metadata only (PartialObjectMetadata).
    """

    def __init__(
        self,
        client: Client,
        kind: KindLike,
        *,
        namespace: str | None = None,
        namespaces: Sequence[str] | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Transform | None = strip_managed_fields,
        resync_period: float | None = DEFAULT_RESYNC,
        page_size: int = 500,
        indexers: Mapping[str, IndexFunc] | None = None,
        on_watch_restart: Callable[[str], None] | None = None,
        watch_timeout: tuple[int, int] = (300, 600),
        metadata_only: bool = False,
    ) -> None:
        if namespace is not None and namespaces is not None:
            raise ValueError("give namespace or namespaces, not both")
        if namespaces is not None:
            if not namespaces:
                raise ValueError("namespaces must name at least one namespace")
            scopes: tuple[str | None, ...] = tuple(dict.fromkeys(namespaces))
        else:
            scopes = (namespace,)
        self.client = client
        self.kind = kind
        self.namespaces: tuple[str, ...] | None = (
            None if scopes == (None,) else tuple(s for s in scopes if s is not None)
        )
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.transform = transform
        self.resync_period = resync_period
        self.page_size = page_size
        self.on_watch_restart = on_watch_restart
        self.watch_timeout = watch_timeout
        self.metadata_only = metadata_only
        self.store = Store(indexers)
        self.synced = asyncio.Event()
        self.watch_restarts = 0
        self._scopes = scopes
        self._versions: dict[str | None, str] = {}  # each scope's resume point
        self._listed: set[str | None] = set()
        self._labels = LabelSelector.parse(label_selector) if label_selector else None
        self._written: dict[str, _Written] = {}
        self._handlers: list[ResourceEventHandler] = []
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        where = "all namespaces" if self.namespaces is None else ",".join(self.namespaces)
        return f"Informer({self.kind!r}, {where})"

    @property
    def namespace(self) -> str | None:
        """The namespace watched when it is exactly one (None: all, or several)."""
        return self._scopes[0] if len(self._scopes) == 1 else None

    @property
    def last_resource_version(self) -> str:
        """The resourceVersion the watch resumes from (the newest over the namespaces)."""
        versions = [v for v in self._versions.values() if v]
        if len(versions) <= 1:
            return versions[0] if versions else ""
        return max(versions, key=lambda v: _version({"metadata": {"resourceVersion": v}}) or 0)

    @property
    def unconfirmed_writes(self) -> int:
        """Objects stored from writes whose watch events have not arrived yet."""
        return len(self._written)

    @property
    def name(self) -> str:
        """A label for logs and metrics: the kind."""
        kind = self.kind
        info = getattr(kind, "__kubeforge__", None)
        return str(info.gvk if info is not None else kind)

    # handlers -------------------------------------------------------------------------------

    def add_handler(self, handler: ResourceEventHandler) -> None:
        """Register a handler; once synced, it is told about the current objects first."""
        self._handlers.append(handler)
        if self.synced.is_set():
            for _, data in list(self.store.items()):
                self._call(handler.on_add, orjson.loads(data), True)

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            # A broken handler must not stop the informer for everyone else.
            log.exception("%s: event handler failed", self.name)

    def _emit_add(self, obj: dict[str, Any], initial: bool) -> None:
        for handler in self._handlers:
            self._call(handler.on_add, obj, initial)

    def _emit_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        for handler in self._handlers:
            self._call(handler.on_update, old, new)

    def _emit_delete(self, obj: dict[str, Any]) -> None:
        for handler in self._handlers:
            self._call(handler.on_delete, obj)

    # running --------------------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        """Run in a background task (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name=f"informer {self.name}")
        return self._task

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait until the first list is in the store; False on timeout."""
        try:
            await asyncio.wait_for(self.synced.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def run(self) -> None:
        """List and watch (each namespace) until cancelled."""
        resync = asyncio.create_task(self._resync_loop()) if self.resync_period else None
        try:
            if len(self._scopes) == 1:
                await self._reflect(self._scopes[0])
            else:
                async with asyncio.TaskGroup() as group:
                    for scope in self._scopes:
                        group.create_task(self._reflect(scope), name=f"{self.name} in {scope}")
        finally:
            if resync is not None:
                resync.cancel()

    async def _reflect(self, scope: str | None) -> None:
        """List and watch one namespace (or all) until cancelled."""
        backoff = _Backoff()
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list(scope)
                    need_list = False
                await self._watch(scope)
            except Gone:
                # The history we would resume from is gone: list again, at once.
                need_list = True
                self._restarted("expired")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._restarted(type(exc).__name__)
                delay = backoff.next()
                log.warning(
                    "%s: %s failed (%s); retrying in %.1fs",
                    self.name,
                    "list" if need_list else "watch",
                    exc,
                    delay,
                )
                await asyncio.sleep(delay)

    def _restarted(self, why: str) -> None:
        self.watch_restarts += 1
        if self.on_watch_restart is not None:
            self.on_watch_restart(why)

    def _prepare(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.metadata_only:
            obj = _metadata_of(obj)
        return self.transform(obj) if self.transform is not None else obj

    async def _list(self, scope: str | None) -> None:
        first = scope not in self._listed
        # The first list of an empty store fills it directly; a re-list gathers the new
        # state first and then makes the store equal to it in one step.
        direct = first and not self.store
        fresh: dict[str, tuple[dict[str, Any], bytes]] = {}
        rv = ""
        async for page in self.client.list_pages(
            _untyped(self.kind),
            namespace=scope,
            all_namespaces=scope is None,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.page_size,
            metadata_only=self.metadata_only,
        ):
            rv = rv or page.resource_version
            for item in page.items:
                obj = self._prepare(item)
                if direct:
                    self.store.put(obj)
                    self._emit_add(obj, True)
                else:
                    fresh[key_of(obj)] = (obj, dumps_exact(obj))
        if not direct:
            self._replace(scope, fresh, initial=first)
        self._versions[scope] = rv
        self._listed.add(scope)
        if len(self._listed) == len(self._scopes):
            self.synced.set()

    def _replace(
        self, scope: str | None, fresh: dict[str, tuple[dict[str, Any], bytes]], initial: bool
    ) -> None:
        """Make the store's objects of `scope` those of a re-list, telling handlers what
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
                self._emit_add(obj, initial)
            elif before != data:
                store.put(obj, data)
                self._emit_update(orjson.loads(before), obj)
        for key in in_scope - fresh.keys():
            old = store.delete(key)
            if old is not None:
                self._emit_delete(orjson.loads(old))

    async def _watch(self, scope: str | None) -> None:
        low, high = self.watch_timeout
        timeout = random.randint(low, high)
        started = time.monotonic()
        async for event in self.client.watch(
            _untyped(self.kind),
            namespace=scope,
            all_namespaces=scope is None,
            resource_version=self._versions.get(scope, ""),
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
            allow_bookmarks=True,
            idle_timeout=timeout + 60,
            metadata_only=self.metadata_only,
        ):
            rv = event.resource_version
            if event.type == BOOKMARK:
                if rv:
                    self._versions[scope] = rv
                continue
            obj = self._prepare(event.object)
            key = key_of(obj)
            written = self._written.get(key) if self._written else None
            if written is not None:
                self._confirm(key, written, event.type, obj)
            elif event.type == DELETED:
                self.store.delete(key)
                self._emit_delete(obj)
            else:
                data = dumps_exact(obj)
                previous = self.store.put(obj, data)
                if previous is None:
                    self._emit_add(obj, False)
                elif previous != data:
                    self._emit_update(orjson.loads(previous), obj)
            if rv:
                self._versions[scope] = rv
        if time.monotonic() - started < timeout - 1:
            # The server closed the stream long before its timeout: count it, then resume.
            self._restarted("closed")

    def _confirm(self, key: str, written: _Written, event_type: str, obj: dict[str, Any]) -> None:
        """A watch event for a key the store holds a written object of."""
        version = _version(obj)
        if event_type == DELETED:
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
            self._emit_delete(obj)
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
            self._emit_add(obj, False)
        else:
            self._emit_update(orjson.loads(seen), obj)

    # reading your own writes ----------------------------------------------------------------

    def _in_scope(self, namespace: str | None) -> bool:
        return self.namespaces is None or not namespace or namespace in self.namespaces

    def observe_write(self, obj: dict[str, Any]) -> None:
        """Store an object a write returned (the informer's transform applied), unless the
        store already holds a newer version. It is given to the informer, not copied."""
        if not self.synced.is_set() or self.field_selector:
            # Before the first list the list brings it; a field selector cannot be judged
            # here, so the watch decides what belongs.
            return
        meta = obj.get("metadata") or {}
        if not self._in_scope(meta.get("namespace")):
            return
        if self._labels is not None and not self._labels.matches(meta.get("labels")):
            # It left the selection: the watch will say DELETED.
            self.observe_delete(meta.get("namespace"), meta.get("name") or "")
            return
        obj = self._prepare(obj)
        key = key_of(obj)
        version = _version(obj)
        written = self._written.get(key)
        current = self.store.raw(key)
        if written is None and current is not None and version is not None:
            stored = _version(orjson.loads(current))
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

    def observe_delete(self, namespace: str | None, name: str) -> None:
        """Drop an object a delete removed (or a write moved out of the selection)."""
        if not self.synced.is_set() or self.field_selector or not self._in_scope(namespace):
            return
        key = f"{namespace}/{name}" if namespace else name
        written = self._written.get(key)
        current = self.store.raw(key)
        if written is None and current is None:
            return
        seen = written.seen if written is not None else current
        self._written[key] = _Written(None, seen, deleted=True)
        self.store.delete(key)

    # resync ---------------------------------------------------------------------------------

    async def _resync_loop(self) -> None:
        assert self.resync_period is not None
        await self.synced.wait()
        while True:
            # Jitter spreads the resyncs of many informers apart (±10%).
            await asyncio.sleep(self.resync_period * random.uniform(0.9, 1.1))
            self.resync()

    def resync(self) -> None:
        """Tell handlers about every cached object again (as an update from itself)."""
        for _, data in list(self.store.items()):
            obj = orjson.loads(data)
            self._emit_update(obj, obj)


def _untyped(kind: KindLike) -> KindLike:
    """The informer keeps dicts: address a typed class by its kind string."""
    info = getattr(kind, "__kubeforge__", None)
    return str(info.gvk) if info is not None else kind
