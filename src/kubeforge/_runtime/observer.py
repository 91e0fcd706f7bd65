"""What a running manager does, told as it happens to whoever observes it.

A manager's controllers, cached client and API client report here, one record per thing
done: an informer event a controller's watch received (`Delivered`, with the requests it
queued), each reconcile as it starts (`ReconcileStarted`, with what queued it) and ends
(`ReconcileFinished`, with its result or error), and each read (`Read`, from the cache or the
API server) and write (`Write`, with the resourceVersion the server answered and the field
manager) a reconcile makes. Reads and writes name the reconcile they belong to (its
`ReconcileContext`), so a reader can put every step of a run on one timeline.

`Manager.add_observer(fn)` has `fn(record)` called, on the manager's event loop (or, for a
plain `def` reconciler's cached reads, in its worker thread), for every record from then on.
With no observer the places that report do no work beyond one truth test; the metrics are
counted apart from this and are unchanged. An observer must return quickly and must not
modify what it is given; one that raises is logged and the others are still told. (Records
are not frozen all the same: one is made for every event, reconcile, read and write while
someone observes, and a frozen dataclass takes several times as long to make.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import orjson

from kubeforge._runtime.logs import ReconcileContext
from kubeforge._runtime.reconcile import Request

__all__ = [
    "Delivered",
    "Observer",
    "Observers",
    "Read",
    "ReconcileFinished",
    "ReconcileStarted",
    "Record",
    "Trigger",
    "Write",
    "object_version",
]

log = logging.getLogger("kubeforge.observer")


@dataclass(slots=True)
class Trigger:
    """Why a request was queued: `cause` is `event` (an informer event, of the object
    named), `requeue_after`, `requeue` or `retry` (the previous reconcile's result or
    error), `reconcile_all` or `generic` (a source of generic events)."""

    cause: str
    kind: str = ""
    namespace: str = ""
    name: str = ""
    resource_version: str = ""
    type: str = ""


@dataclass(slots=True)
class Delivered:
    """An informer event one controller's watch received: `type` is ADDED, MODIFIED or
    DELETED (a resync is a MODIFIED with the same resourceVersion), `requests` what its
    handler queued after the predicates (none: filtered out). `obj` is the object as the
    informer delivered it (read it, never change it)."""

    controller: str
    kind: str
    type: str
    namespace: str
    name: str
    resource_version: str
    requests: tuple[Request, ...]
    initial: bool
    obj: Mapping[str, Any]


@dataclass(slots=True)
class ReconcileStarted:
    """A worker took `request` and calls the reconciler; `triggers` are what queued it
    since it was last taken (the latest few)."""

    context: ReconcileContext
    request: Request
    triggers: tuple[Trigger, ...]


@dataclass(slots=True)
class ReconcileFinished:
    """A reconcile ended: `outcome` is one of success, requeue, requeue_after (then
    `requeue_after` seconds), error, terminal, panic or timeout; `error` the exception's
    text when it failed."""

    context: ReconcileContext
    request: Request
    outcome: str
    requeue_after: float
    error: str | None
    seconds: float


@dataclass(slots=True)
class Read:
    """A read: `source` is `cache` or `api`, `verb` `get` or `list`; `objects` the
    (namespace, name, resourceVersion) of what it returned (none for a NotFound, whose text
    is in `error`). `reconcile` is the reconcile that read, if any."""

    reconcile: ReconcileContext | None
    source: str
    verb: str
    kind: str
    namespace: str
    name: str
    objects: tuple[tuple[str, str, str], ...]
    error: str | None = None


class Write:
    """A write to the API server: `verb` as the client names it (create, update,
    update_status, patch, patch_status, apply, delete ...), the object (its name as the
    server gave it, for a generated one), the `resource_version` the server answered (empty
    on error, or when a delete removed it), the `field_manager`, the HTTP `code` and, on
    failure, the error's text. `obj` is the object the server returned (None on error),
    decoded from the answer's bytes (`answer=`) when it is first read."""

    __slots__ = (
        "_answer",
        "_obj",
        "code",
        "error",
        "field_manager",
        "kind",
        "name",
        "namespace",
        "reconcile",
        "resource_version",
        "verb",
    )

    def __init__(
        self,
        reconcile: ReconcileContext | None,
        verb: str,
        kind: str,
        namespace: str,
        name: str,
        resource_version: str,
        field_manager: str,
        code: int,
        error: str | None = None,
        obj: Mapping[str, Any] | None = None,
        *,
        answer: bytes | None = None,
    ) -> None:
        self.reconcile = reconcile
        self.verb = verb
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.resource_version = resource_version
        self.field_manager = field_manager
        self.code = code
        self.error = error
        self._obj = obj
        # Most observers never read the object: it is decoded only for one that does.
        self._answer = answer if obj is None else None

    @property
    def obj(self) -> Mapping[str, Any] | None:
        """The object the server returned (None on error); read it, never change it."""
        if self._answer is not None:
            self._obj = orjson.loads(self._answer)
            self._answer = None
        return self._obj

    def __repr__(self) -> str:
        return (
            f"Write(verb={self.verb!r}, kind={self.kind!r}, namespace={self.namespace!r}, "
            f"name={self.name!r}, resource_version={self.resource_version!r}, "
            f"code={self.code}, error={self.error!r})"
        )


Record: TypeAlias = Delivered | ReconcileStarted | ReconcileFinished | Read | Write
Observer = Callable[[Record], None]
"""Told about each record as it happens."""


def object_version(obj: Any) -> tuple[str, str, str]:
    """(namespace, name, resourceVersion) of an object, a dict or a typed one."""
    # A dict first, then a typed object (its metadata an attribute), and only then any
    # other Mapping: the Mapping check is the slow one, and typed objects are read often.
    if not isinstance(obj, dict):
        typed = getattr(obj, "metadata", None)
        if (typed is not None and not isinstance(typed, dict)) or not isinstance(obj, Mapping):
            return (
                str(getattr(typed, "namespace", None) or ""),
                str(getattr(typed, "name", None) or ""),
                str(getattr(typed, "resource_version", None) or ""),
            )
    meta = obj.get("metadata") or {}
    return (
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        str(meta.get("resourceVersion") or ""),
    )


class Observers:
    """The observers of one manager; false while there are none, so that a place that
    reports can skip building its record."""

    __slots__ = ("_changed", "_observers")

    def __init__(self, changed: Callable[[bool], None] | None = None) -> None:
        self._observers: tuple[Observer, ...] = ()
        # Told whether anyone observes, when that changes (the manager hooks its client).
        self._changed = changed

    def __bool__(self) -> bool:
        return bool(self._observers)

    def add(self, observer: Observer) -> None:
        """Tell `observer` about every record from now on."""
        was = bool(self._observers)
        self._observers = (*self._observers, observer)
        if not was and self._changed is not None:
            self._changed(True)

    def remove(self, observer: Observer) -> None:
        """Stop telling `observer` (nothing if it was not observing)."""
        if observer not in self._observers:
            return
        self._observers = tuple(o for o in self._observers if o != observer)
        if not self._observers and self._changed is not None:
            self._changed(False)

    def emit(self, record: Record) -> None:
        """Tell every observer about `record`."""
        for observer in self._observers:
            try:
                observer(record)
            except Exception:
                log.exception("an observer failed on %s", type(record).__name__)
