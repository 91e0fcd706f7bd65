"""The few git commands re-scaffolding needs: whether a project is in a work tree and has
uncommitted changes, which files are the project's, and git's three-way file merge."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["GitError", "changes", "is_work_tree", "listed_files", "merge_file"]

# Real timeouts: git runs on files, not on the program's clock.
_TIMEOUT = 120


class GitError(RuntimeError):
    """git is missing or failed; the message says which command."""


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, timeout=_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]}: {exc}") from None
    if check and done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()
        raise GitError(f"git {' '.join(args)}: {said or f'exit status {done.returncode}'}")
    return done


def is_work_tree(root: Path) -> bool:
    """Whether `root` is in a git work tree."""
    try:
        done = _git(root, "rev-parse", "--is-inside-work-tree", check=False)
    except GitError:
        return False
    return done.returncode == 0 and done.stdout.strip() == b"true"


def changes(root: Path) -> list[str]:
    """What `git status` lists under `root` (changed, staged and untracked files, not the
    ignored ones), one `XY path` line each; empty when the tree is clean there."""
    done = _git(root, "status", "--porcelain", "--untracked-files=all", "--", ".")
    return [line for line in done.stdout.decode(errors="replace").splitlines() if line]


def listed_files(root: Path) -> list[str]:
    """The files under `root` that git tracks or would track (not ignored), relative to it."""
    done = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
    names = {name for name in done.stdout.decode().split("\0") if name}
    # A tracked file deleted from the work tree is not a file of the project any more.
    return sorted(name for name in names if (root / name).is_file())


def merge_file(
    ours: Path, base: Path, theirs: Path, labels: tuple[str, str, str]
) -> tuple[bytes, int]:
    """git merge-file's three-way merge of the files: the result, and how many conflicts it
    marks (<<<<<<< ours-label, =======, >>>>>>> theirs-label, as `git merge` marks them)."""
    args = ["merge-file", "--stdout"]
    for label in labels:
        args += ["-L", label]
    done = _git(ours.parent, *args, str(ours), str(base), str(theirs), check=False)
    # The exit status is the number of conflicts (up to 127); a negative one is an error.
    if not 0 <= done.returncode <= 127:
        raise GitError(f"git merge-file {ours.name}: {done.stderr.decode(errors='replace')}")
    return done.stdout, done.returncode
