"""A project's scaffold written again from its PROJECT file, by the commands that wrote it.

PROJECT records what `init` and each `create api` and `create webhook` were asked for, so the
scaffold is those commands run again, in a fresh directory, with the template set in force:
what kubebuilder's `alpha generate` does (internal/cli/alpha/internal/generate.go: `init`
with the project's domain, name and license header, then the recorded resources).

    kubeforge init --domain example.com --project-name fleet --license apache2 ...
    kubeforge create api --group ship --version v1 --kind Frigate
    kubeforge create webhook --group ship --version v1 --kind Frigate --defaulting ...

The commands run through the CLI's own parser and functions, in the order they were most
likely first run, so that the scaffold is the one the project started from byte for byte:
each kind's API and controller in PROJECT's order (kubebuilder's order too), each kind's
admission webhooks right after it, and a conversion webhook as soon as its spokes exist.
The license header is the project's `hack/boilerplate.py.txt`, as kubebuilder keeps
`hack/boilerplate.go.txt`. The plugins PROJECT lists are turned on with `init --plugins`,
their settings kept; PROJECT's other settings (those no command option stands for) are
written into the fresh PROJECT before the kinds are created, so the create commands see them
as they do in the project.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from kubeforge._cli.create import app as create_app
from kubeforge._cli.init import BOILERPLATE, init, license_of
from kubeforge._cli.plugins import PLUGINS
from kubeforge._scaffold.projectfile import ProjectFile

__all__ = ["Replay", "ReplayError", "commands_of", "replay", "run_command"]

# What the replay runs: the commands that write a scaffold, parsed as the CLI parses them.
_commands = typer.Typer(add_completion=False)
_commands.command("init")(init)
_commands.add_typer(create_app, name="create")

# PROJECT's keys that the commands themselves write.
_WRITTEN = {"cliVersion", "plugins"}


class ReplayError(Exception):
    """A command of the replay failed; the message names it and says why."""


@dataclass
class Replay:
    """The commands a PROJECT file stands for, and how to run them into a directory."""

    commands: list[list[str]]
    settings: dict[str, Any] = field(default_factory=dict)
    """PROJECT's settings no command writes, carried into the fresh PROJECT."""
    unknown_plugins: list[str] = field(default_factory=list)
    """Plugins this kubeforge does not know (their PROJECT entries are kept)."""
    plugin_settings: dict[str, Any] = field(default_factory=dict)

    def shown(self) -> list[str]:
        """Each command as it would be typed."""
        return [shlex.join(["kubeforge", *argv]) for argv in self.commands]


def _flag(value: bool, on: str, off: str) -> list[str]:
    return [on if value else off]


def _gvk(entry: dict[str, Any]) -> list[str]:
    return [
        "--group",
        str(entry.get("group", "")),
        "--version",
        str(entry.get("version", "")),
        "--kind",
        str(entry.get("kind", "")),
    ]


def commands_of(project: ProjectFile, source: Path) -> Replay:
    """The commands that scaffold `project` (whose files are at `source`, for its license
    header)."""
    boilerplate = source / BOILERPLATE
    header = boilerplate.read_text(encoding="utf-8") if boilerplate.is_file() else ""
    license_, owner = license_of(header)
    argv = ["init", "--project-name", project.project_name, "--license", license_]
    if project.domain:
        argv += ["--domain", project.domain]
    if owner:
        argv += ["--owner", owner]
    if header:
        # The header as it is, its year too; --license still writes pyproject's license.
        argv += ["--license-file", _relative(boilerplate)]
    recorded = dict(project.extra.get("plugins") or {})
    keys = {key: name for name, (key, _) in PLUGINS.items()}
    known = [keys[key] for key in recorded if key in keys]
    if known:
        argv += ["--plugins", ",".join(known)]
    result = Replay(
        [argv],
        settings={k: v for k, v in project.extra.items() if k not in _WRITTEN},
        unknown_plugins=[key for key in recorded if key not in keys],
        plugin_settings=recorded,
    )
    result.commands += list(_resource_commands(project.resources))
    return result


def _relative(path: Path) -> str:
    """`path` relative to the working directory when under it (as a user would type it)."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def _resource_commands(resources: Sequence[dict[str, Any]]) -> Iterator[list[str]]:
    created: set[tuple[str, str, str]] = set()
    waiting: list[tuple[dict[str, Any], list[str]]] = []  # conversions and their spokes
    for entry in resources:
        if not entry.get("api"):
            raise ReplayError(
                f"PROJECT's {entry.get('kind')} in {entry.get('group')}/{entry.get('version')} "
                "has no API (api:) of the project; kubeforge scaffolds only the project's kinds"
            )
        api = entry["api"]
        argv = ["create", "api", *_gvk(entry)]
        argv += _flag(bool(entry.get("controller")), "--controller", "--no-controller")
        argv += _flag(bool(api.get("namespaced", True)), "--namespaced", "--cluster")
        if entry.get("plural"):
            argv += ["--plural", str(entry["plural"])]
        yield argv
        group, kind = str(entry.get("group", "")), str(entry.get("kind", ""))
        created.add((group, kind, str(entry.get("version", ""))))
        hooks = entry.get("webhooks") or {}
        admission = ["--defaulting"] * bool(hooks.get("defaulting")) + [
            "--programmatic-validation"
        ] * bool(hooks.get("validation"))
        if admission:
            yield ["create", "webhook", *_gvk(entry), *admission]
        if hooks.get("conversion"):
            waiting.append((entry, [str(s) for s in hooks.get("spoke") or []]))
        ready = [
            (hub, spokes)
            for hub, spokes in waiting
            if all((hub.get("group", ""), hub.get("kind"), s) in created for s in spokes)
        ]
        for hub, spokes in ready:
            waiting.remove((hub, spokes))
            yield _conversion(hub, spokes)
    for hub, spokes in waiting:  # a spoke PROJECT does not list: the command says so
        yield _conversion(hub, spokes)


def _conversion(hub: dict[str, Any], spokes: list[str]) -> list[str]:
    argv = ["create", "webhook", *_gvk(hub), "--conversion"]
    for spoke in spokes:
        argv += ["--spoke", spoke]
    return argv


def run_command(argv: list[str], root: Path) -> str:
    """Run one scaffolding command (`init`, `create ...`) in `root` as the CLI runs it; its
    output (ReplayError with what it said when it fails; a usage error, which the commands
    PROJECT stands for never make, propagates)."""
    out, err = io.StringIO(), io.StringIO()
    command = typer.main.get_command(_commands)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = command.main(
                args=[*argv, "--dir", str(root)], prog_name="kubeforge", standalone_mode=False
            )
        except typer.Abort:
            code = 1
    if code:
        said = (err.getvalue() or out.getvalue()).strip()
        raise ReplayError(f"`{shlex.join(['kubeforge', *argv])}` failed: {said}")
    return out.getvalue()


def replay(project: ProjectFile, source: Path, root: Path) -> Replay:
    """Write `project`'s scaffold (the project's files at `source`) into the empty directory
    `root` with the template set in force; the commands run."""
    plan = commands_of(project, source)
    init_argv, *rest = plan.commands
    run_command(init_argv, root)
    fresh = ProjectFile.load(root)  # init wrote it
    before = fresh.render()
    fresh.extra.update(plan.settings)
    if plan.plugin_settings:
        # The plugins' own settings, and the entries of those this kubeforge lacks.
        fresh.extra["plugins"] = {**(fresh.extra.get("plugins") or {}), **plan.plugin_settings}
    if fresh.render() != before:
        (root / "PROJECT").write_text(fresh.render(), encoding="utf-8")
    for argv in rest:
        run_command(argv, root)
    return plan
