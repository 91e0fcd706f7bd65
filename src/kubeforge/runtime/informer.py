"""Informer: list, then watch, keeping a local store in step with the server.

The first list fills the store page by page and tells handlers about each object as an
initial add. Then a watch runs from the list's resourceVersion; when the server ends it, it
resumes from the last revision seen (bookmarks keep that fresh). If the server no longer has
that history (410 Gone), the informer lists again into a fresh store, swaps it in at once, and
tells handlers exactly what changed: adds, updates and deletes. Failures back off with
jitter (0.8 s doubling to 30 s) and are counted; the informer never stops on its own.
Every `resync_period` (10 h ± 10% by default) handlers see every object again as an update
from itself, which controllers treat as low-priority work.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from kubeforge.api.compactjson import dumps_exact
from kubeforge.client.client import Client, KindLike
from kubeforge.client.errors import Gone
from kubeforge.client.watch import BOOKMARK, DELETED
from kubeforge.runtime.store import IndexFunc, Store, key_of

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


class Informer:
    """Keeps `store` equal to the server's objects of one kind (with optional selectors)."""

    def __init__(
        self,
        client: Client,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Transform | None = strip_managed_fields,
        resync_period: float | None = DEFAULT_RESYNC,
        page_size: int = 500,
        indexers: Mapping[str, IndexFunc] | None = None,
        on_watch_restart: Callable[[str], None] | None = None,
        watch_timeout: tuple[int, int] = (300, 600),
    ) -> None:
        self.client = client
        self.kind = kind
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.transform = transform
        self.resync_period = resync_period
        self.page_size = page_size
        self.on_watch_restart = on_watch_restart
        self.watch_timeout = watch_timeout
        self.store = Store(indexers)
        self.synced = asyncio.Event()
        self.last_resource_version = ""
        self.watch_restarts = 0
        self._handlers: list[ResourceEventHandler] = []
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"Informer({self.kind!r}, namespace={self.namespace!r})"

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
        """List and watch until cancelled."""
        resync = asyncio.create_task(self._resync_loop()) if self.resync_period else None
        backoff = _Backoff()
        need_list = True
        try:
            while True:
                try:
                    if need_list:
                        await self._list()
                        need_list = False
                    await self._watch()
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
        finally:
            if resync is not None:
                resync.cancel()

    def _restarted(self, why: str) -> None:
        self.watch_restarts += 1
        if self.on_watch_restart is not None:
            self.on_watch_restart(why)

    def _prepare(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.transform(obj) if self.transform is not None else obj

    async def _list(self) -> None:
        first = not self.synced.is_set()
        # The first list fills the (empty) store directly; a re-list builds a new one to swap.
        target = self.store if first else self.store.empty_copy()
        rv = ""
        async for page in self.client.list_pages(
            _untyped(self.kind),
            namespace=self.namespace,
            all_namespaces=self.namespace is None,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.page_size,
        ):
            rv = rv or page.resource_version
            for item in page.items:
                obj = self._prepare(item)
                target.put(obj)
                if first:
                    self._emit_add(obj, True)
        if not first:
            self._swap(target)
        self.last_resource_version = rv
        self.synced.set()

    def _swap(self, fresh: Store) -> None:
        """Replace the store with a re-list's result and tell handlers what changed."""
        old = self.store.empty_copy()
        old.take(self.store)
        self.store.take(fresh)
        for key, data in list(self.store.items()):
            before = old.raw(key)
            if before is None:
                self._emit_add(orjson.loads(data), False)
            elif before != data:
                self._emit_update(orjson.loads(before), orjson.loads(data))
        for key, data in list(old.items()):
            if key not in self.store:
                self._emit_delete(orjson.loads(data))

    async def _watch(self) -> None:
        low, high = self.watch_timeout
        timeout = random.randint(low, high)
        started = time.monotonic()
        async for event in self.client.watch(
            _untyped(self.kind),
            namespace=self.namespace,
            all_namespaces=self.namespace is None,
            resource_version=self.last_resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
            allow_bookmarks=True,
            idle_timeout=timeout + 60,
        ):
            rv = event.resource_version
            if event.type == BOOKMARK:
                if rv:
                    self.last_resource_version = rv
                continue
            obj = self._prepare(event.object)
            if event.type == DELETED:
                self.store.delete(key_of(obj))
                self._emit_delete(obj)
            else:
                data = dumps_exact(obj)
                previous = self.store.put(obj, data)
                if previous is None:
                    self._emit_add(obj, False)
                elif previous != data:
                    self._emit_update(orjson.loads(previous), obj)
            if rv:
                self.last_resource_version = rv
        if time.monotonic() - started < timeout - 1:
            # The server closed the stream long before its timeout: count it, then resume.
            self._restarted("closed")

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
