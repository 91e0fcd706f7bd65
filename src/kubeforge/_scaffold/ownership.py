"""Which of a project's files the scaffold owns, and which are the project's own.

`kubeforge alpha generate` writes the scaffold again and carries the project's own files over
into it. The project owns:

- its code and tests: everything under `api/`, `controllers/`, `webhooks/`, `tests/` and
  `test/` (the kinds' types, the reconcilers, the webhooks, the tests and end-to-end tests,
  the packages' `__init__.py`), even where a command wrote the first version;
- its samples (`config/samples/`), `hack/` (the license header, its scripts) and the
  Grafana plugin's `grafana/custom-metrics/config.yaml`;
- every file the scaffold does not write (its own modules, docs, requirements.lock, ...).

The scaffold owns the rest of what `init`, `create api`, `create webhook` and the plugins
write: PROJECT, main.py, pyproject.toml, Makefile, Dockerfile, README.md, the dot files, the
kustomize tree under `config/`, the workflows, and the generated manifests and dashboards
(these are written again from the project's code). kubebuilder's `alpha generate` keeps only
PROJECT, the license header and the Grafana config (internal/cli/alpha/internal/generate.go);
kubeforge carries the project's code too, since a Python project's code sits in the same
tree as its scaffold.

A project's files are those git tracks or would track (not ignored) when it is in a git work
tree; elsewhere every file but those its .gitignore names (each pattern matched against
each part of the path, which is how the scaffold's .gitignore is written).
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from kubeforge._scaffold import git, grafana

__all__ = ["PROJECT_DIRECTORIES", "PROJECT_FILES", "is_project_owned", "project_files"]

PROJECT_DIRECTORIES = (
    "api/",
    "controllers/",
    "webhooks/",
    "tests/",
    "test/",
    "config/samples/",
    "hack/",
)
PROJECT_FILES = (grafana.CUSTOM_CONFIG,)


def is_project_owned(path: str, scaffolded: bool = True) -> bool:
    """Whether the file at `path` (relative, with `/`) is the project's own; `scaffolded`:
    whether the scaffold writes it."""
    return not scaffolded or path.startswith(PROJECT_DIRECTORIES) or path in PROJECT_FILES


def project_files(root: Path) -> list[str]:
    """The project's files under `root`, relative, sorted."""
    if git.is_work_tree(root):
        return git.listed_files(root)
    patterns = [".git", *_ignored(root)]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        relative = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames if not _matches(d, patterns))
        found += [
            (relative / name).as_posix() for name in filenames if not _matches(name, patterns)
        ]
    return sorted(found)


def _ignored(root: Path) -> list[str]:
    path = root / ".gitignore"
    if not path.is_file():
        return []
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line.strip("/") for line in lines if line and not line.startswith(("#", "!"))]


def _matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)
