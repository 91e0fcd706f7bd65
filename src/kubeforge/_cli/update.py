"""`kubeforge alpha update`: the scaffold's changes between two kubeforge releases merged into
the project, as kubebuilder's `alpha update` does (docs/book/src/reference/commands/
alpha_update.md, internal/cli/alpha/internal/update/).

    kubeforge alpha update                        # from PROJECT's cliVersion to this release
    kubeforge alpha update --from-version 0.1.0 --from-templates ~/kubeforge-0.1.0.whl

kubebuilder writes three branches (ancestor: the old release's scaffold, upgrade: the new
one's, original: the project) and merges the original into the upgrade with git. kubeforge
makes the same three trees (the two scaffolds written by replay.py from PROJECT with each
release's template set, templatesets.py), merges file by file with `git merge-file`
(_scaffold/merge.py), and leaves the result in the project's work tree, uncommitted, for
review with `git diff`: as kubebuilder, it runs only in a git work tree without uncommitted
changes, so nothing it replaces is lost. Conflicts are marked in the files as `git merge`
marks them and listed; the command then exits with status 1 (kubebuilder stops on conflicts
unless --force; there is no commit here to force). PROJECT's cliVersion moves to the new
release; the manifests and the plugins' generated files are written again from the project's
code unless a Python file has conflicts.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from kubeforge._cli.generate import read_project, regenerate_derived, require_clean_tree
from kubeforge._cli.project import fail
from kubeforge._cli.replay import ReplayError, replay
from kubeforge._scaffold import templatesets
from kubeforge._scaffold.merge import OUTCOMES, MergedFile, merge_trees
from kubeforge._scaffold.ownership import project_files
from kubeforge._scaffold.projectfile import ProjectFile
from kubeforge._scaffold.templatesets import TemplateSet, TemplateSetError

__all__ = ["update"]

# PROJECT is the project's record, not a scaffold file: only its cliVersion moves.
_RECORD = "PROJECT"


def _contents(root: Path) -> dict[str, bytes]:
    return {path: (root / path).read_bytes() for path in project_files(root) if path != _RECORD}


def _scaffold(
    project: ProjectFile, source: Path, template_set: TemplateSet, root: Path
) -> dict[str, bytes]:
    root.mkdir()
    with templatesets.using(template_set):
        try:
            replay(project, source, root)
        except ReplayError as exc:
            raise fail(f"writing kubeforge {template_set.version}'s scaffold: {exc}") from None
    if template_set.stand_ins:
        typer.echo(
            f"note: kubeforge {template_set.version}'s templates lack "
            f"{', '.join(template_set.stand_ins)}; this release's stand in for them"
        )
    return _contents(root)


def _versions(
    project: ProjectFile, from_version: str | None, to_version: str | None
) -> tuple[str, str]:
    given = from_version or project.cli_version
    if not given:
        # As kubebuilder's update/prepare.go asks for --from-version without a cliVersion.
        raise fail(
            "PROJECT does not say which kubeforge release scaffolded the project (no "
            "cliVersion); give it with --from-version"
        )
    try:
        return (
            templatesets.normalize_version(given),
            templatesets.normalize_version(to_version or templatesets.packaged().version),
        )
    except TemplateSetError as exc:
        raise fail(str(exc)) from None


def _template_set(version: str, source: Path | None, option: str, scratch: Path) -> TemplateSet:
    try:
        return templatesets.resolve(version, source, scratch)
    except TemplateSetError as exc:
        raise fail(f"{exc}; give kubeforge {version}'s templates with {option}") from None


def _write(root: Path, changes: list[MergedFile]) -> None:
    for change in changes:
        path = root / change.path
        if change.content is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(change.content)


def _report(changes: list[MergedFile], versions: tuple[str, str]) -> None:
    for change in changes:
        label = "CONFLICT" if change.outcome == "conflict" else change.outcome
        note = f" ({change.note})" if change.note else ""
        typer.echo(f"{label:<10} {change.path}{note}")
    counts = {o: sum(c.outcome == o for c in changes) for o in OUTCOMES}
    summary = ", ".join(f"{n} {o}" for o, n in counts.items() if n) or "nothing to change"
    typer.echo(f"Scaffold of kubeforge {versions[0]} -> {versions[1]}: {summary}.")


def update(
    from_version: Annotated[
        str | None,
        typer.Option(
            help="The kubeforge release the project was scaffolded with (default: "
            "PROJECT's cliVersion)."
        ),
    ] = None,
    to_version: Annotated[
        str | None, typer.Option(help="The release to update to (default: this kubeforge's).")
    ] = None,
    from_templates: Annotated[
        Path | None,
        typer.Option(
            help="The --from-version release's templates: a kubeforge wheel, a checkout of it, "
            "or its template set (default: this kubeforge's own when the same release, else "
            "the release's wheel from `pip download`).",
        ),
    ] = None,
    to_templates: Annotated[
        Path | None, typer.Option(help="The --to-version release's templates, likewise.")
    ] = None,
    directory: Annotated[
        Path, typer.Option("--dir", help="The project root (holds PROJECT; default: here).")
    ] = Path("."),
) -> None:
    """Merge the scaffold's changes between two kubeforge releases into the project (a
    three-way merge); conflicts are marked in the files and listed (exit status 1)."""
    root = directory.resolve()
    project = read_project(root)
    versions = _versions(project, from_version, to_version)
    if versions[0] == versions[1]:
        typer.echo(f"The project's scaffold is kubeforge {versions[0]}'s already; nothing to do.")
        return
    require_clean_tree(root, "alpha update")
    with tempfile.TemporaryDirectory(prefix="kubeforge-update-") as scratch:
        work = Path(scratch)
        sets = [
            _template_set(versions[0], from_templates, "--from-templates", work / "from"),
            _template_set(versions[1], to_templates, "--to-templates", work / "to"),
        ]
        typer.echo(
            f"Writing the scaffold of {project.project_name} as kubeforge {versions[0]} "
            f"and {versions[1]} write it, and merging the difference into it ..."
        )
        base = _scaffold(project, root, sets[0], work / "base")
        theirs = _scaffold(project, root, sets[1], work / "theirs")
        labels = ("yours", f"kubeforge {versions[0]}", f"kubeforge {versions[1]}")
        changes = merge_trees(base, theirs, _contents(root), labels)
    _write(root, changes)
    project.cli_version = versions[1]
    (root / _RECORD).write_text(project.render(), encoding="utf-8")
    _report(changes, versions)
    conflicts = [c.path for c in changes if c.outcome == "conflict"]
    if not any(path.endswith(".py") for path in conflicts):
        problem = regenerate_derived(root, project)
        if problem is not None:
            typer.secho(
                f"warning: the manifests were not written again: {problem}",
                err=True,
                fg=typer.colors.YELLOW,
            )
    if conflicts:
        typer.secho(
            f"{len(conflicts)} file(s) have conflicts, marked with <<<<<<< yours, ======= and "
            f">>>>>>> kubeforge {versions[1]}: edit them to keep what you want, then run "
            "`make manifests` and `make test`. `git diff` shows the whole update.",
            err=True,
            fg=typer.colors.RED,
        )
        raise typer.Exit(1)
    typer.echo("Review the update with `git diff`, then run `make test` and commit it.")
