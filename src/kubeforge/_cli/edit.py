"""`kubeforge edit`: change an initialized project's layout, or turn optional plugins on, as
kubebuilder's `edit` does.

    kubeforge edit --multigroup           new kinds go to api/<group>/<version>/ and the
                                          group's directories (PROJECT's `multigroup: true`)
    kubeforge edit --multigroup=false     new kinds go to the single-group places again
    kubeforge edit --plugins grafana      what `init --plugins grafana` would have written

`--multigroup` sets PROJECT's `multigroup` and nothing else, as kubebuilder's go/v4 edit does
(pkg/plugins/golang/v4/scaffolds/edit.go): the kinds scaffolded already stay where they are,
each keeping its layout (kubeforge._scaffold.layout), and moving them is the manual
migration kubebuilder's book describes (docs/book/src/migration/multi-group.md). A flag not
given leaves its setting as it is (edit.go's PreScaffold keeps what PROJECT says).

`--plugins` runs each plugin's edit, as kubebuilder's optional plugins have one
(pkg/plugins/optional/grafana/v1alpha/edit.go): the plugin's files written and its entry
under PROJECT's `plugins:`; run again, it writes the same (kubeforge._cli.plugins).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kubeforge._cli.files import Files
from kubeforge._cli.plugins import PLUGINS, PluginsOption, add_plugins, parse_plugins
from kubeforge._cli.project import fail
from kubeforge._scaffold.layout import placement
from kubeforge._scaffold.projectfile import ProjectFile, ProjectFileError

__all__ = ["CONTEXT", "edit"]

# `--multigroup` takes an optional `=true|false`, as a pflag boolean does; the option parser
# has no optional values, so the command reads it from its extra arguments.
CONTEXT: dict[str, Any] = {"ignore_unknown_options": True, "allow_extra_args": True}

# The spellings Go's strconv.ParseBool (and so pflag) accepts.
_TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})
_FALSE = frozenset({"0", "f", "F", "false", "FALSE", "False"})

_GROUPED = (
    "api/<group>/<version>/, controllers/<group>/, tests/<group>/ and webhooks/<group>/<version>/"
)
_SINGLE = "api/<version>/, controllers/, tests/ and webhooks/<version>/"


def edit(
    ctx: typer.Context,
    plugins: PluginsOption = None,
    directory: Annotated[
        Path, typer.Option("--dir", help="The project root (holds PROJECT).")
    ] = Path("."),
) -> None:
    """Change the project's layout, or turn optional plugins on.

    --multigroup[=true|false]: the multigroup layout for the kinds created from
    now on (api/<group>/<version>/, controllers/<group>/, tests/<group>/,
    webhooks/<group>/<version>/), so that one kind may be in several groups.
    The kinds the project has keep their places (moving them: docs/cli.md).
    """
    multigroup = _multigroup(ctx.args)
    chosen = parse_plugins(plugins or ())
    if multigroup is None and not chosen:
        raise fail("nothing to edit: give --multigroup[=true|false] and/or --plugins <name>")
    root = directory.resolve()
    try:
        project = ProjectFile.load(root)
    except ProjectFileError as exc:
        raise fail(str(exc)) from None

    files = Files(root, brief=True)
    add_plugins(root, chosen, files, project)
    if multigroup is not None:
        project.multigroup = multigroup
    files.update(root / "PROJECT", project.render())
    if multigroup is not None:
        _explain(project)
    for name in chosen:
        typer.echo(f"Plugin {name} ({PLUGINS[name][0]}) is on.")


def _multigroup(args: list[str]) -> bool | None:
    """The value of `--multigroup[=true|false]` among the command's extra arguments (None
    when absent); anything else there ends the command."""
    value: bool | None = None
    for arg in args:
        name, equals, given = arg.partition("=")
        if name != "--multigroup":
            if not arg.startswith("-"):
                raise fail(
                    f"unexpected argument {arg!r} (a value of --multigroup follows an equals "
                    "sign: --multigroup=false)"
                )
            raise fail(f"no such option: {name} (see `kubeforge edit --help`)")
        if not equals or given in _TRUE:
            value = True
        elif given in _FALSE:
            value = False
        else:
            raise fail(f"invalid value {given!r} for --multigroup: true or false")
    return value


def _explain(project: ProjectFile) -> None:
    """Say where new kinds go, and which kinds stay in the other layout."""
    if project.multigroup:
        typer.echo(f"The project is multigroup: new kinds go to {_GROUPED}.")
    else:
        typer.echo(f"The project is single-group: new kinds go to {_SINGLE}.")
    kept = [
        f"{kind} ({group}) in {' and '.join(dirs)}"
        for (group, kind), (grouped, dirs) in _kinds(project).items()
        if grouped != project.multigroup
    ]
    if kept:
        typer.echo(
            f"Kinds scaffolded before keep their places: {'; '.join(kept)}. New versions, "
            "controllers and webhooks of a kind go beside it."
        )


def _kinds(project: ProjectFile) -> dict[tuple[str, str], tuple[bool, list[str]]]:
    """(qualified group, kind) -> whether the kind is in the multigroup layout, and the
    directories of its versions; kinds of the empty group have one layout only."""
    kinds: dict[tuple[str, str], tuple[bool, list[str]]] = {}
    for entry in project.resources:
        group, kind = str(entry.get("group") or ""), str(entry.get("kind", ""))
        if not group or not entry.get("api"):
            continue
        where = placement(project, group, kind)
        qualified = ".".join(part for part in (group, project.domain) if part)
        _, dirs = kinds.setdefault((qualified, kind), (where.grouped, []))
        dirs.append(where.api_dir(str(entry.get("version"))) + "/")
    return kinds
