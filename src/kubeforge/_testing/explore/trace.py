"""What one run of a test did, as the managers it ran reported it (runtime observers).

A `Recorder` observes every manager the run starts and keeps each record as a small
JSON-ready step (`steps`): deliveries, reconciles, reads and writes, in order, with the
seconds since the run began and the manager's incarnation (a restart is a new one).

Perturbations and findings name things so that the same thing has the same name in every
run of the test: an object is `Kind/name` (a generated name is its prefix and `*`; the
test's own namespace, new in every run, is left out, and reads `<ns>` within a name); a write is
`controller:verb:Kind/name#n`, the n-th such write of the run; an object's versions are
numbered in the order the managers saw them (written, or delivered by a watch), so
`Kind/name#2` is its second version.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubeforge import clock
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.observer import (
    Delivered,
    Read,
    ReconcileFinished,
    ReconcileStarted,
    Record,
    Trigger,
    Write,
)
from kubeforge._runtime.timeline import Timeline

__all__ = ["ObjectKey", "Recorder", "Versions", "may_be_stale", "short_kind", "write_key"]

Step = dict[str, Any]
ObjectKey = tuple[str, str, str]
"""(short kind, namespace, name) of an object."""

# Entries a run's timeline keeps (what a finding's page shows).
TIMELINE_ENTRIES = 3000
# Writes that are bookkeeping of the runtime, not the operator's decisions.
_IGNORED_KINDS = frozenset({"Event", "Lease"})
# Outcomes of a reconcile that failed and is retried (a TerminalError is the reconciler's
# own decision to stop, and not one of them).
FAILED = frozenset({"error", "panic", "timeout"})


def short_kind(kind: str) -> str:
    """`apps/v1/Deployment` -> `Deployment`."""
    return kind.rpartition("/")[2]


def may_be_stale(reconcile: Mapping[str, Any] | None, obj: str, version: int) -> bool:
    """Whether a reconcile could have read an older version than `version` of `obj` from
    its cache: not when an event of that version (or a later one) queued it, since an
    informer's store holds what it delivers before its handlers hear of it."""
    for trigger in (reconcile or {}).get("triggers") or ():
        if trigger.get("object") == obj and int(trigger.get("version") or 0) >= version:
            return False
    return True


OUTSIDE_RECONCILE = "manager"
"""The controller a write made outside any reconcile is named for: a controller written by
hand on the manager's informers and client (no builder, no reconcile to attribute it to), or
a runnable of the manager's."""


def write_key(controller: str, verb: str, obj: str) -> str:
    """How a write is named, without its ordinal."""
    return f"{controller}:{verb}:{obj}"


@dataclass
class Versions:
    """One object's versions as the managers saw them, oldest first: (resourceVersion,
    the object, or None for its deletion), and which of them a manager wrote itself."""

    seen: list[tuple[str, Mapping[str, Any] | None]] = field(default_factory=list)
    written: set[str] = field(default_factory=set)

    def ordinal(self, version: str) -> int:
        """The number of `version` (from 1); one past the last for a version not seen yet."""
        for index, (known, _) in enumerate(self.seen):
            if known == version:
                return index + 1
        return len(self.seen) + 1

    def add(self, version: str, obj: Mapping[str, Any] | None, *, written: bool) -> None:
        """Note a version (a deletion is `<resourceVersion>-deleted`, with no object)."""
        if written:
            self.written.add(version)
        if any(known == version for known, _ in self.seen):
            return
        self.seen.append((version, obj))
        # Versions are increasing numbers on every Kubernetes store; a late delivery of an
        # older one goes in its place, and a deletion after the state it deleted.
        self.seen.sort(key=lambda pair: _order(pair[0]))

    def before(self, version: str) -> tuple[bool, Mapping[str, Any] | None]:
        """The version before `version`: (whether the object existed, the object)."""
        index = self.ordinal(version) - 2
        if index < 0:
            return False, None
        obj = self.seen[index][1]
        return obj is not None, obj


def _order(version: str) -> tuple[int, bool]:
    number, _, deleted = version.partition("-")
    try:
        return int(number), bool(deleted)
    except ValueError:
        return 0, bool(deleted)


class Recorder:
    """Observes the managers of one run and keeps what they did."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.started = clock.monotonic()
        self.steps: list[Step] = []
        self.incarnation = 0
        self.versions: dict[ObjectKey, Versions] = {}
        self.in_flight = 0
        # Real time: how long the managers have been quiet is waited for as I/O is.
        self.last_activity = time.monotonic()
        self.writes = Counter[str]()
        # The reconcile steps by reconcile id.
        self.reconciles: dict[str, Step] = {}
        # Generated names seen, with how they are shown (`prefix*`).
        self.generated: dict[str, str] = {}
        # Told about each step as it is kept (perturbations that wait for a point).
        self.listeners: list[Callable[[Step], None]] = []
        # The same records as the console's timeline, for a finding's HTML page.
        self.timeline = Timeline(TIMELINE_ENTRIES)
        self._lock = threading.Lock()

    # naming ---------------------------------------------------------------------------------

    def name_of(self, namespace: str, name: str, obj: Mapping[str, Any] | None = None) -> str:
        """An object's name as perturbations and findings show it."""
        if obj is not None:
            prefix = (obj.get("metadata") or {}).get("generateName")
            if prefix and name.startswith(prefix) and name != prefix:
                self.generated.setdefault(name, f"{prefix}*")
        shown = self.generated.get(name, name).replace(self.namespace, "<ns>")
        if namespace and namespace != self.namespace:
            return f"{namespace}/{shown}"
        return shown

    def object_name(self, kind: str, namespace: str, name: str, obj: Any = None) -> str:
        return f"{short_kind(kind)}/{self.name_of(namespace, name, obj)}"

    # observing ------------------------------------------------------------------------------

    def attach(self, manager: Manager) -> None:
        """Observe `manager` (a new incarnation, a lane set of its own on the timeline)."""
        self.incarnation += 1
        manager.add_observer(self.observe)
        manager.add_observer(self.timeline.observer(f"manager #{self.incarnation}"))

    def observe(self, record: Record) -> None:
        with self._lock:
            step = self._step(record)
            if step is None:
                return
            step["t"] = round(clock.monotonic() - self.started, 4)
            step["incarnation"] = self.incarnation
            self.last_activity = time.monotonic()
            self.steps.append(step)
        for listener in list(self.listeners):
            listener(step)

    def _step(self, record: Record) -> Step | None:
        if isinstance(record, ReconcileStarted):
            self.in_flight += 1
            context = record.context
            step = self.reconciles[context.reconcile_id] = {
                "type": "reconcile",
                "id": context.reconcile_id,
                "controller": context.controller,
                "kind": context.kind,
                "request": self.name_of(record.request.namespace, record.request.name),
                "triggers": [self._trigger(t) for t in record.triggers],
            }
            return step
        if isinstance(record, ReconcileFinished):
            self.in_flight -= 1
            return {
                "type": "reconciled",
                "id": record.context.reconcile_id,
                "controller": record.context.controller,
                "request": self.name_of(record.request.namespace, record.request.name),
                "outcome": record.outcome,
                "requeue_after": record.requeue_after,
                "error": record.error,
            }
        if isinstance(record, Delivered):
            key = (short_kind(record.kind), record.namespace, record.name)
            versions = self.versions.setdefault(key, Versions())
            deleted = record.type == "DELETED"
            obj = None if deleted else record.obj
            version = record.resource_version or "0"
            if deleted:
                version = f"{version}-deleted"
            versions.add(version, obj, written=False)
            return {
                "type": "delivered",
                "controller": record.controller,
                "event": record.type,
                "object": self.object_name(record.kind, record.namespace, record.name, obj),
                "version": versions.ordinal(version),
                "rv": record.resource_version,
                "queued": [self.name_of(r.namespace, r.name) for r in record.requests],
                "initial": record.initial,
            }
        if isinstance(record, Read):
            if record.reconcile is None:
                return None
            kind = short_kind(record.kind)
            objects = []
            for namespace, name, version in record.objects:
                versions = self.versions.setdefault((kind, namespace, name), Versions())
                objects.append(
                    {
                        "object": f"{kind}/{self.name_of(namespace, name)}",
                        "version": versions.ordinal(version),
                        "rv": version,
                    }
                )
            return {
                "type": "read",
                "id": record.reconcile.reconcile_id,
                "controller": record.reconcile.controller,
                "source": record.source,
                "verb": record.verb,
                "target": f"{kind}/{self.name_of(record.namespace, record.name)}"
                if record.name
                else f"{kind} list",
                "objects": objects,
                "error": record.error,
            }
        return self._write(record)

    def _trigger(self, trigger: Trigger) -> Step:
        if trigger.cause != "event":
            return {"cause": trigger.cause}
        kind = short_kind(trigger.kind)
        versions = self.versions.get((kind, trigger.namespace, trigger.name), Versions())
        version = trigger.resource_version or "0"
        if trigger.type == "DELETED":
            version = f"{version}-deleted"
        return {
            "cause": "event",
            "event": trigger.type,
            "object": self.object_name(trigger.kind, trigger.namespace, trigger.name),
            "version": versions.ordinal(version),
        }

    def _write(self, record: Write) -> Step | None:
        kind = short_kind(record.kind)
        if kind in _IGNORED_KINDS:
            return None
        context = record.reconcile
        controller = context.controller if context is not None else OUTSIDE_RECONCILE
        shown = self.object_name(record.kind, record.namespace, record.name, record.obj)
        key = write_key(controller, record.verb, shown)
        self.writes[key] += 1
        ordinal = self.writes[key]
        version = 0
        changed = record.error is None
        if record.error is None:
            versions = self.versions.setdefault((kind, record.namespace, record.name), Versions())
            if record.obj is not None and record.resource_version:
                # A write answered with a version already seen changed nothing (an apply
                # or a patch that found everything as it asked).
                changed = versions.ordinal(record.resource_version) > len(versions.seen)
                versions.add(record.resource_version, record.obj, written=True)
                version = versions.ordinal(record.resource_version)
        return {
            "type": "write",
            "digest": _digest(record),
            "id": context.reconcile_id if context is not None else "",
            "controller": controller,
            "request": self.name_of(context.namespace, context.name) if context else "",
            "verb": record.verb,
            "object": shown,
            "point": f"{key}#{ordinal}",
            "rv": record.resource_version,
            "version": version,
            "field_manager": record.field_manager,
            "code": record.code,
            "error": record.error,
            "changed": changed,
        }

    # reading ----------------------------------------------------------------------------------

    def quiet_for(self) -> float:
        """Seconds since the managers last did anything."""
        return time.monotonic() - self.last_activity

    def step_index(self) -> int:
        return len(self.steps)

    def note(self, what: str, **details: Any) -> None:
        """Keep a step of the run's own (a perturbation done, a phase begun)."""
        self.observe_note({"type": "note", "what": what, **details})

    def observe_note(self, step: Step) -> None:
        with self._lock:
            step["t"] = round(clock.monotonic() - self.started, 4)
            step["incarnation"] = self.incarnation
            self.steps.append(step)


def _digest(record: Write) -> str:
    """What a write left the part of the object it wrote as (the status for a status write,
    else the spec and what metadata a controller sets): two writes with one digest left the
    object alike, whatever the others changed meanwhile."""
    obj = record.obj or {}
    if record.verb.endswith("_status"):
        part: Any = obj.get("status")
    else:
        meta = obj.get("metadata") or {}
        kept = ("labels", "annotations", "finalizers", "ownerReferences", "deletionTimestamp")
        part = [
            {k: meta.get(k) for k in kept},
            {k: v for k, v in obj.items() if k not in _NOT_DECLARED},
        ]
    text = orjson.dumps([record.verb, part], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(text).hexdigest()[:16]


# Parts of an object a write does not declare.
_NOT_DECLARED = frozenset({"metadata", "status", "apiVersion", "kind"})


class ErrorLog(logging.Handler):
    """Errors logged by kubeforge's components during a run, other than the reconcile
    failures the trace holds (which carry a reconcile id)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.found: list[str] = []
        self.muted = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.muted or getattr(record, "reconcile_id", None):
            return
        if not record.name.startswith("kubeforge"):
            return
        self.found.append(f"{record.name}: {record.getMessage()}")
