"""The console's web server: the page, its JSON endpoints and its live stream.

    console = Console(client)                 # a client of the cluster, read-only use
    console.observe(manager, "kube-controller-manager")
    url = await console.start()               # http://127.0.0.1:<port>/#login=<token>
    ...
    await console.stop()

Endpoints (all GET but the login; docs/devcluster.md, "Console"):

- `/api/overview`: namespaces, and every kind with its count (in all and per namespace);
- `/api/list?kind=apps/v1/Deployment&namespace=ns`: a kind's objects with the printer
  columns the API server gives kubectl (a Table);
- `/api/object?kind=...&namespace=...&name=...`: one object (YAML with managedFields folded,
  its managers, conditions, Events, ownership graph and garbage-collection state);
- `/api/timeline`: every reconcile and change kept (the bounded history);
- `/api/stream`: Server-Sent Events: `timeline` (the whole history, first), then `entries`
  (timeline entries added or changed) and `changes` (objects the watch saw change), a batch
  at most every quarter second.

Nothing the console serves changes the cluster: it reads through its client (get, list,
watch) and offers no route that writes.
"""

from __future__ import annotations

import asyncio
import importlib.resources
import logging
import mimetypes
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from kubeforge._client.client import Client
from kubeforge._client.errors import ApiError, NotFound
from kubeforge._console.auth import ConsoleAuth, security_headers
from kubeforge._console.mirror import ClusterMirror
from kubeforge._console.objects import describe
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.metricsauth import MetricsAuth
from kubeforge._runtime.timeline import DEFAULT_CAPACITY, Change, Timeline

__all__ = ["FLUSH_SECONDS", "Console"]

log = logging.getLogger("kubeforge.console")

FLUSH_SECONDS = 0.25
HEARTBEAT_SECONDS = 15.0
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
LIST_LIMIT = 1000
LOOPBACK = "127.0.0.1"
STATIC = importlib.resources.files("kubeforge._console") / "static"
_STATIC_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}


class Console:
    """The web view of one cluster (`client`, whose credentials it reads with) and of the
    managers it observes."""

    def __init__(
        self,
        client: Client,
        *,
        history: int = DEFAULT_CAPACITY,
        port: int = 0,
        reviews: bool = True,
        title: str = "kubeforge",
    ) -> None:
        self.client = client
        self.timeline = Timeline(history)
        self.mirror = ClusterMirror(client, self.timeline)
        self.port = port
        self.title = title
        self.auth = ConsoleAuth(MetricsAuth(client) if reviews else None)
        self.managers: list[str] = []
        self._runner: web.AppRunner | None = None
        self._streams: set[asyncio.Task[Any]] = set()
        self.url = ""

    @property
    def login_url(self) -> str:
        """The link that logs a browser in."""
        return f"{self.url}/#login={self.auth.login_token}"

    def observe(self, manager: Manager, name: str) -> None:
        """Put `manager`'s reconciles on the timeline, as `name`."""
        self.managers.append(name)
        manager.add_observer(self.timeline.observer(name))

    async def start(self) -> str:
        """Watch the cluster and serve on loopback; returns the login link."""
        await self.mirror.start()
        app = web.Application(middlewares=[self.auth.middleware])
        app.on_response_prepare.append(_headers)
        app.router.add_get("/", self._index)
        app.router.add_get("/static/{name}", self._static)
        app.router.add_post("/api/session", self._login)
        app.router.add_get("/api/overview", self._overview)
        app.router.add_get("/api/list", self._list)
        app.router.add_get("/api/object", self._object)
        app.router.add_get("/api/timeline", self._timeline)
        app.router.add_get("/api/stream", self._stream)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, LOOPBACK, self.port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            await self.mirror.stop()
            raise
        self._runner = runner
        port = int(runner.addresses[0][1])
        self.auth.serving(port)
        self.url = f"http://{LOOPBACK}:{port}"
        return self.login_url

    async def stop(self) -> None:
        """Stop serving and watching, and close the client."""
        for task in list(self._streams):
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.mirror.stop()
        await self.client.close()

    # the page ---------------------------------------------------------------------------------

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return _asset("index.html")

    async def _static(self, request: web.Request) -> web.StreamResponse:
        return _asset(request.match_info["name"])

    async def _login(self, request: web.Request) -> web.StreamResponse:
        if request.content_type != "application/json":
            return web.json_response({"message": "send the token as JSON"}, status=415)
        try:
            body = await request.json(loads=orjson.loads)
        except ValueError:
            body = None
        token = body.get("token") if isinstance(body, dict) else None
        session = self.auth.login(token) if isinstance(token, str) else None
        if session is None:
            message = {"message": "that login link is not this console's"}
            return web.json_response(message, status=401)
        response = web.json_response({"title": self.title})
        self.auth.set_session(response, session)
        return response

    # data -------------------------------------------------------------------------------------

    async def _overview(self, request: web.Request) -> web.StreamResponse:
        overview = self.mirror.overview()
        overview.update(
            title=self.title,
            cluster=self.client.config.server,
            managers=self.managers,
            history=self.timeline.capacity,
        )
        return _json(overview)

    async def _list(self, request: web.Request) -> web.StreamResponse:
        kind = self.mirror.kind(request.query.get("kind", ""))
        if kind is None:
            return _json({"message": "no such kind"}, status=404)
        namespace = request.query.get("namespace") or None
        resource = kind.resource
        path = resource.path(namespace if resource.namespaced else None)
        try:
            reply = await self.client.transport.request(
                "GET", path, params={"limit": str(LIST_LIMIT)}, accept=TABLE
            )
        except ApiError as exc:
            return _json({"message": str(exc)}, status=exc.code if exc.code >= 400 else 502)
        table = reply.json()
        columns = [
            {
                "name": c.get("name", ""),
                "type": c.get("type", ""),
                "priority": c.get("priority", 0),
                "description": c.get("description", ""),
            }
            for c in table.get("columnDefinitions") or []
        ]
        rows = []
        for row in table.get("rows") or []:
            meta = (row.get("object") or {}).get("metadata") or {}
            rows.append(
                {
                    "namespace": meta.get("namespace") or "",
                    "name": meta.get("name") or "",
                    "cells": row.get("cells") or [],
                }
            )
        more = bool((table.get("metadata") or {}).get("continue"))
        return _json({"kind": kind.key, "columns": columns, "rows": rows, "more": more})

    async def _object(self, request: web.Request) -> web.StreamResponse:
        kind = self.mirror.kind(request.query.get("kind", ""))
        name = request.query.get("name", "")
        if kind is None or not name:
            return _json({"message": "name a kind and an object"}, status=400)
        namespace = request.query.get("namespace", "") if kind.resource.namespaced else ""
        try:
            obj = await self.client.get(kind.key, name, namespace=namespace or None)
        except NotFound:
            return _json({"message": f"{kind.resource.kind} {name} not found"}, status=404)
        except ApiError as exc:
            return _json({"message": str(exc)}, status=exc.code if exc.code >= 400 else 502)
        return _json(describe(self.mirror, kind.key, obj))

    async def _timeline(self, request: web.Request) -> web.StreamResponse:
        return _json(self.timeline.document())

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
        )
        await response.prepare(request)
        task = asyncio.current_task()
        assert task is not None
        self._streams.add(task)
        stream = _Stream(self.timeline, self.mirror)
        try:
            await stream.run(response.write)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            stream.close()
            self._streams.discard(task)
        return response


class _Stream:
    """One browser's live feed: what changed since the last batch."""

    def __init__(self, timeline: Timeline, mirror: ClusterMirror) -> None:
        self.timeline = timeline
        self.mirror = mirror
        self.dirty: set[int] = set()
        self.changes: list[dict[str, str]] = []
        self.wake = asyncio.Event()
        self.loop = asyncio.get_running_loop()
        timeline.subscribe(self._entry)
        mirror.subscribe(self._change)

    def _entry(self, seq: int) -> None:
        # Called under the timeline's lock, possibly from a reconciler's thread.
        self.dirty.add(seq)
        if not self.wake.is_set():
            self.loop.call_soon_threadsafe(self.wake.set)

    def _change(self, change: Change) -> None:
        if len(self.changes) < 2000:
            self.changes.append(
                {
                    "type": change.type,
                    "kind": change.kind,
                    "namespace": change.namespace,
                    "name": change.name,
                    "rv": change.resource_version,
                }
            )
        self.wake.set()

    def close(self) -> None:
        self.timeline.unsubscribe(self._entry)
        self.mirror.unsubscribe(self._change)

    async def run(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        await write(_event("timeline", self.timeline.document()))
        while True:
            try:
                await asyncio.wait_for(self.wake.wait(), HEARTBEAT_SECONDS)
            except TimeoutError:
                await write(b": still here\n\n")
                continue
            # A batch at most every FLUSH_SECONDS, whatever the rate of changes.
            await asyncio.sleep(FLUSH_SECONDS)  # real time: it paces a network stream
            self.wake.clear()
            seqs, self.dirty = self.dirty, set()
            changes, self.changes = self.changes, []
            if seqs:
                await write(_event("entries", {"entries": self.timeline.entries(seqs)}))
            if changes:
                await write(_event("changes", {"changes": changes}))


def _event(name: str, data: Any) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


def _asset(name: str) -> web.StreamResponse:
    if "/" in name or name.startswith("."):
        raise web.HTTPNotFound()
    resource = STATIC / name
    if not resource.is_file():
        raise web.HTTPNotFound()
    suffix = "." + name.rpartition(".")[2]
    content_type = _STATIC_TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "text/plain"
    response = web.Response(body=resource.read_bytes(), content_type=content_type)
    response.headers["Cache-Control"] = "no-cache"
    return response


async def _headers(request: web.Request, response: web.StreamResponse) -> None:
    security_headers(response)
