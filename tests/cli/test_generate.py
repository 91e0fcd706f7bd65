"""`kubeforge alpha generate` on the fleet, a project kubeforge 0.1.0.dev0 scaffolded and its
user then edited (tests/support/scaffolds.py): this release's scaffold, the user's code
carried over, a project whose own tests pass; in place only on a clean git tree."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubeforge._scaffold.ownership import project_files
from kubeforge._version import __version__
from tests.support.scaffolds import (
    alpha,
    copy_project,
    git,
)

# The fleet's files its user wrote or edited that the project owns.
USERS_CODE = (
    "api/v1/frigate.py",
    "controllers/frigate.py",
    "controllers/naming.py",
    "tests/test_naming.py",
    "grafana/custom-metrics/config.yaml",
)


def generate(*args: str) -> tuple[int, str]:
    return alpha("generate", *args)


@pytest.fixture(scope="module")
def generated(fleet_project: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The fleet generated again by this release into a new directory."""
    output = tmp_path_factory.mktemp("generated") / "fleet"
    code, said = generate("--input-dir", str(fleet_project), "--output-dir", str(output))
    assert code == 0, said
    return output, said


def test_the_scaffold_is_this_releases(
    generated: tuple[Path, str], fleet_scaffold: Path, fleet_project: Path
) -> None:
    output, said = generated
    # The commands PROJECT stands for, as they would be typed, were run.
    assert "  kubeforge init --project-name fleet --license apache2 --domain example.com " in said
    assert "--plugins grafana\n" in said
    assert (
        "  kubeforge create webhook --group ship --version v1 --kind Frigate --defaulting "
        "--programmatic-validation\n" in said
    )
    for path in ("Dockerfile", ".dockerignore", ".github/workflows/lint.yml", "README.md"):
        assert (output / path).read_text() == (fleet_scaffold / path).read_text(), path
    assert yaml.safe_load((output / "PROJECT").read_text())["cliVersion"] == __version__
    # The license header, its year too, is the project's.
    assert (output / "hack/boilerplate.py.txt").read_text() == (
        fleet_project / "hack/boilerplate.py.txt"
    ).read_text()
    # The scaffold files the project had otherwise are named: its own changes (the README's
    # section, the Makefile's lines, main.py's check) and the older release's content alike;
    # the project's own files are not.
    listed = said.split("merge with `kubeforge alpha update` instead):\n", 1)[1]
    named = set(re.findall(r"^  (\S+)$", listed, re.MULTILINE))
    assert {"Dockerfile", "Makefile", "README.md", "main.py", "pyproject.toml"} <= named
    assert named.isdisjoint(USERS_CODE)
    assert all(
        (fleet_project / path).read_bytes() != (output / path).read_bytes() for path in named
    )
    assert "Every frigate needs a crew" not in (output / "README.md").read_text()


def test_the_projects_code_is_carried_over(
    generated: tuple[Path, str], fleet_project: Path
) -> None:
    output, said = generated
    for path in USERS_CODE:
        assert (output / path).read_bytes() == (fleet_project / path).read_bytes(), path
    # Every file of the project is in the result; none the project did not have but the
    # scaffold's.
    assert set(project_files(fleet_project)) <= set(project_files(output))
    # The manifests and the dashboards are written from the project's code and config.
    crd = yaml.safe_load((output / "config/crd/bases/ship.example.com_frigates.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert "crew" in spec["properties"]
    dashboard = (output / "grafana/custom-metrics/custom-metrics-dashboard.json").read_text()
    assert "fleet_frigates_ready" in dashboard
    assert re.search(r"^\d+ scaffold files written, 18 of the project's files carried", said, re.M)


def test_the_generated_project_passes_its_own_tests(generated: tuple[Path, str]) -> None:
    output, _ = generated
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=output,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # The user's own test ran, beside the scaffold's.
    assert re.search(r"^5 passed", done.stdout.splitlines()[-1]), done.stdout


def test_in_place_needs_a_clean_git_tree(
    fleet_project: Path, fleet_scaffold: Path, tmp_path: Path
) -> None:
    root = copy_project(fleet_project, tmp_path / "fleet")
    (root / "notes.txt").write_text("untracked\n")
    code, said = generate("--input-dir", str(root))
    assert code == 1
    assert "uncommitted changes (notes.txt); commit or stash them before alpha generate" in said
    assert (root / "Dockerfile").read_text() == (fleet_project / "Dockerfile").read_text()

    (root / "notes.txt").unlink()
    code, said = generate("--input-dir", str(root))
    assert code == 0, said
    assert (root / "Dockerfile").read_text() == (fleet_scaffold / "Dockerfile").read_text()
    changed = {line[3:] for line in git(root, "status", "--porcelain").splitlines()}
    assert changed.isdisjoint(USERS_CODE)
    assert {"Dockerfile", "Makefile", "README.md", ".github/"} <= changed


def test_the_output_directory_is_new_or_empty(fleet_project: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("")
    code, said = generate(
        "--input-dir", str(fleet_project), "--output-dir", str(tmp_path / "taken")
    )
    assert code == 1
    assert "exists and is not an empty directory" in said
    code, said = generate(
        "--input-dir", str(fleet_project), "--output-dir", str(fleet_project / "again")
    )
    assert code == 1
    assert "inside the project" in said
