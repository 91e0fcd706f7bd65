"""From events to requests: which objects to reconcile when something changes.

`EnqueueRequestForObject` reconciles the object itself (`for_`), `EnqueueRequestForOwner`
its owner of a given kind (`owns`), and `EnqueueRequestsFromMapFunc` whatever a function
says (`watches`). Events from the initial list and resyncs go in at low priority so live
changes are handled first. Generic events (from sources outside the cluster: a `Channel`,
any async stream) go in at normal priority.

A map function may be `async def` (to read the cache, say): its requests are added when it
returns, and an error it raises is logged with the object it was given.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

from kubeforge._api.meta import GroupVersionKind
from kubeforge._runtime.reconcile import Request
from kubeforge._runtime.workqueue import LOW_PRIORITY

__all__ = [
    "EnqueueRequestForObject",
    "EnqueueRequestForOwner",
    "EnqueueRequestsFromMapFunc",
    "EventHandler",
    "MapFunc",
    "Queue",
    "handle_generic",
]

log = logging.getLogger("kubeforge.handler")

Obj = Mapping[str, Any]
Requests = Iterable[Request | tuple[str, str]] | None
MapFunc = Callable[[Any], Requests | Awaitable[Requests]]
"""Object -> the requests it maps to (Requests or (namespace, name) pairs); sync or async."""


class Queue(Protocol):
    """The controller's queue as a handler sees it: add now, or after a delay (as a
    controller-runtime handler may call its rate-limiting queue's Add and AddAfter)."""

    def add(self, item: Request, priority: int = 0) -> None: ...
    def add_after(self, item: Request, delay_seconds: float, priority: int = 0) -> None: ...


class EventHandler(Protocol):
    """Turns one informer event into requests on the controller's queue."""

    def create(self, obj: Obj, queue: Queue, initial: bool) -> None: ...
    def update(self, old: Obj, new: Obj, queue: Queue) -> None: ...
    def delete(self, obj: Obj, queue: Queue) -> None: ...


def handle_generic(handler: EventHandler, obj: Obj, queue: Queue) -> None:
    """A generic event through `handler`: its `generic(obj, queue)` when it has one, else as
    the creation of `obj` (handlers written before generic events existed)."""
    generic = getattr(handler, "generic", None)
    if callable(generic):
        generic(obj, queue)
    else:
        handler.create(obj, queue, False)


def _request(obj: Obj) -> Request:
    meta = obj.get("metadata") or {}
    return Request(meta.get("namespace") or "", meta.get("name") or "")


def _update_priority(old: Obj, new: Obj) -> int:
    # An update with an unchanged resourceVersion is a resync.
    old_rv = (old.get("metadata") or {}).get("resourceVersion")
    new_rv = (new.get("metadata") or {}).get("resourceVersion")
    return LOW_PRIORITY if old_rv == new_rv else 0


class _Mapping:
    """Shared event plumbing: subclasses say which requests an object maps to."""

    def requests(self, obj: Obj) -> Iterable[Request]:
        raise NotImplementedError

    def create(self, obj: Obj, queue: Queue, initial: bool) -> None:
        priority = LOW_PRIORITY if initial else 0
        for request in self.requests(obj):
            queue.add(request, priority)

    def update(self, old: Obj, new: Obj, queue: Queue) -> None:
        priority = _update_priority(old, new)
        seen = set()
        for obj in (old, new):
            for request in self.requests(obj):
                if request not in seen:
                    seen.add(request)
                    queue.add(request, priority)

    def delete(self, obj: Obj, queue: Queue) -> None:
        for request in self.requests(obj):
            queue.add(request, 0)

    def generic(self, obj: Obj, queue: Queue) -> None:
        for request in self.requests(obj):
            queue.add(request, 0)


class EnqueueRequestForObject(_Mapping):
    """Reconcile the object the event is about."""

    def requests(self, obj: Obj) -> Iterable[Request]:
        return (_request(obj),)

    def update(self, old: Obj, new: Obj, queue: Queue) -> None:
        queue.add(_request(new), _update_priority(old, new))


class EnqueueRequestForOwner(_Mapping):
    """Reconcile the owner of kind `owner` named in the object's ownerReferences.

    Only the controller owner by default (controller-runtime's OnlyControllerOwner);
    `only_controller=False` enqueues every owner of that kind. Both the old and the new
    owners are enqueued on updates, so an owner that lost a child hears about it.
    """

    def __init__(self, owner: GroupVersionKind, *, only_controller: bool = True) -> None:
        self.group = owner.group
        self.kind = owner.kind
        self.only_controller = only_controller
        self.owner_namespaced = True

    def requests(self, obj: Obj) -> Iterable[Request]:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or ""
        out = []
        for ref in meta.get("ownerReferences") or ():
            if self.only_controller and not ref.get("controller"):
                continue
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            if ref.get("kind") != self.kind or group != self.group:
                continue
            out.append(Request(namespace if self.owner_namespaced else "", ref.get("name", "")))
        return out


class EnqueueRequestsFromMapFunc(_Mapping):
    """Reconcile whatever `fn(obj)` returns (Requests, or (namespace, name) pairs).

    `fn` may be a coroutine function; `convert` turns the event's dict into what `fn`
    receives (a typed object).
    """

    def __init__(self, fn: MapFunc, convert: Callable[[Obj], Any] | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"a map function must be callable, not {type(fn).__name__}")
        self.fn = fn
        self.convert = convert
        self._tasks: set[asyncio.Task[None]] = set()

    @staticmethod
    def _requests(found: Requests) -> list[Request]:
        out = []
        for item in found or ():
            out.append(item if isinstance(item, Request) else Request(item[0], item[1]))
        return out

    def requests(self, obj: Obj) -> Iterable[Request]:
        value = self.convert(obj) if self.convert is not None else obj
        found = self.fn(value)
        if inspect.isawaitable(found):
            _close(found)
            raise TypeError("an async map function's requests come from its event handlers")
        return self._requests(found)

    def _map(self, obj: Obj, queue: Queue, priority: int) -> None:
        value = self.convert(obj) if self.convert is not None else obj
        found = self.fn(value)
        if type(found) is list or not inspect.isawaitable(found):
            for request in self._requests(found):
                queue.add(request, priority)
            return
        task = asyncio.get_running_loop().create_task(self._later(found, obj, queue, priority))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _later(
        self, pending: Awaitable[Requests], obj: Obj, queue: Queue, priority: int
    ) -> None:
        try:
            found = await pending
            requests = self._requests(found)
        except Exception:
            meta = obj.get("metadata") or {}
            where = "/".join(p for p in (meta.get("namespace"), meta.get("name")) if p)
            log.exception("map function %s failed for %s", _name(self.fn), where)
            return
        for request in requests:
            queue.add(request, priority)

    def create(self, obj: Obj, queue: Queue, initial: bool) -> None:
        self._map(obj, queue, LOW_PRIORITY if initial else 0)

    def update(self, old: Obj, new: Obj, queue: Queue) -> None:
        # Both the old and the new object's requests: an object that stopped mapping to a
        # request still brings it back once. The queue folds duplicates.
        priority = _update_priority(old, new)
        self._map(old, queue, priority)
        self._map(new, queue, priority)

    def delete(self, obj: Obj, queue: Queue) -> None:
        self._map(obj, queue, 0)

    def generic(self, obj: Obj, queue: Queue) -> None:
        self._map(obj, queue, 0)


def _close(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()


def _name(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or repr(fn))
