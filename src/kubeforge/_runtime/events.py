"""Recording events.k8s.io/v1 Events about objects, with repeats folded into a series.

Like client-go's `tools/events` recorder (what controller-runtime's manager hands out): an
event is written to the regarding object's namespace (`default` for cluster-scoped
objects) under the name `<object name>.<hex timestamp>`. An identical event (same object,
type, reason, action, note and related object) seen again within six minutes of the last
one is not written anew: the Event already written gets `series.count` (2 on the first
repeat) and `series.lastObservedTime` instead. The object is identified by apiVersion,
kind, namespace, name and uid, so a repeat still folds after the object's resourceVersion
moved on.

`record` never blocks: called on the event loop it schedules the write; called from another
thread (a plain `def` reconciler's) it hands the write to the loop the recorder is bound to
(the manager binds the recorders it hands out when it starts). What `record` writes passes
first through client-go's event correlator (eventcorrelation.py): similar events (one
object, type and reason, different notes) are aggregated once ten have been seen, and each
object's events are rate limited, as the recorders of kube's controllers and
controller-runtime's are. `event` writes at once, uncorrelated.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from kubeforge import clock as process_clock
from kubeforge._api.machinery.timestamps import now_micro_time
from kubeforge._api.meta import KubeObject
from kubeforge._client.errors import NotFound
from kubeforge._client.protocols import Writer
from kubeforge._runtime.eventcorrelation import EventCorrelator
from kubeforge._runtime.ownership import get_reference

__all__ = [
    "EVENT_KIND",
    "SERIES_TTL",
    "EventRecorder",
    "EventType",
    "object_reference",
]

log = logging.getLogger("kubeforge.events")

EVENT_KIND: Final = "events.k8s.io/v1/Event"
EventType = Literal["Normal", "Warning"]

# How long after its last occurrence an event can still be folded into a series.
SERIES_TTL: Final = 6 * 60.0
CACHE_SIZE: Final = 4096
NOTE_LIMIT: Final = 1024  # bytes
REASON_LIMIT: Final = 128
ACTION_LIMIT: Final = 128
INSTANCE_LIMIT: Final = 128
NAME_LIMIT: Final = 253


_REFERENCE_META = ("name", "namespace", "resourceVersion", "uid")


def object_reference(obj: KubeObject) -> dict[str, str]:
    """An ObjectReference to `obj` in its JSON form; an event needs the object's name."""
    if type(obj) is dict:
        # A plain object (what controllers and nodes mostly record about): the same
        # reference as `get_reference` makes, without a typed model in between.
        meta, api_version, kind = obj.get("metadata"), obj.get("apiVersion"), obj.get("kind")
        if type(meta) is dict and type(api_version) is str and type(kind) is str:
            values = [meta.get(key) for key in _REFERENCE_META]
            if api_version and kind and all(v is None or type(v) is str for v in values):
                plain = {"apiVersion": api_version, "kind": kind}
                plain.update((k, v) for k, v in zip(_REFERENCE_META, values, strict=True) if v)
                if "name" not in plain:
                    raise ValueError(f"cannot record an event about a {kind} without a name")
                return plain
    ref: dict[str, str] = get_reference(obj).to_dict()
    if "name" not in ref:
        raise ValueError(f"cannot record an event about a {ref['kind']} without a name")
    return ref


def _identity(ref: Mapping[str, str] | None) -> tuple[str, ...]:
    if ref is None:
        return ()
    return tuple(ref.get(k, "") for k in ("apiVersion", "kind", "namespace", "name", "uid"))


def _truncate_utf8(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode(errors="ignore")


@dataclass(slots=True)
class _Series:
    """What the recorder remembers of one Event it wrote. `lock` orders the writes of one
    series while any is in flight (thousands of series are remembered, few busy)."""

    name: str | None = None
    namespace: str = ""
    count: int = 0
    seen: float = 0.0
    lock: asyncio.Lock | None = None
    writers: int = 0


class EventRecorder:
    """Writes Events reported by one controller instance (see the module documentation).

    At most `cache_size` series are remembered (the least recently seen are forgotten
    first); `clock` (monotonic seconds, the process's clock by default) measures their
    six-minute lifetime and the correlator's windows. `correlate=False` leaves `record`
    uncorrelated, as kube-scheduler's events.k8s.io recorder is.
    """

    def __init__(
        self,
        client: Writer,
        *,
        controller: str,
        instance: str | None = None,
        cache_size: int = CACHE_SIZE,
        clock: Callable[[], float] = process_clock.monotonic,
        correlate: bool = True,
    ) -> None:
        if not controller:
            raise ValueError("an event recorder needs a controller name")
        self.client = client
        self.controller = controller
        self.instance = (instance or f"{controller}-{socket.gethostname()}")[:INSTANCE_LIMIT]
        self.cache_size = max(1, cache_size)
        self._clock = clock
        self._correlator = EventCorrelator(clock) if correlate else None
        self._series: OrderedDict[tuple[Any, ...], _Series] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_stamp = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            pass  # bound later (Manager.start, or the first record from the loop)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop that writes events recorded from other threads."""
        self._loop = loop

    async def event(
        self,
        regarding: KubeObject,
        type: EventType,
        reason: str,
        note: str,
        *,
        action: str = "",
        related: KubeObject | None = None,
    ) -> dict[str, Any]:
        """Record an event about `regarding`; returns the Event as stored (created or with
        its series updated). An empty action takes the reason, as the API requires one."""
        return await self._emit(
            object_reference(regarding),
            type,
            reason,
            note,
            action,
            None if related is None else object_reference(related),
        )

    def record(
        self,
        regarding: KubeObject,
        type: EventType,
        reason: str,
        note: str,
        *,
        action: str = "",
        related: KubeObject | None = None,
    ) -> None:
        """Like `event`, in the background: never blocks and never raises (failures are
        logged). Works from the event loop and from other threads alike."""
        try:
            regarding_ref = object_reference(regarding)
            related_ref = None if related is None else object_reference(related)
        except Exception as exc:
            log.warning("event %s not recorded: %s", reason, exc)
            return
        args = (regarding_ref, type, reason, note, action, related_ref)
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None:
            self._loop = self._loop or running
            self._schedule(args)
        elif self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._schedule, args)
        else:
            log.warning(
                "event %s not recorded: the recorder is not bound to an event loop "
                "(recorders from manager.event_recorder() are, once the manager starts)",
                reason,
            )

    def _schedule(self, args: tuple[Any, ...]) -> None:
        regarding, type, reason, note, action, related = args
        aggregate = False
        if self._correlator is not None:
            source = (self.controller, self.instance, _identity(regarding))
            correlated = self._correlator.correlate(source, type, reason, note)
            if correlated is None:
                return  # over the object's budget: dropped, as client-go's recorder drops it
            note, aggregate = correlated.note, correlated.aggregate
        task = asyncio.get_running_loop().create_task(
            self._emit_quietly(regarding, type, reason, note, action, related, aggregate)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def flush(self) -> None:
        """Wait until the events `record` scheduled so far are written (or failed)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _emit_quietly(
        self,
        regarding: dict[str, str],
        type: str,
        reason: str,
        note: str,
        action: str,
        related: dict[str, str] | None,
        aggregate: bool,
    ) -> None:
        try:
            await self._emit(regarding, type, reason, note, action, related, aggregate)
        except Exception as exc:
            log.warning(
                "event %s about %s %s not recorded: %s",
                reason,
                regarding.get("kind"),
                regarding.get("name"),
                exc,
            )

    async def _emit(
        self,
        regarding: dict[str, str],
        type: str,
        reason: str,
        note: str,
        action: str,
        related: dict[str, str] | None,
        aggregate: bool = False,
    ) -> dict[str, Any]:
        if type not in ("Normal", "Warning"):
            raise ValueError(f"event type must be Normal or Warning, not {type!r}")
        if not reason or len(reason) > REASON_LIMIT:
            raise ValueError(f"an event reason must have 1 to {REASON_LIMIT} characters")
        action = action or reason
        if len(action) > ACTION_LIMIT:
            raise ValueError(f"an event action can have at most {ACTION_LIMIT} characters")
        note = _truncate_utf8(note, NOTE_LIMIT)
        key: tuple[Any, ...]
        if aggregate:
            # Similar events aggregated: one series whatever their notes (the first one's
            # stays, as an events.k8s.io/v1 Event's note cannot change).
            key = ("aggregate", _identity(regarding), type, reason)
        else:
            key = (_identity(regarding), type, reason, action, note, _identity(related))
        series = self._remember(key)
        if series.lock is None:
            series.lock = asyncio.Lock()
        series.writers += 1
        try:
            async with series.lock:
                if series.name is not None:
                    try:
                        return await self._repeat(series)
                    except NotFound:
                        pass  # the Event expired or was deleted: start over with a new one
                body = self._new_event(regarding, type, reason, note, action, related)
                created: dict[str, Any] = await self.client.create(body)
                series.name = body["metadata"]["name"]
                series.namespace = body["metadata"]["namespace"]
                series.count = 1
                return created
        finally:
            series.writers -= 1
            if not series.writers:
                series.lock = None

    def _remember(self, key: tuple[Any, ...]) -> _Series:
        """The cache entry for `key`, new when it has none or its series has gone stale."""
        now = self._clock()
        cache = self._series
        # Entries are kept in order of last use, so the stale ones are at the front.
        while cache and now - next(iter(cache.values())).seen > SERIES_TTL:
            cache.popitem(last=False)
        series = cache.get(key)
        if series is None:
            if len(cache) >= self.cache_size:
                cache.popitem(last=False)
            series = cache[key] = _Series()
        else:
            cache.move_to_end(key)
        series.seen = now
        return series

    async def _repeat(self, series: _Series) -> dict[str, Any]:
        count = series.count + 1
        patch = {"series": {"count": count, "lastObservedTime": now_micro_time()}}
        updated: dict[str, Any] = await self.client.patch(
            EVENT_KIND, series.name or "", patch, namespace=series.namespace
        )
        series.count = count
        return updated

    def _new_event(
        self,
        regarding: dict[str, str],
        type: str,
        reason: str,
        note: str,
        action: str,
        related: dict[str, str] | None,
    ) -> dict[str, Any]:
        # The machine's nanoseconds: part of a name that must not repeat (on a virtual
        # clock that stands still, recorders of several controllers would meet), not a time.
        stamp = max(time.time_ns(), self._last_stamp + 1)
        self._last_stamp = stamp
        suffix = f".{stamp:x}"
        name = regarding["name"][: NAME_LIMIT - len(suffix)] + suffix
        event: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": regarding.get("namespace") or "default"},
            "eventTime": now_micro_time(),
            "regarding": regarding,
            "reason": reason,
            "note": note,
            "type": type,
            "action": action,
            "reportingController": self.controller,
            "reportingInstance": self.instance,
        }
        if related is not None:
            event["related"] = related
        return event
