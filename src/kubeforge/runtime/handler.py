"""From events to requests: which objects to reconcile when something changes.

`EnqueueRequestForObject` reconciles the object itself (`for_`), `EnqueueRequestForOwner`
its owner of a given kind (`owns`), and `EnqueueRequestsFromMapFunc` whatever a function
says (`watches`). Events from the initial list and resyncs go in at low priority so live
changes are handled first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from kubeforge.api.meta import GroupVersionKind
from kubeforge.runtime.reconcile import Request
from kubeforge.runtime.workqueue import LOW_PRIORITY

__all__ = [
    "EnqueueRequestForObject",
    "EnqueueRequestForOwner",
    "EnqueueRequestsFromMapFunc",
    "EventHandler",
    "Queue",
]

Obj = Mapping[str, Any]


class Queue(Protocol):
    def add(self, item: Request, priority: int = 0) -> None: ...


class EventHandler(Protocol):
    """Turns one informer event into requests on the controller's queue."""

    def create(self, obj: Obj, queue: Queue, initial: bool) -> None: ...
    def update(self, old: Obj, new: Obj, queue: Queue) -> None: ...
    def delete(self, obj: Obj, queue: Queue) -> None: ...


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
    """Reconcile whatever `fn(obj)` returns (Requests, or (namespace, name) pairs)."""

    def __init__(
        self,
        fn: Callable[[Any], Iterable[Request | tuple[str, str]] | None],
        convert: Callable[[Obj], Any] | None = None,
    ) -> None:
        self.fn = fn
        self.convert = convert

    def requests(self, obj: Obj) -> Iterable[Request]:
        value = self.convert(obj) if self.convert is not None else obj
        out = []
        for item in self.fn(value) or ():
            out.append(item if isinstance(item, Request) else Request(item[0], item[1]))
        return out
