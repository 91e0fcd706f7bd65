"""Informer: one kind's objects kept in a local store, and handlers told of every change.

An informer is three steps, one module each, read in this order (kube-runtime composes its
watcher, reflector and controller the same way; client-go's shared informer does the same
jobs):

1. watcher.py lists, then watches, each namespace it covers: resuming from the last revision
   seen, listing again after 410 Gone, backing off (jittered, counted) after failures;
2. reflector.py applies what the watchers see to the `Store` (store.py) and says what
   changed, holding the objects the cache's own writes returned until their watch events
   arrive (reading your own writes);
3. this module tells the registered handlers (one failing handler does not stop the
   others), tells a late handler what is already there, and resyncs: every
   `resync_period` (10 h ± 10% by default) handlers see every object again as an update
   from itself, which controllers treat as low-priority work.

An informer watches all namespaces, one, or several (one list and watch per namespace, into
one store). A metadata-only informer keeps each object's apiVersion, kind and metadata only.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from kubeforge import clock
from kubeforge._api.machinery.selectors import LabelSelector
from kubeforge._client.client import Client, KindLike
from kubeforge._runtime.reflector import Reflector, ResourceEventHandler, resource_version_number
from kubeforge._runtime.store import IndexFunc, Store
from kubeforge._runtime.watcher import EventSink, Watcher

__all__ = [
    "HandlerFuncs",
    "Informer",
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


class _Handlers:
    """The registered handlers as one handler: each told in turn."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.handlers: list[ResourceEventHandler] = []

    def call(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            # A broken handler must not stop the informer for everyone else.
            log.exception("%s: event handler failed", self.name)

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        for handler in self.handlers:
            self.call(handler.on_add, obj, is_in_initial_list)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        for handler in self.handlers:
            self.call(handler.on_update, old, new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        for handler in self.handlers:
            self.call(handler.on_delete, obj)


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
        self.watch_restarts = 0
        self._scopes = scopes
        self._labels = LabelSelector.parse(label_selector) if label_selector else None
        self._handlers = _Handlers(self.name)
        self._watchers = [
            Watcher(
                client,
                kind,
                scope,
                name=self.name,
                label_selector=label_selector,
                field_selector=field_selector,
                page_size=page_size,
                metadata_only=metadata_only,
                timeout=watch_timeout,
                on_restart=self._restarted,
            )
            for scope in scopes
        ]
        self._reflector = Reflector(self.store, self._handlers, self._prepare, scopes)
        # Where the watchers hand what they see: the reflector, or what intercepts it.
        self._sink: EventSink = self._reflector
        self.synced = self._reflector.synced
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
        versions = [w.resource_version for w in self._watchers if w.resource_version]
        if len(versions) <= 1:
            return versions[0] if versions else ""
        return max(
            versions,
            key=lambda v: resource_version_number({"metadata": {"resourceVersion": v}}) or 0,
        )

    @property
    def unconfirmed_writes(self) -> int:
        """Objects stored from writes whose watch events have not arrived yet."""
        return self._reflector.unconfirmed

    @property
    def name(self) -> str:
        """A label for logs and metrics: the kind."""
        kind = self.kind
        info = getattr(kind, "__kubeforge__", None)
        return str(info.gvk if info is not None else kind)

    # handlers -------------------------------------------------------------------------------

    def add_handler(self, handler: ResourceEventHandler) -> None:
        """Register a handler; once synced, it is told about the current objects first."""
        self._handlers.handlers.append(handler)
        if self.synced.is_set():
            for _, data in list(self.store.items()):
                self._handlers.call(handler.on_add, orjson.loads(data), True)

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
        """Wait until the first list is in the store; False after `timeout` seconds of the
        machine's time (a list takes I/O, not cluster time)."""
        try:
            await asyncio.wait_for(self.synced.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def run(self) -> None:
        """List and watch (each namespace) until cancelled."""
        resync = asyncio.create_task(self._resync_loop()) if self.resync_period else None
        try:
            if len(self._watchers) == 1:
                await self._watchers[0].run(self._sink)
            else:
                async with asyncio.TaskGroup() as group:
                    for watcher in self._watchers:
                        group.create_task(
                            watcher.run(self._sink), name=f"{self.name} in {watcher.scope}"
                        )
        finally:
            if resync is not None:
                resync.cancel()

    def intercept_events(self, wrap: Callable[[EventSink], EventSink]) -> None:
        """Pass what the watchers see through `wrap(sink)` before the store and the handlers
        hear of it: how a test holds back, reorders or merges watch events. Takes effect
        when the informer starts."""
        self._sink = wrap(self._sink)

    def _restarted(self, why: str) -> None:
        self.watch_restarts += 1
        if self.on_watch_restart is not None:
            self.on_watch_restart(why)

    def _prepare(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.metadata_only:
            obj = _metadata_of(obj)
        return self.transform(obj) if self.transform is not None else obj

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
        self._reflector.written(obj)

    def observe_delete(self, namespace: str | None, name: str) -> None:
        """Drop an object a delete removed (or a write moved out of the selection)."""
        if not self.synced.is_set() or self.field_selector or not self._in_scope(namespace):
            return
        self._reflector.removed(f"{namespace}/{name}" if namespace else name)

    # resync ---------------------------------------------------------------------------------

    async def _resync_loop(self) -> None:
        assert self.resync_period is not None
        await self.synced.wait()
        while True:
            # Jitter spreads the resyncs of many informers apart (±10%).
            await clock.sleep(self.resync_period * random.uniform(0.9, 1.1))
            self.resync()

    def resync(self) -> None:
        """Tell handlers about every cached object again (as an update from itself)."""
        for _, data in list(self.store.items()):
            obj = orjson.loads(data)
            self._handlers.on_update(obj, obj)
