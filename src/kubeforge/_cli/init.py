"""`kubeforge init`: a new project in the current (empty or nearly empty) directory.

What kubebuilder's `init` writes, for Python: pyproject.toml (depending on kubeforge), a
Makefile with kubebuilder's targets, a Dockerfile and .dockerignore, .gitignore, the PROJECT
file, main.py with `setup(manager)` and the manager's `main()`, a README, the kustomize tree
under config/ (default, manager, rbac, prometheus, network-policy), a first test, the GitHub
workflows (lint, test, test-e2e) and a dev container; `--plugins` adds optional plugins'
files (kubeforge._cli.plugins), and `--multigroup` starts the project in the multigroup
layout, as kubebuilder's `init --multigroup` does (kubeforge._scaffold.layout). The
manifests are generated at the end, so `config/default` builds at once.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Annotated

import typer

from kubeforge._cli.files import Files
from kubeforge._cli.manifests import generate
from kubeforge._cli.plugins import PluginsOption, add_plugins, parse_plugins
from kubeforge._cli.project import ProjectError, check_environment, fail, load_project
from kubeforge._scaffold.names import (
    InvalidName,
    check_domain,
    check_project_name,
    project_name_from,
)
from kubeforge._scaffold.projectfile import ProjectFile
from kubeforge._scaffold.render import render_tree
from kubeforge._scaffold.templatesets import active

__all__ = ["BOILERPLATE", "boilerplate_header", "init", "license_of"]

BOILERPLATE = "hack/boilerplate.py.txt"

# What may be in a directory before `init` (a fresh repository, an editor's settings, a
# virtual environment), as kubebuilder allows a go.mod and dotfiles.
_ALLOWED = {"README.md", "LICENSE", "LICENSE.txt", "hack"}

_APACHE = """\
# Copyright {year} {owner}.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""
_COPYRIGHT = "# Copyright {year} {owner}.\n"
LICENSES = ("apache2", "copyright", "none")


def boilerplate_header(root: Path) -> str:
    """The header every scaffolded Python file starts with (hack/boilerplate.py.txt, as the
    project keeps it), followed by a blank line; empty without one."""
    path = root / BOILERPLATE
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8").strip()
    return text + "\n\n" if text else ""


def _boilerplate(license_: str, owner: str) -> str:
    year = dt.datetime.now(dt.UTC).year  # the machine's year, for a license header
    owner = owner.strip()
    if license_ == "apache2":
        return _APACHE.format(year=year, owner=owner).replace(f"{year} .", f"{year}.")
    if license_ == "copyright":
        return _COPYRIGHT.format(year=year, owner=owner).replace(f"{year} .", f"{year}.")
    return ""


def license_of(header: str) -> tuple[str, str]:
    """The `--license` and `--owner` that wrote the boilerplate `header` (any year); a header
    of other words (a --license-file's) is ("none", "")."""
    for license_, text in (("apache2", _APACHE), ("copyright", _COPYRIGHT)):
        pattern = (
            re.escape(text)
            .replace(r"\{year\}", r"\d{4}")
            .replace(r"\ \{owner\}\.", r"(?: (?P<owner>.+?))?\.")
        )
        match = re.fullmatch(pattern, header)
        if match is not None:
            return license_, match.group("owner") or ""
    return "none", ""


def _check_directory(root: Path) -> None:
    if (root / "PROJECT").exists():
        raise fail(f"{root}: already a project (it has a PROJECT file); use `kubeforge create`")
    others = sorted(
        p.name for p in root.iterdir() if not p.name.startswith(".") and p.name not in _ALLOWED
    )
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise fail(f"{root}: not empty ({shown}); run `kubeforge init` in an empty directory")


def init(
    domain: Annotated[
        str, typer.Option(help="The domain of the project's API groups, e.g. example.com.")
    ] = "",
    project_name: Annotated[
        str | None,
        typer.Option(help="The project's name (default: the directory's name)."),
    ] = None,
    owner: Annotated[
        str, typer.Option(help="The copyright owner named in each file's license header.")
    ] = "",
    license_: Annotated[
        str,
        typer.Option(
            "--license", help="The license header of the Python files: apache2, copyright, none."
        ),
    ] = "apache2",
    directory: Annotated[
        Path, typer.Option("--dir", help="Where to create the project (default: here).")
    ] = Path("."),
    license_file: Annotated[
        Path | None,
        typer.Option(
            "--license-file",
            help="A file whose text is the license header of the Python files "
            "(hack/boilerplate.py.txt), in place of --license's.",
        ),
    ] = None,
    plugins: PluginsOption = None,
    multigroup: Annotated[
        bool,
        typer.Option(
            "--multigroup",
            help="The multigroup layout: api/<group>/<version>/ and each group's directories "
            "(kubeforge edit --multigroup later).",
        ),
    ] = False,
) -> None:
    """Create a new project: pyproject.toml, Makefile, Dockerfile, PROJECT, main.py, config/
    and a first test."""
    root = directory.resolve()
    if not root.is_dir():
        raise fail(f"{directory}: no such directory")
    try:
        check_domain(domain)
        name = check_project_name(project_name or project_name_from(root.name))
    except InvalidName as exc:
        raise fail(str(exc)) from None
    if license_ not in LICENSES:
        raise fail(f"unknown license {license_!r}: choose one of {', '.join(LICENSES)}")
    chosen = parse_plugins(plugins or ())
    _check_directory(root)
    check_environment(root)  # a .venv made first: the manifests, generated last, import it

    if license_file is None:
        header_text = _boilerplate(license_, owner)
    else:
        # As kubebuilder's --license-file: the file's text is the header, as it is.
        try:
            header_text = license_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise fail(f"{license_file}: cannot be read: {exc}") from None
        if header_text and not header_text.endswith("\n"):
            header_text += "\n"
    # The release whose templates are in force (this one, or an older one written again).
    release = active().version
    values = {
        "project_name": name,
        "domain": domain,
        "kubeforge_version": release,
        "header": header_text + "\n" if header_text else "",
        "license_field": (
            ('license = "Apache-2.0"\n' if license_ == "apache2" else "")
            + (f'authors = [{{ name = "{owner.strip()}" }}]\n' if owner.strip() else "")
        ),
        "license_section": (
            "\n## License\n\nLicensed under the Apache License, Version 2.0: "
            "http://www.apache.org/licenses/LICENSE-2.0\n"
            if license_ == "apache2"
            else ""
        ),
    }
    files = Files(root, brief=True)
    typer.echo(f"Writing the scaffold of project {name} (domain {domain}) ...")
    for path, content in render_tree("init", values):
        files.scaffold(root / path, content)
    if header_text:
        files.scaffold(root / BOILERPLATE, header_text)
    project = ProjectFile(domain=domain, project_name=name)
    project.cli_version = release
    project.multigroup = multigroup
    add_plugins(root, chosen, files, project)
    files.scaffold(root / "PROJECT", project.render())
    try:
        generate(load_project(root), files)
    except ProjectError as exc:
        raise fail(str(exc)) from None
    typer.echo(
        "Next: pip install -e '.[dev]', then `kubeforge create api --group <group> "
        "--version <version> --kind <Kind>`"
    )
