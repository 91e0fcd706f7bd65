"""Container logs of the simulated nodes, served through the API server's `pods/log`.

Each container keeps the output of its current run and of the run before it (what
`kubectl logs --previous` shows), line by line with the time each line was written. A run
keeps its newest `max_bytes` (1 MiB by default); older lines are dropped, as a node's log
rotation would. Followers of a run are woken as lines arrive and stop when it ends.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterable

from kubeforge import clock
from kubeforge._api.machinery.timestamps import format_nano_time
from kubeforge._apiserver.handlers.pods import LogRequest

__all__ = ["MAX_BYTES", "PodLogs"]

MAX_BYTES = 1 << 20
# A line longer than this is stored in pieces (the container runtime splits them too).
_MAX_LINE = 16 * 1024


def _now_ns() -> int:
    """The process's clock in nanoseconds since the epoch: when a line was written."""
    return int(clock.time() * 1_000_000_000)


_Entry = tuple[int, bytes]  # (wall-clock nanoseconds, the line with its newline)


class _Run:
    """The output of one run of a container."""

    __slots__ = ("changed", "ended", "first", "lines", "max_bytes", "partial", "size")

    def __init__(self, max_bytes: int) -> None:
        self.lines: deque[_Entry] = deque()
        self.first = 0  # sequence number of lines[0]
        self.size = 0
        self.max_bytes = max_bytes
        self.partial = b""  # output after the last newline, not yet a line
        self.ended = False
        # What followers wait on, made when one does (most runs never have a follower).
        self.changed: asyncio.Event | None = None

    @property
    def end(self) -> int:
        """The sequence number the next line will get."""
        return self.first + len(self.lines)

    def append(self, data: bytes) -> None:
        if self.ended or not data:
            return
        now = _now_ns()
        data = self.partial + data
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                break
            self._add(now, data[start : newline + 1])
            start = newline + 1
        rest = data[start:]
        while len(rest) >= _MAX_LINE:
            self._add(now, rest[:_MAX_LINE])
            rest = rest[_MAX_LINE:]
        self.partial = rest
        self._wake()

    def finish(self) -> None:
        if self.ended:
            return
        if self.partial:
            self._add(_now_ns(), self.partial)
            self.partial = b""
        self.ended = True
        self._wake()

    def _add(self, stamp: int, line: bytes) -> None:
        self.lines.append((stamp, line))
        self.size += len(line)
        while self.size > self.max_bytes and len(self.lines) > 1:
            _, dropped = self.lines.popleft()
            self.size -= len(dropped)
            self.first += 1

    def _wake(self) -> None:
        # Followers hold the old event; a fresh one serves the next change.
        if self.changed is not None:
            self.changed.set()
            self.changed = None

    def next_change(self) -> asyncio.Event:
        """What is set at the next change of the run (new lines, or its end)."""
        if self.changed is None:
            self.changed = asyncio.Event()
        return self.changed

    def since(self, seq: int) -> list[_Entry]:
        """Lines from sequence number `seq` on (or from the oldest one kept)."""
        skip = max(seq - self.first, 0)
        if skip == 0:
            return list(self.lines)
        return [self.lines[i] for i in range(skip, len(self.lines))]


class _Container:
    __slots__ = ("current", "previous")

    def __init__(self) -> None:
        self.current: _Run | None = None
        self.previous: _Run | None = None


def _stamp(nanos: int) -> bytes:
    """RFC 3339 with nanoseconds, as the kubelet prefixes lines with `timestamps=true`."""
    return f"{format_nano_time(nanos)} ".encode()


class PodLogs:
    """In-memory logs of every container of the cluster: the API server's log source."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._pods: dict[tuple[str, str], dict[str, _Container]] = {}
        self._closed = False

    # writing -----------------------------------------------------------------------------

    def _container(self, namespace: str, pod: str, container: str) -> _Container:
        containers = self._pods.setdefault((namespace, pod), {})
        record = containers.get(container)
        if record is None:
            record = containers[container] = _Container()
        return record

    def start(self, namespace: str, pod: str, container: str) -> None:
        """A new run of a container begins; the last one becomes its previous run."""
        record = self._container(namespace, pod, container)
        if record.current is not None:
            record.current.finish()
            record.previous = record.current
        record.current = _Run(self.max_bytes)

    def write(self, namespace: str, pod: str, container: str, data: bytes) -> None:
        """Output of a container's current run (ignored when no run has started)."""
        record = self._pods.get((namespace, pod), {}).get(container)
        if record is not None and record.current is not None:
            record.current.append(data)

    def end(self, namespace: str, pod: str, container: str) -> None:
        """The container's current run is over: followers finish."""
        record = self._pods.get((namespace, pod), {}).get(container)
        if record is not None and record.current is not None:
            record.current.finish()

    def drop(self, namespace: str, pod: str) -> None:
        """Forget a deleted pod's logs (its followers finish)."""
        for record in self._pods.pop((namespace, pod), {}).values():
            for run in (record.current, record.previous):
                if run is not None:
                    run.finish()

    def close(self) -> None:
        """End every follower (the cluster is shutting down)."""
        self._closed = True
        for containers in self._pods.values():
            for record in containers.values():
                if record.current is not None:
                    record.current.finish()

    # reading -----------------------------------------------------------------------------

    def text(self, namespace: str, pod: str, container: str, *, previous: bool = False) -> str:
        """A run's whole log as text ("" when there is none)."""
        record = self._pods.get((namespace, pod), {}).get(container)
        run = None if record is None else (record.previous if previous else record.current)
        if run is None:
            return ""
        return (b"".join(line for _, line in run.lines) + run.partial).decode(errors="replace")

    def has(self, namespace: str, pod: str) -> bool:
        """Whether any log of the pod is kept."""
        return (namespace, pod) in self._pods

    async def stream(self, request: LogRequest) -> AsyncIterator[bytes]:
        """The log `request` asks for; with `follow`, new lines until the run ends."""
        record = self._pods.get((request.namespace, request.pod), {}).get(request.container)
        if record is None:
            return
        run = record.previous if request.previous else record.current
        if run is None:
            return
        budget = request.limit_bytes if request.limit_bytes and request.limit_bytes > 0 else -1
        entries = run.since(run.first)
        if request.since_seconds is not None and request.since_seconds > 0:
            cutoff = _now_ns() - request.since_seconds * 1_000_000_000
            entries = [e for e in entries if e[0] >= cutoff]
        if request.tail_lines is not None and request.tail_lines >= 0:
            entries = entries[len(entries) - request.tail_lines :] if request.tail_lines else []
        position = run.end
        chunk, budget = _render(entries, request.timestamps, budget)
        if chunk:
            yield chunk
        if not request.follow or request.previous or budget == 0:
            return
        while not self._closed:
            changed = run.next_change()
            if run.end > position:
                entries = run.since(position)
                position = run.end
                chunk, budget = _render(entries, request.timestamps, budget)
                if chunk:
                    yield chunk
                if budget == 0:
                    return
                continue
            if run.ended:
                return
            await changed.wait()


def _render(entries: Iterable[_Entry], timestamps: bool, budget: int) -> tuple[bytes, int]:
    """Lines as sent (with timestamps when asked), cut to `budget` bytes (-1: no limit)."""
    if timestamps:
        data = b"".join(_stamp(stamp) + line for stamp, line in entries)
    else:
        data = b"".join(line for _, line in entries)
    if budget < 0:
        return data, budget
    data = data[:budget]
    return data, budget - len(data)
