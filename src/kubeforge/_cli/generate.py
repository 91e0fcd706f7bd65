"""`kubeforge alpha generate`: the project's scaffold written again by this kubeforge, with the
project's own files carried over, as kubebuilder's `alpha generate` re-scaffolds a project
from its PROJECT file (docs/book/src/reference/commands/alpha_generate.md).

    kubeforge alpha generate --output-dir ../fleet-regenerated   # a new tree beside it
    kubeforge alpha generate                                      # in place (clean git tree)

The scaffold is written in a scratch directory by the commands PROJECT records (replay.py),
then the project's own files (_scaffold/ownership.py) are copied over it, the manifests and
the plugins' generated files are written again from the project's code, and the result goes
to --output-dir, or over the project itself. In place, kubebuilder deletes every file but
.git first; kubeforge instead writes the new tree over the project's and removes nothing,
and only in a git work tree without uncommitted changes, so what it replaces is in git.
The scaffold's files that differ from the project's are listed: the project's changes to
them are to be made again (or merged by `kubeforge alpha update`).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer

from kubeforge._cli.files import Files
from kubeforge._cli.manifests import generate as generate_manifests
from kubeforge._cli.plugins import PLUGINS
from kubeforge._cli.project import ProjectError, fail, load_project
from kubeforge._cli.replay import ReplayError, replay
from kubeforge._scaffold import git
from kubeforge._scaffold.ownership import is_project_owned, project_files
from kubeforge._scaffold.projectfile import ProjectFile, ProjectFileError
from kubeforge._scaffold.templatesets import active

__all__ = [
    "Regenerated",
    "generate",
    "read_project",
    "regenerate_derived",
    "require_clean_tree",
]


@dataclass
class Regenerated:
    """What `alpha generate` did with each file of the result."""

    scaffold: list[str] = field(default_factory=list)
    """The scaffold's files, as this kubeforge writes them."""
    differing: list[str] = field(default_factory=list)
    """Those of them the project had with other content (its changes are not in them)."""
    carried: list[str] = field(default_factory=list)
    """The project's own files, copied as they are."""
    replaced: dict[str, bytes] = field(default_factory=dict)
    """The project's copies of the scaffold's files (PROJECT aside), as they were."""

    def compare(self, target: Path) -> None:
        """Fill `differing`: the scaffold files at `target` unlike the project's copies."""
        self.differing = [
            path
            for path, content in sorted(self.replaced.items())
            if (target / path).read_bytes() != content
        ]


def require_clean_tree(root: Path, command: str) -> None:
    """End the command unless `root` is in a git work tree without uncommitted changes there,
    as kubebuilder's `alpha update` requires (update/validate.go), so that what the command
    changes can be reviewed with `git diff` and undone."""
    if not git.is_work_tree(root):
        raise fail(f"{root}: not in a git work tree; {command} changes files only under git")
    try:
        pending = git.changes(root)
    except git.GitError as exc:
        raise fail(str(exc)) from None
    if pending:
        shown = ", ".join(line[3:] for line in pending[:5]) + (", ..." if len(pending) > 5 else "")
        raise fail(f"{root}: uncommitted changes ({shown}); commit or stash them before {command}")


def regenerate_derived(root: Path, project: ProjectFile) -> str | None:
    """Write the manifests and the plugins' generated files again from the project's code;
    the reason when they cannot be (the project does not import, ...)."""
    files = Files(root, brief=True)
    try:
        generate_manifests(load_project(root), files)
    except ProjectError as exc:
        return str(exc)
    keys = {key: write for _, (key, write) in PLUGINS.items()}
    for key in project.extra.get("plugins") or {}:
        if key in keys:
            try:
                keys[key](root, files)
            except typer.Exit:
                return f"the {key} plugin's files cannot be written (said above)"
    return None


def read_project(root: Path) -> ProjectFile:
    """The PROJECT file at `root`; one that cannot be read ends the command."""
    try:
        return ProjectFile.load(root)
    except ProjectFileError as exc:
        raise fail(str(exc)) from None


def _target(source: Path, output_dir: Path | None) -> Path:
    if output_dir is None or output_dir.resolve() == source:
        require_clean_tree(source, "alpha generate in place")
        return source
    target = output_dir.resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise fail(f"{output_dir}: exists and is not an empty directory")
    if target.is_relative_to(source) or source.is_relative_to(target):
        raise fail(f"{output_dir}: the output directory is inside the project or holds it")
    return target


def regenerate(source: Path, fresh: Path) -> Regenerated:
    """Write the scaffold of the project at `source` into the empty directory `fresh` and
    copy the project's own files over it."""
    project = read_project(source)
    try:
        plan = replay(project, source, fresh)
    except ReplayError as exc:
        raise fail(str(exc)) from None
    for command in plan.shown():
        typer.echo(f"  {command}")
    for key in plan.unknown_plugins:
        typer.echo(f"note: this kubeforge does not know the plugin {key}; its files are carried")
    written = set(project_files(fresh))
    result = Regenerated()
    for path in project_files(source):
        scaffolded = path in written
        if is_project_owned(path, scaffolded):
            target = fresh / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((source / path).read_bytes())
            result.carried.append(path)
        elif path != "PROJECT":  # PROJECT is written again from itself
            result.replaced[path] = (source / path).read_bytes()
    result.scaffold = sorted(written - set(result.carried))
    return result


def generate(
    input_dir: Annotated[
        Path, typer.Option("--input-dir", help="The project (holds PROJECT; default: here).")
    ] = Path("."),
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir",
            help="Where to write the project (a new or empty directory); default: over the "
            "project itself, which must be a git work tree without uncommitted changes.",
        ),
    ] = None,
) -> None:
    """Write the project's scaffold again with this kubeforge, from its PROJECT file, keeping
    the project's code (api/, controllers/, webhooks/, tests/, samples, its other files)."""
    source = input_dir.resolve()
    project = read_project(source)
    target = _target(source, output_dir)
    typer.echo(f"Writing the scaffold of {project.project_name} with kubeforge {active().version}:")
    with tempfile.TemporaryDirectory(prefix="kubeforge-generate-") as scratch:
        fresh = Path(scratch) / project.project_name
        fresh.mkdir()
        result = regenerate(source, fresh)
        target.mkdir(parents=True, exist_ok=True)
        for path in sorted([*result.scaffold, *result.carried]):
            content = (fresh / path).read_bytes()
            destination = target / path
            if destination.is_file() and destination.read_bytes() == content:
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(content)
    problem = regenerate_derived(target, read_project(target))
    result.compare(target)
    typer.echo(
        f"{len(result.scaffold)} scaffold files written, {len(result.carried)} of the "
        f"project's files carried over, into {target}"
    )
    if problem is not None:
        typer.secho(
            f"warning: the manifests are the scaffold's, not written from the project's code: "
            f"{problem}; run `make manifests` there",
            err=True,
            fg=typer.colors.YELLOW,
        )
    if result.differing:
        # Without the older release's scaffold, a change of the project's and one of the
        # scaffold's look alike; `alpha update` tells them apart and merges both.
        typer.echo(
            "These scaffold files differ from the project's copies, whose own changes they "
            "lack (make them again, or merge with `kubeforge alpha update` instead):"
        )
        for path in result.differing:
            typer.echo(f"  {path}")
