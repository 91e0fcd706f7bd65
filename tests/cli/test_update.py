"""`kubeforge alpha update` on the fleet, a project kubeforge 0.1.0.dev0 scaffolded and its user
then edited (tests/support/scaffolds.py): the scaffold's changes since that release merged
into it, the user's edits kept, both changing the same lines marked as a conflict; refused
on uncommitted changes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from kubeforge._version import __version__
from tests.support.scaffolds import (
    OLD_RELEASE,
    OLD_TEMPLATES,
    alpha,
    commit_all,
    copy_project,
    git,
)


def update(root: Path, *args: str) -> tuple[int, str]:
    return alpha("update", "--dir", str(root), *args)


@pytest.fixture(scope="module")
def updated(fleet_project: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """The fleet updated from 0.1.0.dev0 (PROJECT's cliVersion) to this release."""
    root = copy_project(fleet_project, tmp_path_factory.mktemp("updated") / "fleet")
    code, output = update(root, "--from-templates", str(OLD_TEMPLATES))
    return root, code, output


def test_scaffold_changes_the_user_left_alone_are_taken(
    updated: tuple[Path, int, str], fleet_scaffold: Path, fleet_project: Path
) -> None:
    root, _, output = updated
    # The Dockerfile and .dockerignore changed between the releases; the user never edited
    # them: they are this release's now.
    for path in ("Dockerfile", ".dockerignore"):
        assert (root / path).read_text() == (fleet_scaffold / path).read_text(), path
        assert (root / path).read_text() != (fleet_project / path).read_text(), path
        assert re.search(rf"^updated +{re.escape(path)}$", output, re.MULTILINE), output
    # Files the older release did not write are added.
    for path in (".github/workflows/test.yml", ".devcontainer/devcontainer.json"):
        assert (root / path).read_text() == (fleet_scaffold / path).read_text(), path
        assert re.search(rf"^added +{re.escape(path)}$", output, re.MULTILINE), output
    # The dependency on kubeforge moves to this release.
    assert f'"kubeforge>={__version__}"' in (root / "pyproject.toml").read_text()
    assert yaml.safe_load((root / "PROJECT").read_text())["cliVersion"] == __version__
    # The Makefile gains this release's targets beside the user's edits.
    makefile = (root / "Makefile").read_text()
    for target in ("test-e2e", "lock", "docker-buildx", "container-tool"):
        assert f"\n{target}:" in makefile, target


def test_the_users_edits_are_kept(
    updated: tuple[Path, int, str], fleet_project: Path, fleet_scaffold: Path
) -> None:
    root, _, output = updated
    # What the scaffold did not change is the user's, as it was.
    for path in (
        "api/v1/frigate.py",
        "controllers/naming.py",
        "tests/test_naming.py",
        "grafana/custom-metrics/config.yaml",
    ):
        assert (root / path).read_text() == (fleet_project / path).read_text(), path
    # The README: the user's section, and this release's lines (the end-to-end suite's).
    readme = (root / "README.md").read_text()
    assert "## Sailing\n\nEvery frigate needs a crew: set `spec.crew`.\n" in readme
    assert (
        readme.replace("## Sailing\n\nEvery frigate needs a crew: set `spec.crew`.\n\n", "")
        == (fleet_scaffold / "README.md").read_text()
    )
    # Where both changed a file, but not the same lines, both changes are in it.
    controller = (root / "controllers/frigate.py").read_text()
    assert "display_name(frigate), frigate.spec.crew" in controller  # the user's
    docstring = (fleet_scaffold / "controllers/frigate.py").read_text().split("from __future__")[0]
    assert controller.startswith(docstring)  # this release's
    check = '    manager.add_healthz_check("fleet", lambda: True)\n'
    main = (root / "main.py").read_text()
    assert check in main
    assert main.replace(check, "") == (fleet_scaffold / "main.py").read_text()
    for path in ("controllers/frigate.py", "main.py"):
        assert re.search(rf"^merged +{re.escape(path)}$", output, re.MULTILINE), output
    makefile = (root / "Makefile").read_text()
    assert "IMG ?= registry.example.com/fleet/manager:latest\n" in makefile
    # The manifests are written again from the user's types (the crew field).
    crd = yaml.safe_load((root / "config/crd/bases/ship.example.com_frigates.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["crew"]["minimum"] == 0


def test_both_changing_the_same_lines_is_a_conflict(updated: tuple[Path, int, str]) -> None:
    root, code, output = updated
    assert code == 1
    assert re.search(r"^CONFLICT +Makefile \(1 conflicting change", output, re.MULTILINE), output
    assert "1 file(s) have conflicts" in output
    makefile = (root / "Makefile").read_text()
    conflict = re.search(
        r"^<<<<<<< yours\n(?P<ours>(?:.*\n)*?)=======\n(?P<theirs>(?:.*\n)*?)"
        rf">>>>>>> kubeforge {re.escape(__version__)}\n",
        makefile,
        re.MULTILINE,
    )
    assert conflict is not None, makefile
    assert "CONTAINER_TOOL ?= podman\n" in conflict["ours"]
    assert "command -v docker" in conflict["theirs"]
    assert makefile.count("<<<<<<<") == 1
    # Nothing is committed: the update is in the work tree, for review.
    changed = {line[3:] for line in git(root, "status", "--porcelain").splitlines()}
    assert {"Makefile", "Dockerfile", "PROJECT", "main.py"} <= changed


def test_without_conflicts_the_update_succeeds(fleet_project: Path, tmp_path: Path) -> None:
    root = copy_project(fleet_project, tmp_path / "fleet")
    makefile = root / "Makefile"
    makefile.write_text(
        makefile.read_text().replace("CONTAINER_TOOL ?= podman", "CONTAINER_TOOL ?= docker")
    )
    commit_all(root, "Back to docker")
    code, output = update(root, "--from-templates", str(OLD_TEMPLATES))
    assert code == 0, output
    assert "CONFLICT" not in output
    assert "Review the update with `git diff`" in output
    assert "<<<<<<<" not in makefile.read_text()
    assert "IMG ?= registry.example.com/fleet/manager:latest\n" in makefile.read_text()


def test_uncommitted_changes_are_refused(fleet_project: Path, tmp_path: Path) -> None:
    root = copy_project(fleet_project, tmp_path / "fleet")
    (root / "controllers" / "naming.py").write_text("# half-done work\n")
    (root / "notes.txt").write_text("untracked\n")
    before = git(root, "status", "--porcelain")
    code, output = update(root, "--from-templates", str(OLD_TEMPLATES))
    assert code == 1
    assert "uncommitted changes (controllers/naming.py, notes.txt)" in output
    assert "commit or stash them before alpha update" in output
    assert git(root, "status", "--porcelain") == before
    assert (root / "Dockerfile").read_text() == (fleet_project / "Dockerfile").read_text()


def test_the_release_to_update_from_is_needed(fleet_project: Path, tmp_path: Path) -> None:
    root = copy_project(fleet_project, tmp_path / "fleet")
    project = root / "PROJECT"
    project.write_text(project.read_text().replace(f"cliVersion: {OLD_RELEASE}\n", ""))
    commit_all(root, "A PROJECT of before cliVersion")
    code, output = update(root)
    assert code == 1
    assert "no cliVersion); give it with --from-version" in output
    # Already at this release: nothing to do, and nothing done.
    code, output = update(root, "--from-version", f"v{__version__}")
    assert code == 0
    assert f"kubeforge {__version__}'s already; nothing to do" in output
    assert git(root, "status", "--porcelain") == ""
