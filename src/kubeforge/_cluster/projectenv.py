"""The Python environment a project's code runs in, when kubeforge runs it: `kubeforge run`,
`manifests` and the other commands that import the project, and the development cluster's
containers of an image mapped to the project (`kubeforge dev --image NAME=DIR`).

A project's packages come from two places, in this order:

1. kubeforge's own environment (the one the `kubeforge` command runs in), so kubeforge and
   the libraries it is built on are the ones it was installed with;
2. the project's virtual environment, `.venv` in the project directory (what
   `python -m venv .venv && .venv/bin/pip install -e .` or `uv sync` make), for what the
   project depends on besides (`croniter` for a CronJob controller). Its site-packages are
   added after kubeforge's, with their `.pth` files (editable installs, path dependencies).

Nothing is installed into kubeforge's environment, and nothing is written into the project's.
The project's environment must be of the same Python version (major.minor) as kubeforge's,
since its compiled packages are loaded by kubeforge's interpreter. When kubeforge runs in
the project's environment itself (installed there, as the scaffold's Makefile expects),
there is nothing to add.

A container runs a Python made for it: a virtual environment in the container's private
tree, created without packages, whose one `.pth` file adds kubeforge's site directories and
then the project's. So `python`, `python -m ...` and console scripts in the container (and
the processes they start with `sys.executable`) see the same packages in the same order.
Decision 0038 records why.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import site
import sys
import sysconfig
import tomllib
import venv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

__all__ = ["VENV", "ProjectEnvironment", "ProjectEnvironmentError", "kubeforge_site_dirs"]

VENV = ".venv"
"""The project's virtual environment, relative to its directory."""

_OVERLAY_PTH = "kubeforge-project.pth"


class ProjectEnvironmentError(Exception):
    """The project's environment cannot be used; the message says why and what to do."""


def kubeforge_site_dirs() -> list[Path]:
    """The directories kubeforge's environment takes packages from: the one kubeforge is
    imported from (a source checkout, or its site-packages), then its site-packages and
    user site."""
    from kubeforge import _version

    dirs = [Path(_version.__file__).resolve().parents[1]]
    dirs += [Path(p) for p in site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        dirs.append(Path(site.getusersitepackages()))
    return _unique(d for d in dirs if d.is_dir())


@dataclass(frozen=True)
class ProjectEnvironment:
    """Where a project's packages come from besides kubeforge's environment."""

    root: Path
    venv: Path | None = None
    """The project's `.venv` when it has one that is not kubeforge's own environment."""
    site_dirs: tuple[Path, ...] = ()
    """Its site-packages directories, added after kubeforge's."""

    @classmethod
    def of(cls, root: Path) -> ProjectEnvironment:
        """The environment of the project at `root` (ProjectEnvironmentError when its
        `.venv` is of another Python version, or has no site-packages)."""
        root = root.resolve()
        found = root / VENV
        if not (found / "pyvenv.cfg").is_file():
            return cls(root)
        if found.resolve() == Path(sys.prefix).resolve():
            return cls(root)  # kubeforge runs in it: its packages are there already
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        dirs = sorted(found.glob("lib/python*/site-packages")) + sorted(
            found.glob("Lib/site-packages")
        )
        if not dirs:
            raise ProjectEnvironmentError(f"{found} has no site-packages directory")
        for directory in dirs:
            match = re.fullmatch(r"python(\d+\.\d+)t?", directory.parent.name)
            if match and match.group(1) != version:
                raise ProjectEnvironmentError(
                    f"{found} is a Python {match.group(1)} environment and kubeforge runs on "
                    f"Python {version}: recreate it with Python {version}, or install "
                    f"kubeforge into it and run its kubeforge ({VENV}/bin/kubeforge)"
                )
        return cls(root, found, tuple(_unique(dirs)))

    def activate(self) -> None:
        """Make the project's packages importable in this process, after kubeforge's."""
        present = {os.path.realpath(p) for p in sys.path if p}
        for directory in self.site_dirs:
            if str(directory) not in present:
                site.addsitedir(str(directory))

    def missing(self) -> list[str]:
        """The requirements of the project's pyproject.toml (`[project] dependencies`)
        that neither kubeforge's environment nor the project's has, each as written
        (kubeforge itself is the one running)."""
        installed: dict[str, list[str]] = {}
        for dist in importlib.metadata.distributions(path=[*sys.path, *map(str, self.site_dirs)]):
            name = canonicalize_name(dist.metadata["Name"] or "")
            installed.setdefault(name, []).append(dist.version)
        unmet = []
        for requirement in _requirements(self.root / "pyproject.toml"):
            name = canonicalize_name(requirement.name)
            if name == "kubeforge":
                continue
            if requirement.marker is not None and not requirement.marker.evaluate():
                continue
            versions = installed.get(name, [])
            if not any(requirement.specifier.contains(v, prereleases=True) for v in versions):
                unmet.append(str(requirement))
        return unmet

    def python(self, directory: Path) -> str:
        """An interpreter for the project's processes: this one when the project has no
        environment of its own, else a virtual environment made in `directory` (which
        must not exist) that sees kubeforge's packages, then the project's."""
        if self.venv is None:
            return sys.executable
        venv.EnvBuilder(symlinks=os.name != "nt", with_pip=False).create(directory)
        base = {"base": str(directory), "platbase": str(directory)}
        purelib = Path(sysconfig.get_path("purelib", "venv", vars=base))
        dirs = [*kubeforge_site_dirs(), *self.site_dirs]
        # A .pth line that starts with `import` is run: each directory is added as a site
        # directory, its own .pth files included (kubeforge's editable install, the
        # project's path dependencies).
        line = "import site; " + "; ".join(f"site.addsitedir({str(d)!r})" for d in dirs)
        (purelib / _OVERLAY_PTH).write_text(line + "\n", encoding="utf-8")
        executable = directory / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        return str(executable)


def _requirements(pyproject: Path) -> list[Requirement]:
    """The `[project] dependencies` of a pyproject.toml (none when it cannot be read)."""
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    found = []
    for text in (data.get("project") or {}).get("dependencies") or ():
        try:
            found.append(Requirement(str(text)))
        except InvalidRequirement:
            continue
    return found


def _unique(paths: Iterable[Path]) -> list[Path]:
    seen: dict[Path, None] = {}
    for path in paths:
        seen.setdefault(path.resolve(), None)
    return list(seen)
