"""Which files the scaffold owns and which are the project's, and which files a project has."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kubeforge._scaffold.ownership import is_project_owned, project_files


@pytest.mark.parametrize(
    "path",
    [
        "api/v1/frigate.py",
        "api/__init__.py",
        "controllers/frigate.py",
        "webhooks/v1/frigate.py",
        "tests/test_frigate.py",
        "test/e2e/test_e2e.py",
        "config/samples/ship_v1_frigate.yaml",
        "hack/boilerplate.py.txt",
        "grafana/custom-metrics/config.yaml",
    ],
)
def test_the_projects_code_is_its_own(path: str) -> None:
    assert is_project_owned(path)


@pytest.mark.parametrize(
    "path",
    [
        "PROJECT",
        "main.py",
        "Makefile",
        "Dockerfile",
        "pyproject.toml",
        "config/default/kustomization.yaml",
        "config/crd/bases/ship.example.com_frigates.yaml",
        ".github/workflows/test.yml",
        "grafana/controller-runtime-metrics.json",
    ],
)
def test_the_rest_of_the_scaffold_is_the_scaffolds(path: str) -> None:
    assert not is_project_owned(path)
    assert is_project_owned(path, scaffolded=False)  # a file no scaffold writes


def _tree(root: Path) -> None:
    for path in ("main.py", "api/v1/a.py", "api/v1/__pycache__/a.cpython-311.pyc", ".venv/x"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")
    (root / ".gitignore").write_text("# Python\n__pycache__/\n.venv/\n")


def test_a_project_outside_git_is_its_files_but_the_ignored(tmp_path: Path) -> None:
    _tree(tmp_path)
    assert project_files(tmp_path) == [".gitignore", "api/v1/a.py", "main.py"]


def test_a_project_in_git_is_what_git_tracks_or_would(tmp_path: Path) -> None:
    _tree(tmp_path)
    subprocess.run(["git", "init", "--quiet"], cwd=tmp_path, check=True, timeout=60)
    subprocess.run(["git", "add", "main.py"], cwd=tmp_path, check=True, timeout=60)
    (tmp_path / "main.py").unlink()  # deleted from the work tree: not a file any more
    (tmp_path / "notes.txt").write_text("")
    assert project_files(tmp_path) == [".gitignore", "api/v1/a.py", "notes.txt"]
    # A project in a subdirectory of the repository: its files, relative to it.
    assert project_files(tmp_path / "api") == ["v1/a.py"]
