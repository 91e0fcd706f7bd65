"""Template sets: the templates of one kubeforge release, by which the scaffold is written.

The templates under `kubeforge/_scaffold/templates/` are this release's set. Each release's
wheel holds its own, so the scaffold an older release wrote can be written again by this one:
`kubeforge alpha update` renders the project's scaffold from the set of the release it was
made with (the merge base) and from this release's, and merges the difference into the
project (decision 58). A set is found, for a release other than this one, in

- a directory holding the set (its `init/`, `api/` and `webhook/` folders), a source
  checkout of that release, or an unpacked wheel;
- a kubeforge wheel file (`kubeforge-X-py3-none-any.whl`);
- else the release's wheel, downloaded by `pip download kubeforge==X`, as kubebuilder's
  `alpha update` downloads the release binary (internal/cli/alpha/internal/update/helpers/
  download.go).

While a set is in force (`using`), `render.template` and `render.render_tree` read from it;
a template the code asks for and an older set lacks is read from this release's set, and
noted in `TemplateSet.stand_ins`.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from email.parser import HeaderParser
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from packaging.version import InvalidVersion, Version

from kubeforge._version import __version__

__all__ = [
    "TemplateSet",
    "TemplateSetError",
    "active",
    "normalize_version",
    "packaged",
    "resolve",
    "using",
]

# Where a set sits inside a checkout, an unpacked wheel or a wheel.
_INSIDE = ("src/kubeforge/_scaffold/templates", "kubeforge/_scaffold/templates")
_FOLDERS = ("init", "api", "webhook")


class TemplateSetError(ValueError):
    """A template set cannot be found or read; the message says what to give instead."""


@dataclass(frozen=True)
class TemplateSet:
    """The templates of kubeforge release `version`, under `root`."""

    version: str
    root: Traversable
    origin: str
    """Where the set comes from, for messages: `kubeforge 0.1.0`, a path."""
    stand_ins: list[str] = field(default_factory=list, compare=False)
    """Templates this set lacks that were read from this release's set instead."""

    @property
    def is_packaged(self) -> bool:
        return self.origin == _PACKAGED_ORIGIN


_PACKAGED_ORIGIN = "this kubeforge"


def packaged() -> TemplateSet:
    """This release's template set (package data)."""
    root = resources.files("kubeforge._scaffold").joinpath("templates")
    return TemplateSet(__version__, root, _PACKAGED_ORIGIN)


_active: ContextVar[TemplateSet | None] = ContextVar("kubeforge_template_set", default=None)


def active() -> TemplateSet:
    """The template set in force: the one given to `using`, else this release's."""
    return _active.get() or packaged()


@contextlib.contextmanager
def using(template_set: TemplateSet) -> Iterator[TemplateSet]:
    """Render from `template_set` within the block."""
    token = _active.set(template_set)
    try:
        yield template_set
    finally:
        _active.reset(token)


def normalize_version(text: str) -> str:
    """A release as kubeforge writes it (PEP 440, `v` prefix dropped: `v0.2.0` is `0.2.0`)."""
    try:
        return str(Version(text.strip().removeprefix("v")))
    except InvalidVersion:
        raise TemplateSetError(
            f"{text!r} is not a kubeforge release (e.g. 0.1.0, 0.2.0rc1)"
        ) from None


def _is_set(path: Path) -> bool:
    return all((path / folder).is_dir() for folder in _FOLDERS)


def from_directory(path: Path, version: str) -> TemplateSet:
    """The set in a directory: the set itself, or a checkout or unpacked wheel holding it."""
    for candidate in (path, *(path / inside for inside in _INSIDE)):
        if _is_set(candidate):
            return TemplateSet(version, candidate, str(path))
    raise TemplateSetError(
        f"{path}: no kubeforge templates here (neither the init/, api/ and webhook/ folders of "
        "a template set, nor a kubeforge checkout or unpacked wheel holding them)"
    )


def wheel_version(path: Path) -> str:
    """The release a kubeforge wheel holds (its METADATA's Name and Version)."""
    try:
        with zipfile.ZipFile(path) as archive:
            name = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
            if name is None:
                raise TemplateSetError(f"{path}: not a wheel (no .dist-info/METADATA)")
            metadata = HeaderParser().parsestr(archive.read(name).decode("utf-8"))
    except (OSError, zipfile.BadZipFile) as exc:
        raise TemplateSetError(f"{path}: cannot be read as a wheel: {exc}") from None
    if (metadata.get("Name") or "").lower() != "kubeforge":
        raise TemplateSetError(f"{path}: a wheel of {metadata.get('Name')!r}, not of kubeforge")
    return normalize_version(str(metadata.get("Version") or ""))


def extract_wheel(path: Path, into: Path) -> TemplateSet:
    """The set inside a kubeforge wheel, unpacked under `into`."""
    version = wheel_version(path)
    prefix = _INSIDE[1] + "/"
    with zipfile.ZipFile(path) as archive:
        members = [n for n in archive.namelist() if n.startswith(prefix) and not n.endswith("/")]
        for name in members:
            target = into / name[len(prefix) :]
            if ".." in Path(name).parts:  # a crafted archive writes nowhere else
                raise TemplateSetError(f"{path}: unsafe member {name!r}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(name))
    if not _is_set(into):
        raise TemplateSetError(f"{path}: kubeforge {version}'s wheel holds no templates")
    return TemplateSet(version, into, str(path))


def download(version: str, into: Path) -> TemplateSet:
    """Release `version`'s set, from its wheel as `pip download` fetches it (the index and
    options pip is configured with: PIP_INDEX_URL, PIP_FIND_LINKS, ...)."""
    wheels = into / "wheels"
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--dest",
        str(wheels),
        f"kubeforge=={version}",
    ]
    try:
        # A real timeout: the download is I/O, not the program's clock.
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TemplateSetError(f"cannot download kubeforge {version}: {exc}") from None
    found = sorted(wheels.glob("kubeforge-*.whl"))
    if done.returncode != 0 or not found:
        reason = (done.stderr or done.stdout).strip().splitlines()
        raise TemplateSetError(
            f"cannot download kubeforge {version}'s wheel with pip"
            + (f" ({reason[-1]})" if reason else "")
        )
    return extract_wheel(found[0], into / "templates")


def resolve(version: str, source: Path | None, scratch: Path) -> TemplateSet:
    """The set of release `version`: this release's, the one at `source` (a directory or a
    wheel), or the release's downloaded wheel's; `scratch` is a directory for unpacking."""
    if source is not None:
        if not source.exists():
            raise TemplateSetError(f"{source}: no such file or directory")
        if source.is_file():
            template_set = extract_wheel(source, scratch / "templates")
            if template_set.version != version:
                raise TemplateSetError(
                    f"{source} holds kubeforge {template_set.version}, not {version}"
                )
            return template_set
        return from_directory(source, version)
    if version == __version__:
        return packaged()
    return download(version, scratch)
