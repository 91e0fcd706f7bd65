"""Paths inside a pod's sandbox that never lead out of it.

The sandbox (containers.py) holds what a pod's volumes contain and each container's tree of
mount points. The names come from the pod spec (item paths, subPaths, mount paths), and the
directories are shared with the containers' processes, which may replace any of them with a
symbolic link. The API server refuses absolute paths and `..` in the first place
(_apiserver/types/validation/core_pods.py); here a path is checked again as the kubelet's atomic
writer checks it (pkg/volume/util/atomic_writer.go, validatePath), and directories are opened
one component at a time relative to their parent without following links, as the kubelet
prepares a subPath (pkg/volume/util/subpath/subpath_linux.go): a link planted on the way is
refused, never followed, even if it appears after a check.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "UnsafePath",
    "directory_within",
    "link_within",
    "make_directory_within",
    "relative_parts",
    "write_within",
]

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(OSError):
    """A path that would lead outside the directory it is meant for; nothing was written."""


def relative_parts(path: str) -> list[str]:
    """The components of `path`, a relative path that stays below its directory.

    UnsafePath for an empty or absolute path, one with a `..` element or starting with `..`
    (kept for the writer's own entries), or one with a NUL byte.
    """
    if not path or "\0" in path:
        raise UnsafePath(f"invalid path: must not be empty: {path!r}")
    if path.startswith("/"):
        raise UnsafePath(f"invalid path: must be relative path: {path}")
    parts = path.split("/")
    if ".." in parts:
        raise UnsafePath(f"invalid path: must not contain '..': {path}")
    if parts[0].startswith(".."):
        raise UnsafePath(f"invalid path: must not start with '..': {path}")
    kept = [p for p in parts if p not in ("", ".")]
    if not kept:
        raise UnsafePath(f"invalid path: must name a file: {path}")
    return kept


@contextlib.contextmanager
def _walk(base: Path, parts: Sequence[str]) -> Iterator[int]:
    """An open descriptor of `base/parts...`, each directory made (0700) when missing and
    opened relative to its parent without following a link."""
    fd = os.open(base, _DIRECTORY)
    try:
        for part in parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            try:
                child = os.open(part, _DIRECTORY, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePath(f"{base}: {'/'.join(parts)}: not a directory") from exc
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _confined(boundary: Path, path: Path) -> tuple[Path, tuple[str, ...]]:
    """`boundary` with its links followed, and the components of `path` below it (links
    followed too); UnsafePath when `path` leads outside it."""
    real_boundary = boundary.resolve()
    real = path.resolve()
    if real != real_boundary and real_boundary not in real.parents:
        raise UnsafePath(f"{path} leads outside {boundary}")
    return real_boundary, real.relative_to(real_boundary).parts


@contextlib.contextmanager
def directory_within(boundary: Path, path: Path) -> Iterator[int]:
    """An open descriptor of the directory `path` (made when missing), which must lie within
    `boundary` once its links are followed."""
    real_boundary, parts = _confined(boundary, path)
    with _walk(real_boundary, parts) as fd:
        yield fd


def make_directory_within(boundary: Path, path: Path) -> None:
    """Make the directory `path` (and those above it) when missing; it must lie within
    `boundary` once its links are followed."""
    with directory_within(boundary, path):
        pass


def write_within(base: Path, path: str, content: bytes) -> None:
    """Write `content` to `base/path` (a relative path: see `relative_parts`), replacing the
    file atomically; the file is private to this user (0600). No link is followed: one
    anywhere on the way, `base` excepted, is an UnsafePath."""
    parts = relative_parts(path)
    with _walk(base, parts[:-1]) as fd:
        temporary = f".write-{secrets.token_hex(8)}"
        out = os.open(temporary, _NEW_FILE, 0o600, dir_fd=fd)
        try:
            with os.fdopen(out, "wb") as stream:
                stream.write(content)
            os.replace(temporary, parts[-1], src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=fd)
            raise


def link_within(boundary: Path, link: Path, target: Path) -> None:
    """Make `link` a symbolic link to `target`, replacing what is there. The directory that
    holds it must lie within `boundary` once its links are followed (so a mount may sit inside
    another mount's volume, never outside the sandbox)."""
    with directory_within(boundary, link.parent) as fd:
        name = link.name
        try:
            found = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISDIR(found.st_mode):
                # rmtree with a dir_fd follows no link, whatever the tree holds.
                shutil.rmtree(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
        os.symlink(target, name, dir_fd=fd)
