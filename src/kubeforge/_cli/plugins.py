"""The optional plugins a project turns on, as kubebuilder's `--plugins` does: each writes its
files and records itself under `plugins:` in the PROJECT file (kubebuilder's key), so that
commands run later know it is on.

    kubeforge init --domain example.com --plugins grafana

`grafana` (kubebuilder's grafana.kubebuilder.io/v1-alpha) writes Grafana dashboards over the
manager's metrics under grafana/ (kubeforge._scaffold.grafana). `add_plugins` is the whole
of turning one on, for `init` and for any command that turns plugins on in an existing
project.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated

import typer

from kubeforge._cli.files import Files
from kubeforge._cli.project import fail
from kubeforge._scaffold import grafana
from kubeforge._scaffold.projectfile import ProjectFile

__all__ = ["PLUGINS", "PluginsOption", "add_plugins", "parse_plugins", "write_grafana"]


def write_grafana(root: Path, files: Files) -> None:
    """The dashboards, written again from the current metrics and custom-metrics config; the
    config itself is the project's once written."""
    config = root / grafana.CUSTOM_CONFIG
    text = config.read_text(encoding="utf-8") if config.is_file() else None
    try:
        for path, content in grafana.dashboard_files(text):
            if path == grafana.CUSTOM_CONFIG:
                files.scaffold(root / path, content)
            else:
                files.write(root / path, content)
    except grafana.CustomMetricsError as exc:
        raise fail(str(exc)) from None


# Short name -> (the PROJECT file's key, what writes its files).
PLUGINS: dict[str, tuple[str, Callable[[Path, Files], None]]] = {
    "grafana": (grafana.PLUGIN, write_grafana),
}


# The `--plugins` option of the commands that turn plugins on (init, edit).
PluginsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--plugins",
        help="Optional plugins to turn on, comma-separated: "
        + ", ".join(f"{name} ({key})" for name, (key, _) in PLUGINS.items())
        + ".",
    ),
]


def parse_plugins(values: Iterable[str]) -> list[str]:
    """The short names of `--plugins` values (comma-separated or repeated; a plugin's short
    name or its full key, `grafana.kubebuilder.io/v1-alpha`); an unknown one ends the command."""
    keys = {key: name for name, (key, _) in PLUGINS.items()}
    names: list[str] = []
    for value in values:
        for given in filter(None, (part.strip() for part in value.split(","))):
            name = given if given in PLUGINS else keys.get(given)
            if name is None:
                known = ", ".join(f"{n} ({k})" for n, (k, _) in PLUGINS.items())
                raise fail(f"unknown plugin {given!r}: choose among {known}")
            if name not in names:
                names.append(name)
    return names


def add_plugins(root: Path, names: Iterable[str], files: Files, project: ProjectFile) -> None:
    """Turn the plugins `names` on in the project at `root`: their files, and their entries
    under `plugins:` in `project` (which the caller writes to PROJECT)."""
    names = list(names)
    if not names:
        return
    plugins = dict(project.extra.get("plugins") or {})
    for name in names:
        key, write = PLUGINS[name]
        write(root, files)
        plugins.setdefault(key, {})
    project.extra["plugins"] = plugins
