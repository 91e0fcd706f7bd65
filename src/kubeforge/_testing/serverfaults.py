"""Server-side faults: the test cluster's API server answering chosen requests with an error
or late, ending or holding back watch streams, serving a reader an older revision, and
recording the writes each user makes.

    faults = testenv.faults                   # a ServerFaults on the environment's server
    with faults.fail(verb="update", resource="widgets", status=409, times=1):
        ...
    record = faults.record_writes(user=testenv.manager_user)

Every method returns a `Fault`, a handle that counts what it did (`hits`) and takes it out
again (`remove()`, or leaving its `with` block); `clear()` takes out everything. While
nothing is installed the server runs as it does without ServerFaults: the hooks are set on
the router and the watch handler only while something needs them.

Requests are chosen by kube's request attributes: `verb` (get, list, watch, create, update,
patch, delete, deletecollection), `resource` (the plural, or `plural.group`), `namespace`,
`name`, `subresource` and `user` (the authenticated user name); each is one value or a
collection of them, and one left out matches any.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, TypedDict, Unpack

import orjson

from kubeforge import clock
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.exchange import status_response
from kubeforge._apiserver.handlers.get import ReadHandler
from kubeforge._apiserver.http.messages import Request, Response, ResponseStream, Upgraded
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.router import Answer, Route
from kubeforge._apiserver.server import APIServer
from kubeforge._apiserver.storage.store import Event, Expired, Store, StoredObject, Watcher
from kubeforge._apiserver.types.resource import GroupResource
from kubeforge._client.transport import USER_AGENT
from kubeforge.clock import activity

__all__ = [
    "Fault",
    "RecordedWrite",
    "RequestChoice",
    "RequestMatch",
    "ServerFaults",
    "WatchChoice",
    "WriteRecord",
]

Values = str | Collection[str] | None
Key = tuple[str, str]  # (namespace or "", name)
# How this package's client names itself (its requests are counted by a virtual clock).
USER_AGENT_PREFIX = USER_AGENT.split("/", 1)[0] + "/"
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# What etcd's compaction ends a watch with (apimachinery's NewResourceExpired, as the etcd3
# watcher sends it for ErrCompacted).
_COMPACTED = "The resourceVersion for the provided watch is too old."
# Reasons of the failures a test asks for by code, as apimachinery's errors name them.
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class WatchChoice(TypedDict, total=False):
    """Which watches a watch fault acts on (each key left out matches any)."""

    resource: Values
    """The plural (`configmaps`) or `plural.group` (`widgets.example.com`)."""
    namespace: Values
    """The namespace of the objects."""
    user: Values
    """The authenticated user's name (a manager of run_manager: `testenv.manager_user`)."""


class RequestChoice(WatchChoice, total=False):
    """Which requests a fault acts on (each key left out matches any)."""

    verb: Values
    """get, list, watch, create, update, patch, delete, deletecollection."""
    name: Values
    """The object's name."""
    subresource: Values
    """`status`, `scale` ..."""


def _values(given: Values) -> frozenset[str] | None:
    if given is None:
        return None
    return frozenset((given,) if isinstance(given, str) else given)


@dataclass(frozen=True)
class RequestMatch:
    """Which requests a fault applies to; a field left None matches any."""

    verb: frozenset[str] | None = None
    resource: frozenset[str] | None = None
    namespace: frozenset[str] | None = None
    name: frozenset[str] | None = None
    subresource: frozenset[str] | None = None
    user: frozenset[str] | None = None

    @classmethod
    def of(cls, **chosen: Unpack[RequestChoice]) -> RequestMatch:
        """A match from single values or collections of them."""
        return cls(
            _values(chosen.get("verb")),
            _values(chosen.get("resource")),
            _values(chosen.get("namespace")),
            _values(chosen.get("name")),
            _values(chosen.get("subresource")),
            _values(chosen.get("user")),
        )

    def request(self, call: Call) -> bool:
        """Whether the request `call` is one of those chosen."""
        info = call.info
        if self.verb is not None and info.verb not in self.verb:
            return False
        if self.resource is not None and not self._resource(call.rt.group_resource):
            return False
        if self.namespace is not None and (info.namespace or "") not in self.namespace:
            return False
        if self.name is not None and (info.name or "") not in self.name:
            return False
        if self.subresource is not None and (info.subresource or "") not in self.subresource:
            return False
        return self.user is None or call.user.name in self.user

    def stream(self, call: Call) -> bool:
        """Whether the watch `call` opened is chosen: by its user, resource and namespace
        (its objects are chosen by `key`)."""
        if self.resource is not None and not self._resource(call.rt.group_resource):
            return False
        namespace = call.info.namespace
        if self.namespace is not None and namespace is not None and namespace not in self.namespace:
            return False
        return self.user is None or call.user.name in self.user

    def key(self, key: Key) -> bool:
        """Whether an object (namespace, name) is chosen."""
        if self.namespace is not None and key[0] not in self.namespace:
            return False
        return self.name is None or key[1] in self.name

    def _resource(self, gr: GroupResource) -> bool:
        assert self.resource is not None
        return gr.resource in self.resource or f"{gr.resource}.{gr.group}" in self.resource


class Fault:
    """An installed fault. `hits` counts what it acted on (requests answered, streams ended,
    events held); `remove()` takes it out, as leaving a `with` block does. A fault given
    `times` takes itself out after acting that many times."""

    def __init__(self, faults: ServerFaults, match: RequestMatch, times: int | None) -> None:
        self.match = match
        self.times = times
        self.hits = 0
        self.active = True
        self._faults = faults

    def remove(self) -> None:
        """Take the fault out (held events go out at once); removing twice does nothing."""
        if self.active:
            self.active = False
            self._faults._removed(self)

    def _hit(self) -> None:
        self.hits += 1
        if self.times is not None and self.hits >= self.times:
            self.remove()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.remove()

    def __repr__(self) -> str:
        state = "active" if self.active else "removed"
        return f"<{type(self).__name__} {state}, {self.hits} hits>"


class _Failure(Fault):
    def __init__(
        self,
        faults: ServerFaults,
        match: RequestMatch,
        times: int | None,
        error: Callable[[Call], StatusError],
        applied: bool,
    ) -> None:
        super().__init__(faults, match, times)
        self.error = error
        self.applied = applied


class _Delay(Fault):
    def __init__(
        self, faults: ServerFaults, match: RequestMatch, times: int | None, seconds: float
    ) -> None:
        super().__init__(faults, match, times)
        self.seconds = seconds


class _StreamFault(Fault):
    """A fault on the events of open watches: what it holds back, until when."""

    def holds(self, call: Call, event: Event, seen: str) -> bool:
        """Whether this fault holds the event back from the stream `call` opened."""
        raise NotImplementedError

    def due(self, now: float) -> float | None:
        """When an event held now goes out (None: when the fault is removed)."""
        return None


class _StreamDelay(_StreamFault):
    def __init__(self, faults: ServerFaults, match: RequestMatch, seconds: float) -> None:
        super().__init__(faults, match, None)
        self.seconds = seconds

    def holds(self, call: Call, event: Event, seen: str) -> bool:
        return self.match.key(event.new.key)

    def due(self, now: float) -> float | None:
        return now + self.seconds


class _Coalescing(_StreamFault):
    def __init__(self, faults: ServerFaults, match: RequestMatch, window: float | None) -> None:
        super().__init__(faults, match, None)
        self.window = window

    def holds(self, call: Call, event: Event, seen: str) -> bool:
        return self.match.key(event.new.key)

    def due(self, now: float) -> float | None:
        return None if self.window is None else now + self.window


class _StaleView(_StreamFault):
    """A reader's view pinned at `revision`: its reads answer as of then, and its watches
    hold every later event until the fault is removed (a lagging server's watch cache)."""

    def __init__(self, faults: ServerFaults, match: RequestMatch, revision: int) -> None:
        super().__init__(faults, match, None)
        self.revision = revision
        server = faults.server
        self.reads = ReadHandler(
            _PinnedStore(server.store, revision), server.codec, server.components
        )

    def holds(self, call: Call, event: Event, seen: str) -> bool:
        return event.rv > self.revision and self.match.key(event.new.key)


class _Expiry(Fault):
    """Watches from before `revision` are answered 410 Gone (a compaction)."""

    def __init__(self, faults: ServerFaults, match: RequestMatch, revision: int) -> None:
        super().__init__(faults, match, None)
        self.revision = revision


@dataclass(frozen=True, slots=True)
class RecordedWrite:
    """One successful write, as the API server answered it. `resource_version` is the
    object's after the write (empty when the answer was a Status: a delete that removed
    the object at once)."""

    verb: str
    group: str
    resource: str
    kind: str
    namespace: str
    name: str
    subresource: str
    resource_version: str
    user: str
    field_manager: str

    @property
    def qualified_resource(self) -> str:
        """`widgets.example.com`, `configmaps`: the resource as kube prints it."""
        return f"{self.resource}.{self.group}" if self.group else self.resource


class WriteRecord(Fault):
    """The writes the chosen requests made, in the order the server answered them; it keeps
    recording until removed (what it recorded stays)."""

    def __init__(self, faults: ServerFaults, match: RequestMatch, field_manager: Values) -> None:
        super().__init__(faults, match, None)
        self.field_managers = _values(field_manager)
        self.writes: list[RecordedWrite] = []
        # Told of each write as it is recorded.
        self.listeners: list[Callable[[RecordedWrite], None]] = []

    def by(
        self, *, user: str | None = None, field_manager: str | None = None
    ) -> list[RecordedWrite]:
        """The recorded writes of `user` and/or `field_manager`."""
        return [
            write
            for write in self.writes
            if (user is None or write.user == user)
            and (field_manager is None or write.field_manager == field_manager)
        ]

    def __iter__(self) -> Iterator[RecordedWrite]:
        return iter(self.writes)

    def __len__(self) -> int:
        return len(self.writes)


class _PinnedStore:
    """The store as of an older revision, for the reads of a stale view (`Revisions`)."""

    def __init__(self, store: Store, revision: int) -> None:
        self._store = store
        self._revision = revision

    @property
    def revision(self) -> int:
        return self._revision

    def get(self, gr: GroupResource, namespace: str, name: str) -> StoredObject | None:
        try:
            state, _ = self._store.state_at(gr, self._revision)
        except Expired:
            # History no longer reaches that far back: the oldest view left is today's.
            return self._store.get(gr, namespace, name)
        return state.get((namespace, name))

    def state_at(
        self, gr: GroupResource, rv: int | None, namespace: str | None = None
    ) -> tuple[Mapping[Key, StoredObject], list[Key]]:
        return self._store.state_at(gr, self._revision if rv is None else rv, namespace)


@dataclass
class _Held:
    """An event a stream holds back: for `fault` (None: only to keep the stream's order)
    until `due` (None: until the fault is removed)."""

    event: Event
    seen: str
    fault: _StreamFault | None
    due: float | None

    def ready(self, now: float) -> bool:
        fault = self.fault
        return fault is None or not fault.active or (self.due is not None and self.due <= now)


class _Gate:
    """The stream faults acting on one open watch: events they hold wait here, in the order
    they came, until due (or until their fault is removed)."""

    def __init__(self, faults: ServerFaults, watcher: Watcher, call: Call) -> None:
        self.faults = faults
        self.watcher = watcher
        self.call = call
        self.held: list[_Held] = []
        self._timer: clock.Timer | None = None

    @property
    def holding(self) -> bool:
        return bool(self.held)

    def admit(self, batch: list[tuple[Event, str]]) -> list[tuple[Event, str]]:
        now = clock.monotonic()
        for event, seen in batch:
            self._take(event, seen, now)
        out: list[tuple[Event, str]] = []
        kept: list[_Held] = []
        for held in self.held:
            if held.ready(now):
                out.append((held.event, held.seen))
            else:
                kept.append(held)
        self.held = kept
        self._schedule(now)
        if not kept and not self.faults._streams_for(self.call):
            self.watcher.gate = None
        return out

    def _take(self, event: Event, seen: str, now: float) -> None:
        for fault in self.faults._streams_for(self.call):
            if not fault.holds(self.call, event, seen):
                continue
            fault.hits += 1
            if isinstance(fault, _Coalescing) and self._coalesce(event, seen, fault):
                return
            self.held.append(_Held(event, seen, fault, fault.due(now)))
            return
        for held in reversed(self.held):
            if held.fault is not None and not isinstance(held.fault, _Coalescing):
                # Behind events a delay or a stale view holds: the stream keeps its order.
                self.held.append(_Held(event, seen, held.fault, held.due))
                return
        self.held.append(_Held(event, seen, None, None))

    def _coalesce(self, event: Event, seen: str, fault: _Coalescing) -> bool:
        """Fold `event` into the one held for the same object: the watcher sees only the
        last state. True when it was folded (or both vanished)."""
        key = event.new.key
        for i, held in enumerate(self.held):
            if held.fault is not fault or held.event.new.key != key:
                continue
            first = held.seen
            if first == "ADDED" and seen == "DELETED":
                del self.held[i]  # made and gone before the watcher looked
            elif first == "ADDED":
                self.held[i] = _Held(event, "ADDED", fault, held.due)
            elif first == "DELETED" and seen == "ADDED":
                self.held[i] = _Held(event, "MODIFIED", fault, held.due)
            else:
                self.held[i] = _Held(event, seen, fault, held.due)
            return True
        return False

    def _schedule(self, now: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        dues = [held.due for held in self.held if held.due is not None]
        if dues:
            self._timer = clock.call_later(min(dues) - now, self.watcher.wake)


class _Streams:
    """The watch handler's hook (`StreamFaults`): refuses resourceVersions an expiry covers
    and gives new watches the gate their faults need."""

    def __init__(self, faults: ServerFaults) -> None:
        self.faults = faults

    def watch(self, call: Call, since: int | None, start: Callable[[], Watcher]) -> Watcher:
        if since is not None:
            for fault in self.faults._installed:
                if (
                    isinstance(fault, _Expiry)
                    and since < fault.revision
                    and fault.match.stream(call)
                ):
                    fault.hits += 1
                    raise Expired(since, fault.revision)
        watcher = start()
        self.faults._gate(watcher, call)
        return watcher


class ServerFaults:
    """Faults injected into one API server, `server` (a TestEnv's is `testenv.faults`)."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self._installed: list[Fault] = []
        self._stream_hook = _Streams(self)

    @property
    def installed(self) -> list[Fault]:
        """The faults and records in place, in the order they were installed."""
        return list(self._installed)

    # requests --------------------------------------------------------------------------------

    def fail(
        self,
        *,
        status: int = 500,
        reason: str | None = None,
        message: str | None = None,
        retry_after: int | None = None,
        times: int | None = None,
        applied: bool = False,
        **chosen: Unpack[RequestChoice],
    ) -> Fault:
        """Answer the chosen requests with an error Status: `status` (500 by default) with
        kube's reason for it (or `reason`) and `message`; `retry_after` seconds go into the
        Status details and a Retry-After header (a 429 gets 1 unless told), as kube-apiserver
        writes them. The first `times` requests fail (None: all). With `applied`, the
        request is carried out first and its answer replaced by the error: a write that
        happened though its client hears it failed (a 504 after the commit)."""
        if not 400 <= status <= 599:
            raise ValueError(f"a failure's status is 4xx or 5xx, not {status}")
        wait = retry_after if retry_after is not None else (1 if status == 429 else None)

        def error(call: Call) -> StatusError:
            return _status_error(call, status, reason, message, wait)

        return self._install(_Failure(self, RequestMatch.of(**chosen), times, error, applied))

    def delay(
        self, seconds: float, *, times: int | None = None, **chosen: Unpack[RequestChoice]
    ) -> Fault:
        """Answer the chosen requests `seconds` (of kubeforge.clock) late; the request is
        carried out after the wait. A watch request's stream starts late (to hold back a
        stream's events, see `delay_watches`)."""
        return self._install(_Delay(self, RequestMatch.of(**chosen), times, seconds))

    def stale_reads(
        self,
        *,
        user: Values,
        resource: Values = None,
        namespace: Values = None,
        revision: int | None = None,
    ) -> Fault:
        """Serve `user` a stale view, as of `revision` (default: now), of `resource` in
        `namespace`: its gets and lists answer as they would have then (lists at that
        resourceVersion), and its watches hold back every later event until the fault is
        removed, when they catch up at once (a lagging API server's watch cache); a watch
        open before keeps what it already saw. Other readers see the cluster as it is."""
        at = self.server.store.revision if revision is None else revision
        match = RequestMatch.of(user=user, resource=resource, namespace=namespace)
        return self._install(_StaleView(self, match, at))

    def record_writes(
        self, *, field_manager: Values = None, **chosen: Unpack[WatchChoice]
    ) -> WriteRecord:
        """Record every successful write (create, update, patch, delete, deletecollection,
        and those of subresources; not dry runs) the chosen requests make, from now until
        the record is removed: verb, resource, namespace/name, the resourceVersion written,
        user and field manager, in order."""
        record = WriteRecord(self, RequestMatch.of(**chosen), field_manager)
        self._install(record)
        return record

    # watches ---------------------------------------------------------------------------------

    def drop_watches(self, **chosen: Unpack[WatchChoice]) -> Fault:
        """End the chosen open watches now, as a lost connection or a restarting server
        would; their clients watch again from the last revision they saw. The handle
        counts the watches ended; nothing stays installed."""
        match = RequestMatch.of(**chosen)
        fault = Fault(self, match, None)
        for watcher, _ in self._open(match):
            watcher.close()
            fault.hits += 1
        fault.active = False
        return fault

    def expire_watches(self, **chosen: Unpack[WatchChoice]) -> Fault:
        """Compact the chosen watches' history, as etcd compaction does: the open ones end
        with 410 Gone ("the resourceVersion for the provided watch is too old"), and a
        watch asking to resume from before now gets 410 too, until the fault is removed; a
        client lists again."""
        match = RequestMatch.of(**chosen)
        revision = self.server.store.revision
        fault = self._install(_Expiry(self, match, revision))
        for watcher, _ in self._open(match):
            watcher.expire(Expired(revision, revision, _COMPACTED))
            fault.hits += 1
        return fault

    def delay_watches(self, seconds: float, **chosen: Unpack[WatchChoice]) -> Fault:
        """Deliver every event of the chosen watches (open now or later) `seconds` late,
        in order, until removed (when what is held goes out at once)."""
        return self._install(_StreamDelay(self, RequestMatch.of(**chosen), seconds))

    def coalesce_events(
        self, *, name: Values = None, window: float | None = None, **chosen: Unpack[WatchChoice]
    ) -> Fault:
        """Hold back the events of the chosen objects on the chosen watches and deliver
        only the last state of each: an object changed three times arrives once, in its
        final state (made and deleted meanwhile: not at all). They go out when the fault
        is removed or, with `window`, that many seconds after the object's first held
        event. Events of other objects keep flowing."""
        return self._install(_Coalescing(self, RequestMatch.of(name=name, **chosen), window))

    def clear(self) -> None:
        """Take out every fault and record (what records hold stays)."""
        for fault in list(self._installed):
            fault.remove()

    # the hooks ------------------------------------------------------------------------------

    def _install(self, fault: Fault) -> Fault:
        self._installed.append(fault)
        self.server.router.faults = self._answer
        self.server.watches.faults = self._stream_hook
        if isinstance(fault, _StreamFault):
            for watcher, call in self._open(fault.match):
                self._gate(watcher, call)
        return fault

    def _open(self, match: RequestMatch) -> list[tuple[Watcher, Call]]:
        """The open watches `match` chooses, and the requests that opened them."""
        active = self.server.watches.active
        return [
            (w, call) for w, call in list(active.items()) if match.stream(call) and not w.closed
        ]

    def _removed(self, fault: Fault) -> None:
        if fault in self._installed:
            self._installed.remove(fault)
        if isinstance(fault, _StreamFault):
            # What it held goes out now.
            for watcher in list(self.server.watches.active):
                if watcher.gate is not None:
                    watcher.wake()
        if not self._installed:
            self.server.router.faults = None
            self.server.watches.faults = None

    def _streams_for(self, call: Call) -> list[_StreamFault]:
        return [
            fault
            for fault in self._installed
            if isinstance(fault, _StreamFault) and fault.match.stream(call)
        ]

    def _gate(self, watcher: Watcher, call: Call) -> None:
        if watcher.gate is None and self._streams_for(call):
            watcher.gate = _Gate(self, watcher, call)

    def _answer(self, request: Request, call: Call, handler: Route) -> Answer:
        """The router's hook: delays, then failures, then stale reads, then the handler;
        writes are recorded as answered."""
        seconds = 0.0
        for fault in list(self._installed):
            if isinstance(fault, _Delay) and fault.active and fault.match.request(call):
                seconds += fault.seconds
                fault._hit()
        if seconds > 0:
            return self._later(seconds, request, call, handler)
        return self._now(request, call, handler)

    async def _later(
        self, seconds: float, request: Request, call: Call, handler: Route
    ) -> Response | ResponseStream | Upgraded:
        # A request from this process's own client is counted as in flight, and a virtual
        # clock waits for such requests before it moves: this one waits for the clock, so
        # it is taken out of the count while it does (kubectl's were never in it).
        parked = (
            isinstance(clock.get(), clock.VirtualClock)
            and call.user_agent.startswith(USER_AGENT_PREFIX)
            and activity.requests > 0
        )
        if parked:
            activity.requests -= 1
        try:
            await clock.sleep(seconds)
        finally:
            if parked:
                activity.requests += 1
        try:
            answer = self._now(request, call, handler)
        except StatusError as exc:
            return status_response(exc)
        return answer if isinstance(answer, Response) else await answer

    def _now(self, request: Request, call: Call, handler: Route) -> Answer:
        for fault in list(self._installed):
            if isinstance(fault, _Failure) and fault.active and fault.match.request(call):
                fault._hit()
                error = fault.error(call)
                if fault.applied:
                    return self._then_fail(self._handle(request, call, handler), error)
                raise error
        return self._handle(request, call, handler)

    async def _then_fail(self, answer: Answer, error: StatusError) -> Response:
        if not isinstance(answer, Response):
            await answer
        return status_response(error)

    def _handle(self, request: Request, call: Call, handler: Route) -> Answer:
        verb = call.info.verb
        if verb in ("get", "list") and call.info.subresource is None and not call.rt.virtual:
            for fault in self._installed:
                if isinstance(fault, _StaleView) and fault.active and fault.match.request(call):
                    fault.hits += 1
                    reads = fault.reads
                    handler = reads.get if verb == "get" else reads.list
                    break
        answer = handler(request, call)
        if verb not in WRITE_VERBS or "dryRun" in call.query:
            return answer
        records = [
            fault
            for fault in self._installed
            if isinstance(fault, WriteRecord) and fault.match.request(call)
        ]
        if not records:
            return answer
        if isinstance(answer, Response):
            _record(records, call, answer)
            return answer
        return self._recorded(records, call, answer)

    async def _recorded(
        self,
        records: list[WriteRecord],
        call: Call,
        pending: Any,
    ) -> Response | ResponseStream | Upgraded:
        answer = await pending
        if isinstance(answer, Response):
            _record(records, call, answer)
        return answer  # type: ignore[no-any-return]


def _status_error(
    call: Call, code: int, reason: str | None, message: str | None, retry_after: int | None
) -> StatusError:
    """The Status a chosen request gets, shaped as apimachinery's errors shape it."""
    rt, name = call.rt, call.info.name or ""
    if reason is None and message is None and retry_after is None:
        if code == 404:
            return StatusError.not_found(rt.group, rt.plural, name)
        if code == 409:
            return StatusError.stale(rt.group, rt.plural, name)
        if code == 410:
            return StatusError.gone(_COMPACTED)
    details: dict[str, Any] | None = None
    if retry_after is not None:
        details = {"retryAfterSeconds": retry_after}
    text = message or f"injected failure of {call.info.verb} {rt.qualified()}" + (
        f' "{name}"' if name else ""
    )
    if code == 500 and message is None:
        text = f"Internal error occurred: {text}"
    return StatusError(code, reason or _REASONS.get(code, ""), text, details)


def _record(records: list[WriteRecord], call: Call, answer: Response) -> None:
    if answer.status >= 300:
        return
    meta: dict[str, Any] = {}
    if answer.body[:1] == b"{":
        try:
            body = orjson.loads(answer.body)
        except orjson.JSONDecodeError:
            body = {}
        if isinstance(body, dict) and body.get("kind") != "Status":
            meta = body.get("metadata") or {}
    info, rt = call.info, call.rt
    try:
        manager = call.field_manager
    except StatusError:
        manager = ""
    write = RecordedWrite(
        info.verb,
        rt.group,
        rt.plural,
        f"{rt.api_version}/{rt.kind}",
        info.namespace or "",
        str(meta.get("name") or info.name or ""),
        info.subresource or "",
        str(meta.get("resourceVersion") or ""),
        call.user.name,
        manager,
    )
    for record in records:
        if record.active and (
            record.field_managers is None or write.field_manager in record.field_managers
        ):
            record.writes.append(write)
            for listener in record.listeners:
                listener(write)
