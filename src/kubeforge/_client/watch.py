"""Decoding watch streams: one JSON event per line, BOOKMARKs, and ERROR events.

An ERROR event with code 410 (the resourceVersion is older than the server's history) is
raised as `Gone`, so callers can tell "re-list" apart from other failures.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from kubeforge._client.errors import error_from_status
from kubeforge._client.transport import Transport

__all__ = ["WatchEvent", "watch_events"]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change: ADDED, MODIFIED, DELETED, or BOOKMARK (object carries only a resourceVersion)."""

    type: str
    object: dict[str, Any]

    @property
    def resource_version(self) -> str:
        return str((self.object.get("metadata") or {}).get("resourceVersion") or "")


async def watch_events(
    transport: Transport,
    path: str,
    params: Mapping[str, str],
    *,
    idle_timeout: float | None = None,
    accept: str | None = None,
) -> AsyncIterator[WatchEvent]:
    """Stream the events of a watch request until the server ends it.

    Raises Gone for an expired resourceVersion and ApiError for other ERROR events.
    `idle_timeout` ends a stream that has been silent that long (a dead connection).
    """
    async with transport.stream(
        "GET", path, params=params, timeout=idle_timeout, accept=accept
    ) as resp:
        buffer = b""
        async for chunk in resp.content.iter_any():
            buffer += chunk
            if b"\n" not in chunk:
                continue
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    yield _decode(line)
        if buffer.strip():
            yield _decode(buffer)


def _decode(line: bytes) -> WatchEvent:
    event = orjson.loads(line)
    kind = event.get("type")
    obj = event.get("object")
    if not isinstance(obj, dict) or not isinstance(kind, str):
        raise ValueError(f"malformed watch event: {line[:200]!r}")
    if kind == ERROR:
        code = obj.get("code")
        raise error_from_status(code if isinstance(code, int) else 500, obj)
    return WatchEvent(kind, obj)
