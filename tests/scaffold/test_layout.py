"""Where a kind's files go: the single-group places, the multigroup places once PROJECT says
`multigroup: true`, and, for a kind the project has already, where its PROJECT entries say it
is, whatever `multigroup` says now."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubeforge._scaffold.layout import Placement, group_package, placement
from kubeforge._scaffold.projectfile import ProjectFile


def project_file(*, multigroup: bool, paths: dict[tuple[str, str], str]) -> ProjectFile:
    project = ProjectFile(domain="example.com", project_name="fleet")
    project.multigroup = multigroup
    for (group, kind), path in paths.items():
        project.resources.append(
            {"group": group, "kind": kind, "version": path.rsplit("/", 1)[1], "path": path}
        )
    return project


def test_a_single_group_kind_is_placed_by_its_kind_alone() -> None:
    place = placement(project_file(multigroup=False, paths={}), "ship", "Frigate")
    assert not place.grouped
    assert place.api_dir("v1") == "api/v1"
    assert place.api_package("v1") == "api.v1"
    assert place.controller_module == "controllers.frigate"
    assert place.tests_dir == "tests"
    assert place.webhook_dir("v2") == "webhooks/v2"
    assert (place.role_stem, place.role_prefix) == ("frigate", "frigate")
    assert place.controller_name is None


def test_a_multigroup_kind_is_placed_under_its_group() -> None:
    place = placement(project_file(multigroup=True, paths={}), "ship", "Frigate")
    assert place == Placement("ship", "Frigate", "ship")
    assert place.api_dir("v1") == "api/ship/v1"
    assert place.api_parent == "api.ship"
    assert place.controller_module == "controllers.ship.frigate"
    assert place.tests_dir == "tests/ship"
    assert place.webhook_package("v1") == "webhooks.ship.v1"
    # kubebuilder's names: config/rbac/ship_frigate_admin_role.yaml, ship-frigate-admin-role,
    # and the controller named ship-frigate.
    assert (place.role_stem, place.role_prefix) == ("ship_frigate", "ship-frigate")
    assert place.controller_name == "ship-frigate"
    assert (place.alias("v1"), place.alias("frigate")) == ("ship_v1", "ship_frigate")


def test_a_kind_of_the_empty_group_keeps_the_single_group_places() -> None:
    assert not placement(project_file(multigroup=True, paths={}), "", "Frigate").grouped


def test_an_existing_kind_stays_where_project_says_it_is() -> None:
    paths = {("ship", "Frigate"): "api/v1", ("crew", "Captain"): "api/crew/v1"}
    turned_on = project_file(multigroup=True, paths=paths)
    assert not placement(turned_on, "ship", "Frigate").grouped  # scaffolded before
    assert placement(turned_on, "crew", "Sailor").grouped  # new
    turned_off = project_file(multigroup=False, paths=paths)
    assert placement(turned_off, "crew", "Captain").api_dir("v2") == "api/crew/v2"
    assert not placement(turned_off, "crew", "Sailor").grouped


@pytest.mark.parametrize(
    ("group", "package"),
    [("ship", "ship"), ("ship-yard", "ship_yard"), ("fleet.ops", "fleet_ops"),
     ("import", "import_"), ("3d", "_3d")],
)  # fmt: skip
def test_a_group_directory_is_a_python_package_name(group: str, package: str) -> None:
    assert group_package(group) == package
    assert package.isidentifier()


def test_multigroup_is_written_only_when_true(tmp_path: Path) -> None:
    # kubebuilder's `multigroup,omitempty`.
    project = ProjectFile(domain="example.com", project_name="fleet")
    project.multigroup = True
    (tmp_path / "PROJECT").write_text(project.render())
    assert yaml.safe_load((tmp_path / "PROJECT").read_text())["multigroup"] is True
    loaded = ProjectFile.load(tmp_path)
    assert loaded.multigroup
    loaded.multigroup = False
    assert "multigroup" not in yaml.safe_load(loaded.render())
