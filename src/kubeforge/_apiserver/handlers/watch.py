"""Watch streams: chunked JSON lines of ADDED/MODIFIED/DELETED/BOOKMARK/ERROR events.

Objects a conversion webhook converts go out in the version watched: each event's object is
converted once per version and shared by every watch of that version (kube-apiserver keeps a
watch cache per version), the events of one batch in one review. Selectors that read what a
conversion may change are applied to the converted objects. A conversion that fails ends
the watch with an ERROR event carrying the failure.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from functools import partial as bind
from typing import Any, Protocol

import orjson

from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.exchange import include_object, negotiated, partial
from kubeforge._apiserver.http.messages import Request, Response, ResponseStream
from kubeforge._apiserver.printing.tables import to_table
from kubeforge._apiserver.request.encoding import Negotiated
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.queryparams import query_bool, query_flag
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.listing import BatchConverter, Selection, parse_resource_version
from kubeforge._apiserver.storage.store import Event, Expired, Store, StoredObject, Watcher

__all__ = ["StreamFaults", "WatchStreams"]

TableEncoder = Callable[[list[dict[str, Any]], bool], dict[str, Any]]
Predicate = Callable[[dict[str, Any]], bool]


class StreamFaults(Protocol):
    """Faults a test injects into watch streams (kubeforge.testing's ServerFaults)."""

    def watch(self, call: Call, since: int | None, start: Callable[[], Watcher]) -> Watcher:
        """Open the watch `call` asks for with `start()`, or refuse its resourceVersion
        (`since`) by raising Expired; the watcher may be given a gate."""


class WatchStreams:
    """Serves watch requests and can end them all (on shutdown or when a type goes away)."""

    def __init__(self, store: Store, codec: Codec, bookmark_interval: float = 60.0) -> None:
        self.store = store
        self.codec = codec
        self.bookmark_interval = bookmark_interval
        # Every open watch and the request that opened it.
        self.active: dict[Watcher, Call] = {}
        # Set while a test injects faults into watches (testing/serverfaults.py).
        self.faults: StreamFaults | None = None

    def close_all(self) -> None:
        """End every open watch."""
        for watcher in list(self.active):
            watcher.close()

    def watch(self, request: Request, call: Call) -> Awaitable[Response | ResponseStream]:
        """A watch of a collection or one object, as JSON events, Tables or metadata only."""
        rt = call.rt
        answer = negotiated(request, {"Table", "PartialObjectMetadata"})
        table = None
        served: Callable[[StoredObject], dict[str, Any]] = bind(self.codec.served, rt)
        raw_ok = rt.from_storage is None
        if answer.as_kind == "Table":
            include = include_object(call)
            version = answer.version or "v1"

            def table(objs: list[dict[str, Any]], no_headers: bool) -> dict[str, Any]:
                return to_table(
                    rt, objs, include_object=include, table_version=version, no_headers=no_headers
                )

        elif answer.as_kind == "PartialObjectMetadata":
            version = answer.version or "v1"

            def served(stored: StoredObject) -> dict[str, Any]:
                return partial(stored.obj, version)

            raw_ok = False
        convert = None
        if rt.webhook_conversion is not None and answer.as_kind != "PartialObjectMetadata":
            convert = self.codec.converter(rt)
        return self.serve(request, call, answer, served, raw_ok, table, convert)

    async def serve(
        self,
        request: Request,
        call: Call,
        negotiated: Negotiated,
        served: Callable[[StoredObject], dict[str, Any]],
        raw_ok: bool,
        table: TableEncoder | None,
        convert: BatchConverter | None = None,
    ) -> ResponseStream:
        """Stream events until timeoutSeconds, client disconnect or shutdown.

        `served` converts a stored object to the requested version; when `raw_ok` (the type
        has no converter) objects already stored in that version go out as the shared,
        encoded-once event lines. `convert`, for types a conversion webhook converts,
        replaces `served` for objects stored in another version.
        """
        rt = call.rt
        query = call.query
        selection = Selection.parse(rt, query)
        if call.name:
            selection = Selection.parse(
                rt,
                {
                    **query,
                    "fieldSelector": ",".join(
                        s for s in (query.get("fieldSelector"), f"metadata.name={call.name}") if s
                    ),
                },
            )
        rv = parse_resource_version(query.get("resourceVersion"))
        send_initial = query_bool(query, "sendInitialEvents")
        match = query.get("resourceVersionMatch") or ""
        initial_events_end = False
        if send_initial is not None:
            if match != "NotOlderThan":
                raise StatusError.unprocessable(
                    "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
                    "resourceVersionMatch to NotOlderThan"
                )
            if send_initial:
                initial_events_end = query_flag(query, "allowWatchBookmarks")
                rv = None
        elif match:
            raise StatusError.unprocessable(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch "
                "unless sendInitialEvents is provided"
            )
        timeout_text = query.get("timeoutSeconds")
        if timeout_text:
            try:
                timeout = float(int(timeout_text))
            except ValueError:
                raise StatusError.bad_request(f"invalid timeoutSeconds: {timeout_text}") from None
        else:
            timeout = float(random.randint(1800, 3600))
        bookmarks = query_flag(query, "allowWatchBookmarks") and table is None

        response = request.stream(
            200,
            {
                "Content-Type": "application/json",
                "Cache-Control": "no-cache",
                "Audit-Id": call.audit_id,
            },
        )

        namespace = call.info.namespace if rt.namespaced else None
        predicate = selection.predicate()
        converted_filter: Predicate | None = None
        if convert is not None and not selection.version_invariant:
            # Selected after conversion, in the version watched.
            converted_filter, predicate = predicate, None
        encode = _ConvertingEncoder(convert, rt.api_version, converted_filter) if convert else None
        start = bind(self.store.watch, rt.group_resource, namespace, predicate, rv or None)
        faults = self.faults
        try:
            watcher = start() if faults is None else faults.watch(call, rv or None, start)
        except Expired as exc:
            await response.write(_error_line(410, "Expired", str(exc)))
            return response

        self.active[watcher] = call
        # The machine's time: a watch's timeout and its bookmarks pace a connection, as
        # kube-apiserver's do; a virtual clock a test advances leaves them be.
        deadline = time.monotonic() + timeout
        next_bookmark = time.monotonic() + self.bookmark_interval
        first_table = True
        try:
            if initial_events_end:
                initial, watcher.pending = watcher.pending, []
                if encode is not None:
                    lines = await encode(initial, None, True)
                else:
                    lines = self._encode(initial, served, raw_ok, None, True, rt.api_version)
                await response.write(
                    lines
                    + _bookmark(rt.kind, rt.api_version, self.store.revision, initial_end=True)
                )
            while True:
                now = time.monotonic()
                if now >= deadline:
                    break
                wait = deadline - now
                if bookmarks:
                    wait = min(wait, max(next_bookmark - now, 0))
                batch = await watcher.next_batch(wait)
                if batch:
                    if encode is not None:
                        data = await encode(batch, table, first_table)
                    else:
                        data = self._encode(
                            batch, served, raw_ok, table, first_table, rt.api_version
                        )
                    first_table = False
                    await response.write(data)
                if watcher.closed:
                    break
                if bookmarks and time.monotonic() >= next_bookmark:
                    # Not past events still queued or held back: the next one will do.
                    if watcher.settled:
                        revision = self.store.revision
                        await response.write(_bookmark(rt.kind, rt.api_version, revision))
                    next_bookmark = time.monotonic() + self.bookmark_interval
            if watcher.expired is not None:
                # As etcd's compaction cancels a watch behind it: the client lists again.
                await response.write(_error_line(410, "Expired", str(watcher.expired)))
            elif bookmarks and not watcher.closed and watcher.settled:
                # A last bookmark lets the client resume from the newest revision.
                await response.write(_bookmark(rt.kind, rt.api_version, self.store.revision))
        except StatusError as exc:
            # A conversion failed: the client hears why and watches again (or re-lists).
            await response.write(orjson.dumps({"type": "ERROR", "object": exc.status()}) + b"\n")
        except ConnectionResetError:
            pass  # the client went away: a normal end for a watch
        finally:
            watcher.close()
            self.active.pop(watcher, None)
        return response

    @staticmethod
    def _encode(
        batch: list[tuple[Event, str]],
        served: Callable[[StoredObject], dict[str, Any]],
        raw_ok: bool,
        table: TableEncoder | None,
        first_table: bool,
        api_version: str,
    ) -> bytes:
        if table is not None:
            lines = []
            for event, seen in batch:
                obj = table([served(event.new)], not first_table)
                first_table = False
                lines.append(orjson.dumps({"type": seen, "object": obj}) + b"\n")
            return b"".join(lines)
        return b"".join(
            event.encoded(seen)
            if raw_ok and event.new.api_version == api_version
            else orjson.dumps({"type": seen, "object": served(event.new)}) + b"\n"
            for event, seen in batch
        )


def _bookmark(kind: str, api_version: str, rv: int, initial_end: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rv), "creationTimestamp": None}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": kind, "apiVersion": api_version, "metadata": meta}
    return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def _error_line(code: int, reason: str, message: str) -> bytes:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return orjson.dumps({"type": "ERROR", "object": status}) + b"\n"


def _seen_as(event_type: str, now: bool, before: bool) -> str | None:
    """How a watch whose selectors matched the previous state (`before`) and match the new
    one (`now`) sees an event (the store's Watcher.offer, for selectors applied later)."""
    if event_type == "MODIFIED":
        if now and not before:
            return "ADDED"
        if before and not now:
            return "DELETED"
        return "MODIFIED" if now else None
    return event_type if now else None


class _ConvertingEncoder:
    """Encodes batches of events in the version watched, converting what needs it."""

    def __init__(
        self, convert: BatchConverter, api_version: str, selected: Predicate | None
    ) -> None:
        self.convert = convert
        self.api_version = api_version
        self.selected = selected

    async def __call__(
        self, batch: list[tuple[Event, str]], table: TableEncoder | None, first_table: bool
    ) -> bytes:
        wanted = self.api_version
        pending: dict[int, StoredObject] = {}
        for event, _ in batch:
            new = event.new
            if new.api_version != wanted and (
                event.converted is None or wanted not in event.converted
            ):
                pending[id(new)] = new
            old = event.old
            if (
                self.selected is not None
                and event.type == "MODIFIED"
                and old is not None
                and old.api_version != wanted
            ):
                pending[id(old)] = old
        converted: dict[int, dict[str, Any]] = {}
        if pending:
            objects = list(pending.values())
            for stored, obj in zip(objects, await self.convert(objects), strict=True):
                converted[id(stored)] = obj
        lines = []
        for event, seen in batch:
            raw = self._encoded(event, converted)
            shown: str | None = seen
            if self.selected is not None:
                now = self.selected(self._object(event.new, raw, converted))
                before = event.old is not None and self.selected(
                    self._object(event.old, None, converted)
                )
                shown = _seen_as(event.type, now, before)
                if shown is None:
                    continue
            if table is not None:
                obj = table([orjson.loads(raw)], not first_table)
                first_table = False
                lines.append(orjson.dumps({"type": shown, "object": obj}) + b"\n")
            elif raw is event.new.raw:
                lines.append(event.encoded(shown))
            else:
                lines.append(b'{"type":"' + str(shown).encode() + b'","object":' + raw + b"}\n")
        return b"".join(lines)

    def _encoded(self, event: Event, converted: dict[int, dict[str, Any]]) -> bytes:
        """The event's object in the version watched, encoded (and kept on the event)."""
        new = event.new
        if new.api_version == self.api_version:
            return new.raw
        if event.converted is None:
            event.converted = {}
        raw = event.converted.get(self.api_version)
        if raw is None:
            raw = event.converted[self.api_version] = orjson.dumps(converted[id(new)])
        return raw

    def _object(
        self, stored: StoredObject, raw: bytes | None, converted: dict[int, dict[str, Any]]
    ) -> dict[str, Any]:
        if stored.api_version == self.api_version:
            return stored.obj
        found = converted.get(id(stored))
        if found is not None:
            return found
        assert raw is not None
        loaded: dict[str, Any] = orjson.loads(raw)
        return loaded
