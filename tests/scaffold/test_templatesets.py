"""Template sets: the scaffold rendered from the set in force, an older release's taken from a
directory, a checkout, its wheel, or the wheel pip downloads."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from kubeforge._scaffold import templatesets
from kubeforge._scaffold.render import render_tree, template
from kubeforge._scaffold.templatesets import TemplateSetError
from kubeforge._version import __version__
from tests.support import ROOT
from tests.support.scaffolds import OLD_RELEASE, OLD_TEMPLATES, old_templates


def wheel(directory: Path, version: str = OLD_RELEASE, name: str = "kubeforge") -> Path:
    """A wheel of release `version` holding the older template set (and nothing else)."""
    path = directory / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        for file in sorted(OLD_TEMPLATES.rglob("*.tmpl")):
            relative = file.relative_to(OLD_TEMPLATES).as_posix()
            archive.write(file, f"kubeforge/_scaffold/templates/{relative}")
        archive.writestr(
            f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        )
        archive.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr(f"{info}/RECORD", "")
    return path


def test_templates_come_from_the_set_in_force() -> None:
    current = template("init/Dockerfile")
    assert templatesets.active().version == __version__
    older = (OLD_TEMPLATES / "init" / "Dockerfile.tmpl").read_text()
    assert older != current
    with templatesets.using(old_templates()) as in_force:
        assert templatesets.active() is in_force
        assert template("init/Dockerfile") == older
        # The tree of `init` is the older release's: no workflows.
        paths = {path for path, _ in render_tree("init", _values())}
        assert ".github/workflows/test.yml" not in paths and "Dockerfile" in paths
    assert template("init/Dockerfile") == current


def _values() -> dict[str, str]:
    return dict.fromkeys(
        ("project_name", "domain", "kubeforge_version", "header", "license_field"), "x"
    ) | {"license_section": ""}


def test_a_template_an_older_set_lacks_is_this_releases(tmp_path: Path) -> None:
    for folder in ("init", "api", "webhook"):
        (tmp_path / folder).mkdir()
    sparse = templatesets.from_directory(tmp_path, "0.0.1")
    with templatesets.using(sparse):
        assert (
            template("api/controller.py")
            == (ROOT / "src/kubeforge/_scaffold/templates/api/controller.py.tmpl").read_text()
        )
        template("api/controller.py")
    assert sparse.stand_ins == ["api/controller.py"]


def test_a_checkout_holds_its_set() -> None:
    found = templatesets.from_directory(ROOT, "9.9.9")
    assert Path(str(found.root)) == ROOT / "src/kubeforge/_scaffold/templates"
    with pytest.raises(TemplateSetError, match="no kubeforge templates here"):
        templatesets.from_directory(ROOT / "docs", "9.9.9")


def test_a_wheel_holds_its_release_set(tmp_path: Path) -> None:
    path = wheel(tmp_path)
    found = templatesets.resolve(OLD_RELEASE, path, tmp_path / "scratch")
    assert found.version == OLD_RELEASE
    with templatesets.using(found):
        assert template("init/Makefile") == (OLD_TEMPLATES / "init/Makefile.tmpl").read_text()
    with pytest.raises(TemplateSetError, match=f"holds kubeforge {OLD_RELEASE}, not 0.0.2"):
        templatesets.resolve("0.0.2", path, tmp_path / "scratch2")
    with pytest.raises(TemplateSetError, match="a wheel of 'other', not of kubeforge"):
        templatesets.resolve(OLD_RELEASE, wheel(tmp_path, name="other"), tmp_path / "s3")


def test_this_release_needs_no_download(tmp_path: Path) -> None:
    assert templatesets.resolve(__version__, None, tmp_path).is_packaged


def test_an_older_release_is_downloaded_with_pip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "index"
    index.mkdir()
    wheel(index)
    # pip's own configuration: a local directory stands for the package index.
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    found = templatesets.resolve(OLD_RELEASE, None, tmp_path / "scratch")
    assert found.version == OLD_RELEASE
    assert (Path(str(found.root)) / "init/Dockerfile.tmpl").read_text() == (
        OLD_TEMPLATES / "init/Dockerfile.tmpl"
    ).read_text()
    with pytest.raises(
        TemplateSetError, match=re.escape("cannot download kubeforge 0.0.3's wheel")
    ):
        templatesets.resolve("0.0.3", None, tmp_path / "scratch2")


@pytest.mark.parametrize(("given", "release"), [("v0.2.0", "0.2.0"), ("0.2.0rc1", "0.2.0rc1")])
def test_releases_are_written_as_kubeforge_writes_them(given: str, release: str) -> None:
    assert templatesets.normalize_version(given) == release


def test_a_release_must_be_a_version() -> None:
    with pytest.raises(TemplateSetError, match="'latest' is not a kubeforge release"):
        templatesets.normalize_version("latest")
