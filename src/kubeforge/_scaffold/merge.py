"""The three-way merge of a scaffold's change into a project, file by file.

The base is the scaffold as the project's kubeforge release wrote it, theirs the scaffold as
the new release writes it, ours the project. For each path, as `git merge` decides between
the ancestor, upgrade and original branches that kubebuilder's `alpha update` builds
(internal/cli/alpha/internal/update/update.go):

- the scaffold did not change it (base = theirs): the project's file stays as it is;
- the project did not change it (ours = base): it becomes the new scaffold's (updated, added,
  or removed when the new scaffold has it no more);
- both changed it: `git merge-file` merges the two changes, and marks with <<<<<<<, =======
  and >>>>>>> the lines both changed differently (a conflict); a file both added is merged
  from an empty base. A file one side removed and the other changed is a conflict too: the
  project's file, or its absence, stays, and the conflict says what the other side did.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kubeforge._scaffold import git

__all__ = ["OUTCOMES", "MergedFile", "merge_trees"]

OUTCOMES = ("updated", "added", "removed", "merged", "conflict")


@dataclass(frozen=True)
class MergedFile:
    """What the merge does to one of the project's files."""

    path: str
    outcome: str
    """updated, added, removed (the new scaffold's, the project's being the old one's),
    merged (both changes, cleanly) or conflict."""
    content: bytes | None
    """The file's new content; None: the file is (or stays) absent."""
    note: str = ""


def _text(content: bytes) -> bool:
    return b"\0" not in content


def merge_trees(
    base: Mapping[str, bytes],
    theirs: Mapping[str, bytes],
    ours: Mapping[str, bytes],
    labels: tuple[str, str, str],
) -> list[MergedFile]:
    """What changes in `ours` (path -> content, each tree) to take the change from `base` to
    `theirs`; `labels` name ours, base and theirs in conflict markers. Paths the merge leaves
    as they are are not listed."""
    changed = []
    with tempfile.TemporaryDirectory(prefix="kubeforge-merge-") as scratch:
        for path in sorted(set(base) | set(theirs) | set(ours)):
            merged = _merge(
                path, base.get(path), theirs.get(path), ours.get(path), labels, Path(scratch)
            )
            if merged is not None:
                changed.append(merged)
    return changed


def _merge(
    path: str,
    b: bytes | None,
    t: bytes | None,
    o: bytes | None,
    labels: tuple[str, str, str],
    scratch: Path,
) -> MergedFile | None:
    if t == b or o == t:
        return None
    if o == b:
        if t is None:
            return MergedFile(path, "removed", None)
        return MergedFile(path, "added" if o is None else "updated", t)
    # Both changed it, differently.
    if t is None:
        return MergedFile(path, "conflict", o, "the new scaffold removes it; you changed it")
    if o is None:
        return MergedFile(path, "conflict", None, "you removed it; the new scaffold changes it")
    if not (_text(t) and _text(o) and _text(b or b"")):
        return MergedFile(path, "conflict", o, "binary: yours is kept")
    files = []
    for name, content in (("ours", o), ("base", b or b""), ("theirs", t)):
        file = scratch / name
        file.write_bytes(content)
        files.append(file)
    result, conflicts = git.merge_file(files[0], files[1], files[2], labels)
    if conflicts:
        return MergedFile(path, "conflict", result, f"{conflicts} conflicting change(s) marked")
    return MergedFile(path, "merged", result)
