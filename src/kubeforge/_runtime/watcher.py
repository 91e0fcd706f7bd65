"""Watcher: list, then watch, one kind in one namespace (or all), for as long as it runs.

The first step of an informer (informer.py composes watcher -> reflector -> handlers, as
kube-runtime's watcher, reflector and controller do). A watcher lists page by page, then
watches from the list's resourceVersion; when the server ends a watch, it resumes from the
last revision seen (bookmarks keep that fresh). If the server no longer has that history
(410 Gone), it lists again. Failures back off with jitter (0.8 s doubling to 30 s) and are
counted; a watcher never stops on its own. What it sees it hands, in order, to an
`EventSink` (reflector.py's Reflector): a list as `init`, its pages, `init_done`; then each
watch event as `apply` or `delete`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from typing import Any, Protocol

from kubeforge import clock
from kubeforge._client.client import Client, KindLike
from kubeforge._client.errors import Gone
from kubeforge._client.watch import BOOKMARK, DELETED

__all__ = ["EventSink", "Watcher"]

log = logging.getLogger("kubeforge.informer")


class EventSink(Protocol):
    """Where a watcher hands what it sees, in the order it sees it."""

    def init(self, scope: str | None) -> None:
        """A list of `scope` begins (the first, or a re-list after 410 Gone or a failure)."""

    def init_page(self, scope: str | None, objects: list[dict[str, Any]]) -> None:
        """One page of that list."""

    def init_done(self, scope: str | None) -> None:
        """The list is complete: these are all the objects of `scope`."""

    def apply(self, obj: dict[str, Any]) -> None:
        """A watch event that adds or changes `obj`."""

    def delete(self, obj: dict[str, Any]) -> None:
        """A watch event that deletes `obj` (its last state)."""


class _Backoff:
    """client-go's reflector backoff: 0.8 s doubling to 30 s, full jitter, reset after 2 min
    without failures."""

    def __init__(self, initial: float = 0.8, cap: float = 30.0, reset_after: float = 120.0):
        self.initial, self.cap, self.reset_after = initial, cap, reset_after
        self.current = initial
        self.last_failure = 0.0

    def next(self) -> float:
        now = clock.monotonic()
        if now - self.last_failure > self.reset_after:
            self.current = self.initial
        self.last_failure = now
        delay = self.current * (1 + random.random())
        self.current = min(self.current * 2, self.cap)
        return min(delay, self.cap)


class Watcher:
    """Lists and watches `kind` in `scope` (a namespace; None: all of them).

    `on_restart(why)` hears of every restart: `expired` (410 Gone), `closed` (the server
    ended a watch long before its timeout) or the failure's type name. `resource_version`
    is where the next watch resumes from.
    """

    def __init__(
        self,
        client: Client,
        kind: KindLike,
        scope: str | None,
        *,
        name: str,
        label_selector: str | None,
        field_selector: str | None,
        page_size: int,
        metadata_only: bool,
        timeout: tuple[int, int],
        on_restart: Callable[[str], None],
    ) -> None:
        self.client = client
        self.kind = _untyped(kind)
        self.scope = scope
        self.name = name
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.metadata_only = metadata_only
        self.timeout = timeout
        self.on_restart = on_restart
        self.resource_version = ""

    async def run(self, sink: EventSink) -> None:
        """List and watch until cancelled, handing everything to `sink`."""
        backoff = _Backoff()
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list(sink)
                    need_list = False
                await self._watch(sink)
            except Gone:
                # The history we would resume from is gone: list again, at once.
                need_list = True
                self.on_restart("expired")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.on_restart(type(exc).__name__)
                delay = backoff.next()
                log.warning(
                    "%s: %s failed (%s); retrying in %.1fs",
                    self.name,
                    "list" if need_list else "watch",
                    exc,
                    delay,
                )
                await clock.sleep(delay)

    async def _list(self, sink: EventSink) -> None:
        scope = self.scope
        sink.init(scope)
        rv = ""
        async for page in self.client.list_pages(
            self.kind,
            namespace=scope,
            all_namespaces=scope is None,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.page_size,
            metadata_only=self.metadata_only,
        ):
            rv = rv or page.resource_version
            sink.init_page(scope, page.items)
        sink.init_done(scope)
        self.resource_version = rv

    async def _watch(self, sink: EventSink) -> None:
        low, high = self.timeout
        timeout = random.randint(low, high)
        # The machine's time: the server ends a watch by its own (real) timeout.
        started = time.monotonic()
        async for event in self.client.watch(
            self.kind,
            namespace=self.scope,
            all_namespaces=self.scope is None,
            resource_version=self.resource_version,
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
                    self.resource_version = rv
                continue
            if event.type == DELETED:
                sink.delete(event.object)
            else:
                sink.apply(event.object)
            if rv:
                self.resource_version = rv
        if time.monotonic() - started < timeout - 1:
            # The server closed the stream long before its timeout: count it, then resume.
            self.on_restart("closed")


def _untyped(kind: KindLike) -> KindLike:
    """Informers keep dicts: address a typed class by its kind string."""
    info = getattr(kind, "__kubeforge__", None)
    return str(info.gvk) if info is not None else kind
