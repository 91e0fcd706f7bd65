"""The SQLite backend: objects, revisions and watch history survive a restart."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from kubeforge._apiserver.storage.persistence import DataDirInUse, SQLiteBackend
from kubeforge._apiserver.storage.store import Expired, Store
from kubeforge._apiserver.types.resource import GroupResource

CM = GroupResource("", "configmaps")


def obj(name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns"},
        "data": data,
    }


def test_objects_and_revision_survive(tmp_path: Path) -> None:
    store = Store(backend=SQLiteBackend(tmp_path))
    a = store.create(CM, obj("a", v="1"))
    b = store.create(CM, obj("b"))
    store.update(CM, {**a.thaw(), "data": {"v": "2"}}, a)
    store.delete(CM, b)
    revision = store.revision
    assert store.backend is not None
    store.backend.close()  # type: ignore[attr-defined]

    reopened = Store(backend=SQLiteBackend(tmp_path))
    assert reopened.revision == revision
    items, _ = reopened.current(CM)
    assert [(o.key[1], o.obj["data"]) for o in items] == [("a", {"v": "2"})]
    again = reopened.create(CM, obj("c"))
    assert again.rv == revision + 1  # revisions continue upward


async def test_a_watch_resumes_across_a_restart(tmp_path: Path) -> None:
    store = Store(backend=SQLiteBackend(tmp_path))
    first = store.create(CM, obj("a"))
    seen_rv = first.rv
    later = store.create(CM, obj("b"))
    store.update(CM, {**later.thaw(), "data": {"x": "1"}}, later)
    store.backend.close()  # type: ignore[union-attr]

    reopened = Store(backend=SQLiteBackend(tmp_path))
    watcher = reopened.watch(CM, None, None, since=seen_rv)
    batch = await watcher.next_batch(1.0)
    assert [(seen, e.new.key[1]) for e, seen in batch] == [("ADDED", "b"), ("MODIFIED", "b")]
    assert batch[1][0].old is not None  # the previous state came back too


def test_history_older_than_the_log_is_expired(tmp_path: Path) -> None:
    backend = SQLiteBackend(tmp_path, history=10)
    store = Store(backend=backend)
    for i in range(1200):
        store.create(CM, obj(f"o{i}"))
    backend.close()
    reopened = Store(backend=SQLiteBackend(tmp_path, history=10))
    with pytest.raises(Expired):
        reopened.watch(CM, None, None, since=1)
    assert len(reopened.current(CM)[0]) == 1200


def test_one_data_directory_serves_one_process_at_a_time(tmp_path: Path) -> None:
    first = SQLiteBackend(tmp_path)
    with pytest.raises(DataDirInUse, match="in use by another kubeforge process"):
        SQLiteBackend(tmp_path)
    first.close()
    second = SQLiteBackend(tmp_path)  # free again once the holder has closed it
    second.close()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_database_and_its_directory_are_private(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    backend = SQLiteBackend(directory)
    store = Store(backend=backend)
    store.create(CM, obj("secretish", password="hunter2"))
    database = directory / "kubeforge.db"
    files = [database, directory / "kubeforge.db-wal", directory / "kubeforge.db-shm"]
    assert all(f.exists() for f in files)  # WAL mode keeps all three while open
    assert mode(directory) == 0o700
    assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
    backend.close()


def test_files_an_earlier_run_left_readable_are_narrowed(tmp_path: Path) -> None:
    backend = SQLiteBackend(tmp_path)
    Store(backend=backend).create(CM, obj("a"))
    backend.close()
    for name in ("kubeforge.db", "kubeforge.db-wal", "kubeforge.db-shm"):
        if (tmp_path / name).exists():
            (tmp_path / name).chmod(0o644)
    reopened = SQLiteBackend(tmp_path)
    for name in ("kubeforge.db", "kubeforge.db-wal", "kubeforge.db-shm"):
        if (tmp_path / name).exists():
            assert mode(tmp_path / name) == 0o600, name
    reopened.close()
