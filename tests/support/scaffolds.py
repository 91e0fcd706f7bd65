"""Projects scaffolded by an older kubeforge: the template set of release 0.1.0.dev0 kept in
tests/data/scaffold (its README says how it differs from this release's), and `fleet`, a
project that release scaffolded and its user then edited (tests/data/scaffold/
fleet-edits.patch: reconcile code, a spec field, a module and a test of their own, a Grafana
metric, a health check in main.py, a README section, and two Makefile lines: the image name
and the container tool).

The scaffolding commands run in this process, through the CLI's parser (replay.run_command),
so a project takes a second or two."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from typer.testing import CliRunner

from kubeforge._cli.main import app
from kubeforge._cli.replay import run_command
from kubeforge._scaffold import templatesets
from kubeforge._scaffold.templatesets import TemplateSet
from tests.support import DATA

OLD_RELEASE = "0.1.0.dev0"
OLD_TEMPLATES = DATA / "scaffold" / f"kubeforge-{OLD_RELEASE}" / "templates"
FLEET_EDITS = DATA / "scaffold" / "fleet-edits.patch"

# What the fleet's user ran.
FLEET_COMMANDS = [
    shlex.split(line)
    for line in (
        "init --domain example.com --owner 'The Fleet Authors' --plugins grafana",
        "create api --group ship --version v1 --kind Frigate",
        "create webhook --group ship --version v1 --kind Frigate --defaulting "
        "--programmatic-validation",
    )
]

# Commits without the machine's git identity.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Fleet",
    "GIT_AUTHOR_EMAIL": "fleet@example.com",
    "GIT_COMMITTER_NAME": "Fleet",
    "GIT_COMMITTER_EMAIL": "fleet@example.com",
}


def old_templates() -> TemplateSet:
    """Release 0.1.0.dev0's template set."""
    return templatesets.from_directory(OLD_TEMPLATES, OLD_RELEASE)


def scaffold(root: Path, commands: Sequence[list[str]], template_set: TemplateSet) -> None:
    """Run the scaffolding `commands` in the new directory `root` with `template_set`."""
    root.mkdir(parents=True)
    with templatesets.using(template_set):
        for argv in commands:
            run_command(argv, root)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return done.stdout


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "--all")
    git(root, "commit", "--quiet", "--message", message)


def old_fleet(root: Path) -> Path:
    """The fleet project at `root`: scaffolded by release 0.1.0.dev0, committed, edited by
    its user, committed again."""
    scaffold(root, FLEET_COMMANDS, old_templates())
    git(root, "init", "--quiet")
    commit_all(root, "Scaffold with kubeforge 0.1.0.dev0")
    git(root, "apply", str(FLEET_EDITS))
    commit_all(root, "The fleet's code")
    return root


def copy_project(source: Path, target: Path) -> Path:
    """A copy of a project and its git repository."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", ".*_cache"))
    return target


def current_scaffold(root: Path, commands: Sequence[list[str]]) -> Path:
    """What this release's commands write for `commands`, at `root`."""
    scaffold(root, commands, templatesets.packaged())
    return root


def alpha(*args: str) -> tuple[int, str]:
    """`kubeforge alpha ARGS` run in this process: its exit status and output."""
    result = CliRunner().invoke(app, ["alpha", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output
