"""The server under fuzzing: an embedded API server on its own thread, a blocking HTTPS client,
and one watch per collection that keeps what each object last looked like to a watcher."""

from __future__ import annotations

import asyncio
import http.client
import logging
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubeforge._apiserver.config import ServerConfig
from kubeforge.apiserver import APIServer

__all__ = ["Answer", "Client", "ServerThread", "Watcher", "wait_until"]


@dataclass
class Answer:
    status: int
    body: bytes
    audit_id: str

    def json(self) -> Any:
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError:
            return None


class _Failures(logging.Handler):
    """Keeps the server's error log records (a 500's traceback) by Audit-Id."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))

    def about(self, audit_id: str) -> str:
        return "\n".join(r for r in self.records if audit_id and audit_id in r)


class ServerThread:
    """An APIServer serving from a thread of its own, so that blocking clients (and
    Hypothesis, which runs examples synchronously) can drive it over real sockets."""

    def __init__(self, config: ServerConfig | None = None) -> None:
        self.config = config or ServerConfig()
        self.server: APIServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.failures = _Failures()
        self.failures.setFormatter(logging.Formatter("%(message)s"))
        self._context: ssl.SSLContext | None = None

    def __enter__(self) -> ServerThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        logging.getLogger("kubeforge.apiserver").addHandler(self.failures)
        self._thread = threading.Thread(target=self._run, name="fuzzed-apiserver", daemon=True)
        self._thread.start()
        if not self._ready.wait(60) or self._error is not None:
            raise RuntimeError(f"the API server did not start: {self._error!r}")
        assert self.server is not None and self.server.certificates is not None
        self._context = self.server.certificates.client_context()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self.server = APIServer(self.config)
            loop.run_until_complete(self.server.start())
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        loop.run_forever()
        loop.run_until_complete(self.server.stop())
        loop.close()

    def stop(self) -> None:
        logging.getLogger("kubeforge.apiserver").removeHandler(self.failures)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(30)

    @property
    def token(self) -> str:
        assert self.server is not None
        return self.server.token

    def connection(self, timeout: float = 30.0) -> http.client.HTTPSConnection:
        assert self.server is not None
        return http.client.HTTPSConnection(
            "127.0.0.1", self.server.port, context=self._context, timeout=timeout
        )


class Client:
    """Blocking HTTPS requests on one kept-alive connection (a new one after any failure)."""

    def __init__(self, target: ServerThread) -> None:
        self.target = target
        self._conn: http.client.HTTPSConnection | None = None
        self.sent = 0

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        content_type: str | None = None,
        *,
        read_body: bool = True,
        accept: str = "application/json",
    ) -> Answer:
        """One request; `read_body=False` (for watches) takes the head and drops the stream."""
        headers = {"Authorization": f"Bearer {self.target.token}", "Accept": accept}
        if content_type is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = self.target.connection()
            try:
                self._conn.request(method, target, body=body, headers=headers)
                reply = self._conn.getresponse()
                audit = reply.getheader("Audit-Id") or ""
                if not read_body and reply.status == 200:
                    # A stream: its head says the request was accepted; drop the connection.
                    self.close()
                    self.sent += 1
                    return Answer(200, b"", audit)
                data = reply.read()
                if reply.getheader("Connection", "").lower() == "close":
                    self.close()
                self.sent += 1
                return Answer(reply.status, data, audit)
            except (ConnectionError, http.client.HTTPException, OSError):
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


@dataclass
class _Seen:
    """What a watcher last saw of one object: its resourceVersion and body, or None once
    deleted."""

    objects: dict[tuple[str, str], dict[str, Any] | None] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class Watcher:
    """A watch on one whole collection (every namespace), from a list's resourceVersion, on
    a thread of its own; it resumes from the last event it saw when the server ends it."""

    def __init__(self, target: ServerThread, collection: str) -> None:
        self.target = target
        self.collection = collection
        self.seen = _Seen()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conn: http.client.HTTPSConnection | None = None
        listed = Client(target)
        reply = listed.request("GET", collection)
        listed.close()
        assert reply.status == 200, (collection, reply.body[:300])
        doc = orjson.loads(reply.body)
        for item in doc["items"]:
            meta = item["metadata"]
            self.seen.objects[(meta.get("namespace", ""), meta["name"])] = item
        self._rv = doc["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, name=f"watch {collection}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        conn = self._conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(2)
            except OSError:
                pass
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            conn = self.target.connection(timeout=3600)
            self._conn = conn
            try:
                conn.request(
                    "GET",
                    f"{self.collection}?watch=1&resourceVersion={self._rv}"
                    "&allowWatchBookmarks=true&timeoutSeconds=3600",
                    headers={"Authorization": f"Bearer {self.target.token}"},
                )
                reply = conn.getresponse()
                if reply.status != 200:
                    self._note(f"watch answered {reply.status}: {reply.read()[:300]!r}")
                    return
                while not self._stop.is_set():
                    line = reply.readline()
                    if not line:
                        break
                    if line.strip():
                        self._event(orjson.loads(line))
            except (OSError, http.client.HTTPException, ValueError) as exc:
                if not self._stop.is_set():
                    self._note(f"watch failed: {exc!r}")
                    time.sleep(0.1)
            finally:
                conn.close()

    def _note(self, problem: str) -> None:
        with self._lock:
            self.seen.errors.append(problem)

    def _event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        if kind == "ERROR":
            self._note(f"watch error event: {obj}")
            return
        rv = meta.get("resourceVersion")
        if rv:
            self._rv = rv
        if kind == "BOOKMARK":
            return
        key = (meta.get("namespace", ""), meta.get("name", ""))
        with self._lock:
            self.seen.objects[key] = None if kind == "DELETED" else obj

    def state(self, key: tuple[str, str]) -> dict[str, Any] | None:
        with self._lock:
            return self.seen.objects.get(key)

    def errors(self) -> list[str]:
        with self._lock:
            return list(self.seen.errors)


def wait_until(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll `check()` until true or `timeout` seconds pass; whether it came true."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
