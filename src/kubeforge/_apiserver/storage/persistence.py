"""Durable storage under the API server's store: SQLite in WAL mode.

Every committed write is one SQLite transaction (the object row, the revision, and an
event-log row) made before the write is acknowledged. In WAL mode with `synchronous=NORMAL`
a committed transaction survives the process being killed (the operating system still
writes it out); only a power loss could take back the last few. The event log keeps the
recent history, so after a restart a watch resumes from its last resourceVersion without
missing anything, and revisions continue upward.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import stat
from collections.abc import Iterable
from pathlib import Path

from kubeforge._apiserver.types.resource import GroupResource

__all__ = ["DataDirInUse", "SQLiteBackend", "StoredEvent"]

log = logging.getLogger("kubeforge.apiserver")

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (resource, namespace, name)
);
CREATE TABLE IF NOT EXISTS events (
    revision INTEGER PRIMARY KEY,
    resource TEXT NOT NULL,
    type TEXT NOT NULL,
    data BLOB NOT NULL,
    previous BLOB
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""

# An event as persisted: (revision, group-resource, type, object bytes, previous bytes).
StoredEvent = tuple[int, GroupResource, str, bytes, bytes | None]


def _encode(gr: GroupResource) -> str:
    return f"{gr.group}/{gr.resource}"


def _decode(text: str) -> GroupResource:
    group, _, resource = text.rpartition("/")
    return GroupResource(group, resource)


def _private_directory(directory: Path) -> None:
    """Create the data directory for its owner only (0700). One that already exists keeps
    its mode, as etcd keeps its data directory's, with a warning when others may enter it."""
    if not directory.exists():
        directory.mkdir(mode=0o700, parents=True)
        directory.chmod(0o700)  # mkdir's mode passes through the umask
        return
    mode = stat.S_IMODE(directory.stat().st_mode)
    if mode & 0o077:
        log.warning(
            "data directory %s has mode %o; 0700 keeps the stored objects (Secrets among "
            "them) from other users",
            directory,
            mode,
        )


def _private_files(database: Path) -> None:
    """The database file for its owner only (0600) before SQLite opens it; SQLite gives its
    WAL and shared-memory files the database file's mode. Files left by an earlier run are
    narrowed to 0600 too."""
    fd = os.open(database, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)
    for path in (
        database,
        database.with_name(database.name + "-wal"),
        database.with_name(database.name + "-shm"),
    ):
        try:
            if stat.S_IMODE(path.stat().st_mode) != 0o600:
                path.chmod(0o600)
        except FileNotFoundError:
            pass


class DataDirInUse(RuntimeError):
    """Another process holds the data directory: two servers on one state would diverge."""


class SQLiteBackend:
    """Objects and recent events in one SQLite database file under `directory`."""

    def __init__(self, directory: str | Path, history: int = 10_000) -> None:
        self.path = Path(directory) / "kubeforge.db"
        _private_directory(self.path.parent)
        self.history = history
        # An exclusive lock for the life of this backend; the kernel drops it when the
        # process dies, even by kill -9, so a restart never finds a stale lock.
        self._lock = os.open(self.path.parent / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise DataDirInUse(
                f"{self.path.parent} is in use by another kubeforge process"
            ) from None
        _private_files(self.path)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._writes = 0

    def close(self) -> None:
        self._db.close()
        if self._lock >= 0:
            os.close(self._lock)  # releases the lock
            self._lock = -1

    def load(self) -> tuple[int, Iterable[tuple[GroupResource, bytes]]]:
        """The last revision and every stored object."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()
        revision = int(row[0]) if row else 0
        rows = self._db.execute("SELECT resource, data FROM objects").fetchall()
        return revision, [(_decode(resource), bytes(data)) for resource, data in rows]

    def load_events(self) -> list[StoredEvent]:
        """The kept history, oldest first."""
        rows = self._db.execute(
            "SELECT revision, resource, type, data, previous FROM events ORDER BY revision"
        ).fetchall()
        return [
            (int(rev), _decode(res), str(kind), bytes(data), None if prev is None else bytes(prev))
            for rev, res, kind, data, prev in rows
        ]

    def write(
        self,
        gr: GroupResource,
        key: tuple[str, str],
        raw: bytes | None,
        revision: int,
        event_type: str,
        event_data: bytes,
        previous: bytes | None,
    ) -> None:
        """Persist one committed change atomically (raw None: the object was deleted)."""
        db = self._db
        resource = _encode(gr)
        db.execute("BEGIN")
        try:
            if raw is None:
                db.execute(
                    "DELETE FROM objects WHERE resource = ? AND namespace = ? AND name = ?",
                    (resource, key[0], key[1]),
                )
            else:
                db.execute(
                    "INSERT OR REPLACE INTO objects (resource, namespace, name, data) "
                    "VALUES (?, ?, ?, ?)",
                    (resource, key[0], key[1], raw),
                )
            db.execute(
                "INSERT INTO events (revision, resource, type, data, previous) "
                "VALUES (?, ?, ?, ?, ?)",
                (revision, resource, event_type, event_data, previous),
            )
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('revision', ?)", (revision,)
            )
            self._writes += 1
            if self._writes % 1000 == 0:
                # Keep the event log bounded (a little more than the in-memory history).
                db.execute("DELETE FROM events WHERE revision <= ?", (revision - self.history,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
