"""Logging during a reconcile: which controller, which object, which pass.

The controller marks each reconcile with a context (controller, the object's kind, namespace
and name, and a reconcile id, as controller-runtime's logger carries them; on a record they
are `controller`, `object_kind`, `object_namespace`, `object_name` and `reconcile_id`, as
`name` already means the logger's name; a multicluster controller's records also carry
`cluster`, the name of the cluster the object is in, when it is not the local one).
`reconcile_logger()` (and `Reconciler.log`) add those fields to every record; with
`configure_logging()` every record logged during a reconcile carries them, whichever logger
wrote it (the context follows the reconcile into the tasks it starts and the thread a plain
`def` reconciler runs in).
`configure_logging("json")` writes one JSON object per line, what log collectors expect.
"""

from __future__ import annotations

import contextvars
import logging
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

import orjson

__all__ = [
    "CONTEXT_FIELDS",
    "JSONFormatter",
    "LogFormat",
    "ReconcileContext",
    "ReconcileContextFilter",
    "ReconcileLogger",
    "TextFormatter",
    "configure_logging",
    "current_reconcile",
    "extra_fields",
    "reconcile_logger",
]

LogFormat = Literal["text", "json"]

CONTEXT_FIELDS = (
    "controller",
    "object_kind",
    "object_namespace",
    "object_name",
    "reconcile_id",
    "cluster",
)
"""The record attributes a reconcile's log records carry."""


@dataclass(frozen=True, slots=True)
class ReconcileContext:
    """The reconcile in progress: its controller, the object's kind, namespace and name, an
    id unique to this pass and, in a multicluster controller, the object's cluster (empty:
    the local one)."""

    controller: str
    kind: str
    namespace: str
    name: str
    reconcile_id: str
    cluster: str = ""

    @property
    def object(self) -> str:
        """`namespace/name` (or the name of a cluster-scoped object)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def fields(self) -> dict[str, str]:
        """The record attributes (CONTEXT_FIELDS) and their values (`cluster` only when set)."""
        fields = {
            "controller": self.controller,
            "object_kind": self.kind,
            "object_namespace": self.namespace,
            "object_name": self.name,
            "reconcile_id": self.reconcile_id,
        }
        if self.cluster:
            fields["cluster"] = self.cluster
        return fields


_current: contextvars.ContextVar[ReconcileContext | None] = contextvars.ContextVar(
    "kubeforge_reconcile", default=None
)


def current_reconcile() -> ReconcileContext | None:
    """The reconcile running in this task or thread, if any."""
    return _current.get()


@contextmanager
def reconciling(context: ReconcileContext) -> Iterator[None]:
    """Mark the code inside as part of the reconcile `context`."""
    token = _current.set(context)
    try:
        yield
    finally:
        _current.reset(token)


class ReconcileLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger whose records carry the running reconcile's fields (see the module)."""

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        context = _current.get()
        if context is not None:
            extra = dict(kwargs.get("extra") or {})
            for key, value in context.fields().items():
                extra.setdefault(key, value)
            kwargs["extra"] = extra
        return msg, kwargs


def reconcile_logger(name: str = "kubeforge.reconcile") -> ReconcileLogger:
    """A logger named `name` that tags each record with the running reconcile."""
    return ReconcileLogger(logging.getLogger(name), {})


class ReconcileContextFilter(logging.Filter):
    """Adds the running reconcile's fields to records that lack them (put it on a handler)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = _current.get()
        if context is not None:
            for key, value in context.fields().items():
                if not hasattr(record, key):
                    setattr(record, key, value)
        return True


def _context_of(record: logging.LogRecord) -> dict[str, str]:
    return {key: str(value) for key in CONTEXT_FIELDS if (value := getattr(record, key, None))}


class TextFormatter(logging.Formatter):
    """`time level logger: message`, then the reconcile's fields as `key=value`."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        context = _context_of(record)
        if not context:
            return text
        suffix = " ".join(f"{key}={value}" for key, value in context.items())
        head, sep, rest = text.partition("\n")  # keep a traceback below the line
        return f"{head} {suffix}{sep}{rest}"


# LogRecord attributes that are not user fields.
_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The fields a record was given beyond the standard ones (`extra=`, reconcile fields)."""
    return {
        key: value
        for key, value in vars(record).items()
        if key not in _RECORD_ATTRIBUTES and not key.startswith("_")
    }


class JSONFormatter(logging.Formatter):
    """One JSON object per record: `time` (RFC 3339, UTC), `level`, `logger`, `message`, the
    reconcile's fields, any `extra` fields, and `error` with the traceback of an exception."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC)
        entry: dict[str, Any] = {
            "time": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in extra_fields(record).items():
            entry.setdefault(key, value)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["error"] = record.exc_text
        return orjson.dumps(entry, default=str).decode()


def configure_logging(
    format: LogFormat = "text",
    *,
    level: int | str = logging.INFO,
    stream: TextIO | None = None,
    levels: Mapping[str, int | str] | None = None,
) -> logging.Handler:
    """Send the root logger's records to `stream` (stderr) as text or JSON lines, each
    tagged with the running reconcile; returns the handler. Replaces the root's handlers."""
    if format not in ("text", "json"):
        raise ValueError(f"log format must be text or json, not {format!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JSONFormatter() if format == "json" else TextFormatter())
    handler.addFilter(ReconcileContextFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name, value in (levels or {}).items():
        logging.getLogger(name).setLevel(value)
    return handler
