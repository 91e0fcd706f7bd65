"""Images mapped to project directories: a container whose image is mapped runs its command
from the directory, as the image built from it would run it.

`kubeforge dev --image controller:latest=./` maps an image reference to a directory. The
container's command line is put together as a container runtime does, with the image's
`ENTRYPOINT` and `CMD` (and `ENV`) read from the directory's Dockerfile (its last stage).
What the image's `PATH` would provide comes from the current Python environment, the one
`kubeforge dev` runs in, and the project's own `.venv` for what the project depends on
besides (projectenv.py), with the directory first on the module path:

- the directory's console scripts (`[project.scripts]` of its pyproject.toml, such as the
  scaffold's `manager = "main:main"`) are commands, as they are in the image's /venv/bin;
- `python`, `python3` are this environment's interpreter (one that also sees the project's
  `.venv`, when it has one), and `kubeforge` this kubeforge.

They are small launchers in a `bin` directory put first on the container's PATH, so they
are found from its command and from shell scripts alike. Decision 0030 says why.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeforge._cluster.commandline import full_image

__all__ = ["ImageMap", "ProjectImage", "parse_image_mapping"]

_ENTRY_POINT = re.compile(r"^\s*([\w.]+)\s*(?::\s*([\w.]+))?\s*(?:\[.*\])?\s*$")
_ENV_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def parse_image_mapping(text: str) -> tuple[str, Path]:
    """`IMAGE=DIRECTORY` (the value of `kubeforge dev --image`); ValueError when malformed
    or the directory does not exist."""
    image, sep, directory = text.partition("=")
    if not sep or not image.strip() or not directory.strip():
        raise ValueError(f"{text!r}: expected IMAGE=DIRECTORY, e.g. controller:latest=./")
    path = Path(directory.strip()).expanduser().resolve()
    if not path.is_dir():
        raise ValueError(f"{text!r}: {path} is not a directory")
    return image.strip(), path


@dataclass
class ProjectImage:
    """What an image built from a project directory holds: its entrypoint, default arguments
    and environment (from the Dockerfile) and its commands (console scripts)."""

    directory: Path
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    env: list[tuple[str, str]] = field(default_factory=list)
    scripts: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, directory: Path) -> ProjectImage:
        image = cls(directory)
        dockerfile = directory / "Dockerfile"
        if dockerfile.is_file():
            image._read_dockerfile(dockerfile.read_text(encoding="utf-8", errors="replace"))
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError):
                data = {}
            scripts = (data.get("project") or {}).get("scripts") or {}
            image.scripts = {
                str(k): str(v)
                for k, v in scripts.items()
                if isinstance(v, str) and _ENTRY_POINT.match(v)
            }
        return image

    def _read_dockerfile(self, text: str) -> None:
        # Instructions of the last stage; a line ending in a backslash continues.
        instructions: list[tuple[str, str]] = []
        for line in re.sub(r"\\\r?\n", " ", text).splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            keyword, _, rest = line.partition(" ")
            keyword = keyword.upper()
            if keyword == "FROM":
                instructions.clear()
            instructions.append((keyword, rest.strip()))
        for keyword, rest in instructions:
            if keyword == "ENTRYPOINT":
                self.entrypoint = _exec_form(rest)
                self.cmd = []  # as Docker does: a new ENTRYPOINT resets CMD
            elif keyword == "CMD":
                self.cmd = _exec_form(rest)
            elif keyword == "ENV":
                self.env.extend(_env_pairs(rest))

    def command_line(self, command: list[str], args: list[str]) -> list[str]:
        """The container's command line: `command` replaces ENTRYPOINT (and drops CMD),
        `args` replaces CMD, as Kubernetes specifies."""
        if command:
            return command + args
        return self.entrypoint + (args or self.cmd)

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """The image's ENV over `base`, each value's `$VAR` taken from what is set so far."""
        env = dict(base)

        def value(match: re.Match[str]) -> str:
            return env.get(match.group(1) or match.group(2), "")

        for key, raw in self.env:
            env[key] = _ENV_REFERENCE.sub(value, raw)
        return env

    def launchers(self, python: str = sys.executable) -> dict[str, str]:
        """The commands the image would have on its PATH, as scripts: name -> content.
        Console scripts are written as pip writes them, run by `python`."""
        shim = f'#!/bin/sh\nexec {shlex.quote(python)} "$@"\n'
        scripts = {
            "python": shim,
            "python3": shim,
            "kubeforge": _console_script(python, "kubeforge", "kubeforge._cli.main", "app"),
        }
        for name, entry in self.scripts.items():
            match = _ENTRY_POINT.match(entry)
            if match is None or "/" in name or not name:
                continue
            scripts[name] = _console_script(python, name, match.group(1), match.group(2) or "")
        return scripts


def _console_script(python: str, name: str, module: str, attribute: str) -> str:
    """A console script calling `module:attribute`, run by `python` (through /bin/sh when
    that path cannot be a `#!` line, as pip does it)."""
    if len(python) < 120 and not any(c.isspace() for c in python):
        head = f"#!{python}\n"
    else:
        head = f"#!/bin/sh\n'''exec' {shlex.quote(python)} \"$0\" \"$@\"\n' '''\n"
    lines = [head + "import importlib", "import sys", ""]
    lines.append(f"_target = importlib.import_module({module!r})")
    lines.extend(f"_target = getattr(_target, {part!r})" for part in attribute.split(".") if part)
    lines += [
        'if __name__ == "__main__":',
        f"    sys.argv[0] = {name!r}",
        "    sys.exit(_target())",
    ]
    return "\n".join(lines) + "\n"


def _exec_form(text: str) -> list[str]:
    """`["a", "b"]` (exec form) as is; anything else (shell form) through `/bin/sh -c`."""
    if text.startswith("["):
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and all(isinstance(p, str) for p in parsed):
            return list(parsed)
    return ["/bin/sh", "-c", text] if text else []


def _env_pairs(text: str) -> list[tuple[str, str]]:
    """`ENV a=1 b="two words"`, or the old form `ENV a one value`."""
    try:
        words = shlex.split(text, posix=True)
    except ValueError:
        return []
    if words and "=" not in words[0]:
        return [(words[0], text.split(None, 1)[1] if len(words) > 1 else "")]
    return [(key, value) for key, sep, value in (w.partition("=") for w in words) if sep and key]


class ImageMap:
    """Image references mapped to project directories (`kubeforge dev --image`)."""

    def __init__(self, images: Mapping[str, Path | str] | None = None) -> None:
        self._directories = {
            full_image(image): Path(directory).resolve()
            for image, directory in (images or {}).items()
        }

    def __bool__(self) -> bool:
        return bool(self._directories)

    def directory(self, image: str) -> Path | None:
        """The directory `image` is mapped to, if any."""
        if not self._directories or not image:
            return None
        return self._directories.get(full_image(image))

    def project(self, directory: Path) -> ProjectImage:
        """What the image of `directory` holds, read again each time a container starts
        (so an edit of the Dockerfile or pyproject.toml applies to the next start)."""
        return ProjectImage.read(directory)
