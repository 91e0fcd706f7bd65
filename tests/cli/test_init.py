"""`kubeforge init`'s record of the release that scaffolded the project (PROJECT's cliVersion,
as kubebuilder's), its --license-file, and the license read back from a header."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubeforge._cli.init import _boilerplate, license_of
from kubeforge._scaffold import templatesets
from kubeforge._version import __version__
from tests.support.scaffolds import OLD_RELEASE, old_templates, scaffold

HEADER = "# Copyright 1999 The Armada.\n# All rights reserved.\n"


def test_project_records_the_release_whose_templates_wrote_it(tmp_path: Path) -> None:
    scaffold(tmp_path / "now", [["init", "--domain", "example.com"]], templatesets.packaged())
    recorded = yaml.safe_load((tmp_path / "now" / "PROJECT").read_text())
    assert recorded["cliVersion"] == __version__

    scaffold(tmp_path / "then", [["init", "--domain", "example.com"]], old_templates())
    assert yaml.safe_load((tmp_path / "then" / "PROJECT").read_text())["cliVersion"] == (
        OLD_RELEASE
    )
    pyproject = (tmp_path / "then" / "pyproject.toml").read_text()
    assert f'dependencies = ["kubeforge>={OLD_RELEASE}"]' in pyproject


def test_a_license_file_is_the_header_as_it_is(tmp_path: Path) -> None:
    header = tmp_path / "header.txt"
    header.write_text(HEADER)
    scaffold(
        tmp_path / "armada",
        [["init", "--domain", "example.com", "--license-file", str(header)]],
        templatesets.packaged(),
    )
    root = tmp_path / "armada"
    assert (root / "hack" / "boilerplate.py.txt").read_text() == HEADER
    assert (root / "main.py").read_text().startswith(HEADER + "\n")
    # --license (apache2 by default) still names the license in pyproject.toml.
    assert 'license = "Apache-2.0"' in (root / "pyproject.toml").read_text()


@pytest.mark.parametrize("license_", ["apache2", "copyright"])
@pytest.mark.parametrize("owner", ["", "The Fleet Authors"])
def test_the_license_and_owner_are_read_back_from_the_header(license_: str, owner: str) -> None:
    assert license_of(_boilerplate(license_, owner)) == (license_, owner)


def test_other_headers_are_no_license_of_inits() -> None:
    assert license_of(HEADER) == ("none", "")
    assert license_of("") == ("none", "")
