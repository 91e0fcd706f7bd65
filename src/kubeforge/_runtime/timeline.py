"""A timeline of what controllers did, built from their managers' observer records.

Each reconcile is one entry on its controller's lane: what queued it (the watch event of
which object and resourceVersion, or a requeue, a retry, a timer), how long it waited in the
queue, how long it ran, how it ended, and the reads and writes it made. Changes the API
server's watch reports (`Change`, from whoever wrote them: kubectl, another process, a
controller nobody observes) are entries of their own. A reconcile's trigger is linked to
what caused it: the write of an observed reconcile that produced that resourceVersion, or
else the change, so a reader can follow arrows from a write to the reconciles it woke.

Objects reconciled again and again with writes (hot loops) and writes refused with 409
Conflict are marked. The history is bounded: past `capacity` entries the oldest go.

Entries are JSON-ready dicts keyed by a sequence number (`seq`); a reconcile's entry grows
as its reads, writes and end arrive, and listeners are told the seq of each entry added or
changed. The timeline is thread-safe: a plain `def` reconciler's cached reads are reported
from its worker thread.

What the timeline keeps is made of tuples, strings and numbers (a reconcile's triggers,
reads and writes are tuples, grown by replacing them), never of the records themselves: the
garbage collector stops following such objects after it first sees them, where thousands of
kept records and lists would each be followed again at every full collection.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from kubeforge import clock
from kubeforge._runtime.observer import (
    Delivered,
    Observer,
    Read,
    ReconcileFinished,
    ReconcileStarted,
    Record,
    Write,
)

__all__ = [
    "DEFAULT_CAPACITY",
    "HOT_LOOP_RECONCILES",
    "HOT_LOOP_SECONDS",
    "Change",
    "Entry",
    "Timeline",
    "group_kind",
    "latest_manager",
]

Entry = dict[str, Any]

DEFAULT_CAPACITY = 5000
# A hot loop: this many reconciles of one object by one controller, each of which wrote
# something, within this many seconds.
HOT_LOOP_RECONCILES = 8
HOT_LOOP_SECONDS = 10.0
# Reads and writes kept per reconcile (a reconcile listing thousands of objects keeps the
# first ones and a count).
_STEPS_PER_RECONCILE = 50
# How many unresolved triggers wait for the change that explains them.
_PENDING_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class Change:
    """A change the API server's watch reported: `type` ADDED, MODIFIED or DELETED, the
    object's `kind` (`apps/v1/Deployment`), namespace, name and new resourceVersion, and the
    field `manager` of its latest managedFields entry (who wrote it, as far as the server
    says)."""

    type: str
    kind: str
    namespace: str
    name: str
    resource_version: str
    manager: str = ""


def group_kind(kind: str) -> str:
    """`apps/v1/Deployment` -> `apps/Deployment`; `v1/Pod` -> `Pod`: a kind whatever the
    version it is read in."""
    parts = kind.split("/")
    if len(parts) >= 3:
        return f"{parts[0]}/{parts[-1]}"
    return parts[-1]


def latest_manager(meta: Mapping[str, Any]) -> str:
    """The field manager of an object's newest managedFields entry ('' without any)."""
    entries = meta.get("managedFields") or ()
    best = ""
    newest = ""
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        when = str(entry.get("time") or "")
        if when >= newest:
            newest, best = when, str(entry.get("manager") or "")
    return best


ObjectVersion = tuple[str, str, str, str]
"""(group/kind, namespace, name, resourceVersion)."""


class Timeline:
    """The bounded timeline of the managers it observes and the changes it is told of."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("a timeline keeps at least one entry")
        self.capacity = capacity
        self.started = clock.monotonic()
        self.started_at = clock.now().astimezone(UTC).isoformat()
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        self._seq = 0
        self._lock = threading.RLock()
        self._listeners: list[Callable[[int], None]] = []
        # reconcile id -> seq of its entry (while it is kept).
        self._reconciles: dict[str, int] = {}
        # What produced each version of an object: a reconcile's write (seq, index of the
        # write) or a change (seq, -1).
        self._producers: dict[ObjectVersion, tuple[int, int]] = {}
        # Triggers not yet explained: version -> ((reconcile seq, trigger index), ...).
        self._pending: OrderedDict[ObjectVersion, tuple[tuple[int, int], ...]] = OrderedDict()
        # (manager, controller, namespace, name) -> when the request was first queued since
        # it was last taken.
        self._queued: dict[tuple[str, str, str, str], float] = {}
        # (manager, controller, namespace, name) -> times of its recent reconciles that wrote.
        self._writing: dict[tuple[str, str, str, str], tuple[float, ...]] = {}
        self.hot: set[tuple[str, str, str, str]] = set()
        self.conflicts = 0

    # reading --------------------------------------------------------------------------------

    def now(self) -> float:
        """Seconds since the timeline began."""
        return clock.monotonic() - self.started

    def subscribe(self, listener: Callable[[int], None]) -> None:
        """Call `listener(seq)` for every entry added or changed (under the timeline's lock:
        it must only note the seq)."""
        with self._lock:
            self._listeners.append(listener)

    def unsubscribe(self, listener: Callable[[int], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def entries(self, seqs: Iterable[int] | None = None) -> list[Entry]:
        """Copies of the entries kept (or of those of `seqs` still kept), oldest first."""
        with self._lock:
            if seqs is None:
                chosen = list(self._entries.values())
            else:
                chosen = [e for s in sorted(set(seqs)) if (e := self._entries.get(s)) is not None]
            return [_copy(entry) for entry in chosen]

    def __len__(self) -> int:
        return len(self._entries)

    def document(self) -> dict[str, Any]:
        """The whole timeline as one JSON-ready document."""
        with self._lock:
            return {
                "startedAt": self.started_at,
                "now": self.now(),
                "capacity": self.capacity,
                "entries": self.entries(),
            }

    # recording ------------------------------------------------------------------------------

    def observer(self, manager: str = "") -> Observer:
        """An observer for `Manager.add_observer` that records that manager's records
        (`manager` names it on the timeline when several are observed)."""

        recorders, lock = self._RECORDERS, self._lock

        def observe(record: Record) -> None:
            with lock:
                recorders[type(record)](self, record, manager)

        return observe

    def record(self, record: Record, manager: str = "") -> None:
        """Record one observer record of `manager`."""
        with self._lock:
            self._RECORDERS[type(record)](self, record, manager)

    def change(self, change: Change) -> None:
        """Record a change the API server's watch reported."""
        with self._lock:
            key = _version(change.kind, change.namespace, change.name, change.resource_version)
            produced = self._producers.get(key)
            if produced is not None and produced[1] >= 0 and produced[0] in self._entries:
                # An observed reconcile's write: the change is that write, already shown.
                return
            seq = self._add(
                {
                    "type": "change",
                    "t": self.now(),
                    "event": change.type,
                    "kind": change.kind,
                    "namespace": change.namespace,
                    "name": change.name,
                    "rv": change.resource_version,
                    "manager": change.manager,
                }
            )
            self._produced(key, (seq, -1))

    # the records ----------------------------------------------------------------------------

    def _delivered(self, record: Delivered, manager: str) -> None:
        if record.initial:
            return
        now = clock.monotonic() - self.started
        for request in record.requests:
            key = (manager, record.controller, request.namespace, request.name)
            self._queued.setdefault(key, now)

    def _started(self, record: ReconcileStarted, manager: str) -> None:
        context = record.context
        now = clock.monotonic() - self.started
        key = (manager, context.controller, record.request.namespace, record.request.name)
        queued = self._queued.pop(key, None)
        triggers: tuple[dict[str, Any], ...] = tuple(
            {
                "cause": "event",
                "kind": trigger.kind,
                "namespace": trigger.namespace,
                "name": trigger.name,
                "rv": trigger.resource_version,
                "event": trigger.type,
            }
            if trigger.cause == "event"
            else {"cause": trigger.cause}
            for trigger in record.triggers
        )
        entry: Entry = {
            "type": "reconcile",
            "id": context.reconcile_id,
            "manager": manager,
            "controller": context.controller,
            "kind": context.kind,
            "namespace": record.request.namespace,
            "name": record.request.name,
            "start": now,
            "queued": queued if queued is not None and queued <= now else None,
            "wait": round(now - queued, 6) if queued is not None and queued <= now else None,
            "end": None,
            "triggers": triggers,
            "reads": (),
            "writes": (),
            "more_steps": 0,
        }
        seq = self._add(entry)
        self._reconciles[context.reconcile_id] = seq
        for index, shown in enumerate(triggers):
            if shown["cause"] != "event":
                continue
            version = _version(shown["kind"], shown["namespace"], shown["name"], shown["rv"])
            produced = self._producers.get(version)
            if produced is not None and produced[0] in self._entries:
                shown["from"] = _link(produced)
            else:
                self._pending[version] = (*self._pending.get(version, ()), (seq, index))
                while len(self._pending) > _PENDING_LIMIT:
                    self._pending.popitem(last=False)

    def _finished(self, record: ReconcileFinished, manager: str) -> None:
        seq = self._reconciles.pop(record.context.reconcile_id, None)
        entry = self._entries.get(seq) if seq is not None else None
        if entry is None or seq is None:
            return
        now = clock.monotonic() - self.started
        entry.update(
            end=now,
            outcome=record.outcome,
            error=record.error,
            requeue_after=record.requeue_after or None,
            seconds=round(record.seconds, 6),
        )
        key = (manager, entry["controller"], entry["namespace"], entry["name"])
        if record.outcome == "requeue_after" and record.requeue_after:
            self._queued.setdefault(key, round(now + record.requeue_after, 6))
        elif record.outcome in ("requeue", "error", "panic", "timeout"):
            self._queued.setdefault(key, now)
        for write in entry["writes"]:
            if write["changed"]:
                self._note_writing(key, entry, now)
                break
        if self._listeners:
            self._touched(seq)

    def _note_writing(self, key: tuple[str, str, str, str], entry: Entry, now: float) -> None:
        if key not in self._writing and len(self._writing) >= 4 * self.capacity:
            self._writing.clear()
        times = (*self._writing.get(key, ())[1 - HOT_LOOP_RECONCILES :], now)
        self._writing[key] = times
        if len(times) == HOT_LOOP_RECONCILES and now - times[0] <= HOT_LOOP_SECONDS:
            entry["hot"] = True
            self.hot.add(key)

    def _read(self, record: Read, manager: str) -> None:
        if record.reconcile is None:
            return
        seq = self._reconciles.get(record.reconcile.reconcile_id)
        entry = self._entries.get(seq) if seq is not None else None
        if entry is None or seq is None:
            return
        reads = entry["reads"]
        if len(reads) + len(entry["writes"]) >= _STEPS_PER_RECONCILE:
            entry["more_steps"] += 1
            return
        # Kept as a tuple (what a reconcile reads is recorded often): made a JSON-ready dict
        # only when the entry is read.
        entry["reads"] = (
            *reads,
            (
                clock.monotonic() - self.started,
                record.source,
                record.verb,
                record.kind,
                record.namespace,
                record.name,
                record.objects,
                record.error,
            ),
        )
        if self._listeners:
            self._touched(seq)

    def _write(self, record: Write, manager: str) -> None:
        seq = self._reconciles.get(record.reconcile.reconcile_id) if record.reconcile else None
        entry = self._entries.get(seq) if seq is not None else None
        if entry is None or seq is None:
            # A write outside any reconcile (or of one no longer kept): the watch's change
            # shows it.
            return
        if record.code == 409:
            entry["conflict"] = True
            self.conflicts += 1
        key = _version(record.kind, record.namespace, record.name, record.resource_version)
        known = self._producers.get(key)
        changed = bool(record.resource_version) and record.error is None
        if known is not None and known[0] in self._entries and known[1] >= 0:
            # A write answered with a version already seen changed nothing.
            changed = False
        writes = entry["writes"]
        if len(entry["reads"]) + len(writes) >= _STEPS_PER_RECONCILE:
            entry["more_steps"] += 1
            index = -2
        else:
            index = len(writes)
            entry["writes"] = (
                *writes,
                {
                    "t": clock.monotonic() - self.started,
                    "verb": record.verb,
                    "kind": record.kind,
                    "namespace": record.namespace,
                    "name": record.name,
                    "rv": record.resource_version,
                    "manager": record.field_manager,
                    "code": record.code,
                    "error": record.error,
                    "changed": changed,
                },
            )
        if changed and index >= 0:
            if known is not None and known[1] == -1 and known[0] in self._entries:
                # The watch reported the change first: it was this write after all.
                self._entries[known[0]]["by"] = seq
                if self._listeners:
                    self._touched(known[0])
            self._produced(key, (seq, index))
        if self._listeners:
            self._touched(seq)

    # bookkeeping ----------------------------------------------------------------------------

    def _produced(self, key: ObjectVersion, producer: tuple[int, int]) -> None:
        current = self._producers.get(key)
        if current is None or current[1] < 0 or current[0] not in self._entries:
            self._producers[key] = producer
        if len(self._producers) > 4 * self.capacity:
            oldest = next(iter(self._entries), 0)
            self._producers = {k: v for k, v in self._producers.items() if v[0] >= oldest}
        for seq, index in self._pending.pop(key, ()):
            entry = self._entries.get(seq)
            if entry is not None and index < len(entry["triggers"]):
                entry["triggers"][index]["from"] = _link(self._producers[key])
                if self._listeners:
                    self._touched(seq)

    def _add(self, entry: Entry) -> int:
        self._seq += 1
        seq = self._seq
        entry["seq"] = seq
        self._entries[seq] = entry
        while len(self._entries) > self.capacity:
            _, dropped = self._entries.popitem(last=False)
            if dropped["type"] == "reconcile" and dropped.get("end") is None:
                self._reconciles.pop(dropped["id"], None)
        if self._listeners:
            self._touched(seq)
        return seq

    def _touched(self, seq: int) -> None:
        # Called only when someone listens (a page of the console is open).
        for listener in self._listeners:
            listener(seq)

    # Each record's handler, by the record's type: a record is told for everything a
    # controller does, and one look-up is cheaper than a chain of isinstance.
    _RECORDERS: dict[type, Callable[[Timeline, Any, str], None]] = {
        Delivered: _delivered,
        ReconcileStarted: _started,
        ReconcileFinished: _finished,
        Read: _read,
        Write: _write,
    }


# group_kind of each kind a version was keyed by (a process sees a handful of kinds).
_GROUP_KINDS: dict[str, str] = {}


def _version(kind: str, namespace: str, name: str, rv: str) -> ObjectVersion:
    grouped = _GROUP_KINDS.get(kind)
    if grouped is None:
        grouped = group_kind(kind)
        if len(_GROUP_KINDS) < 1000:
            _GROUP_KINDS[kind] = grouped
    return (grouped, namespace, name, rv)


def _link(producer: tuple[int, int]) -> dict[str, int]:
    seq, index = producer
    return {"change": seq} if index < 0 else {"reconcile": seq, "write": index}


# A read as a reconcile's entry keeps it: (time, source, verb, kind, namespace, name,
# (namespace, name, resourceVersion) of each object found, error).
ReadStep = tuple[float, str, str, str, str, str, tuple[tuple[str, str, str], ...], str | None]


def _read_step(step: ReadStep) -> dict[str, Any]:
    when, source, verb, kind, namespace, name, objects, error = step
    return {
        "t": round(when, 6),
        "source": source,
        "verb": verb,
        "kind": kind,
        "namespace": namespace,
        "name": name,
        "found": len(objects),
        "rvs": [version for _, _, version in objects[:5]],
        "error": error,
    }


_ROUNDED = ("t", "start", "end", "queued", "wait")


def _copy(entry: Entry) -> Entry:
    """The entry as JSON-ready data (times to the microsecond)."""
    out = dict(entry)
    for key in _ROUNDED:
        value = out.get(key)
        if isinstance(value, float):
            out[key] = round(value, 6)
    if entry["type"] == "reconcile":
        out["triggers"] = [dict(t) for t in entry["triggers"]]
        out["reads"] = [_read_step(step) for step in entry["reads"]]
        out["writes"] = [dict(w, t=round(w["t"], 6)) for w in entry["writes"]]
    return out
