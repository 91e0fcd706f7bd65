"""`kubeforge edit`: `--multigroup[=true|false]` sets PROJECT's `multigroup` (and says which
kinds keep their places), `--plugins` turns a plugin on in an existing project with the files
`init --plugins` would have written; run again, each changes nothing; a request it cannot do
is refused in one line and changes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from kubeforge._scaffold import grafana
from tests.cli.test_cli_scaffold import cli
from tests.cli.test_create_webhook_versions import tree

INIT = ("init", "--domain", "example.com", "--license", "none")


def new_project(root: Path, *args: str) -> Path:
    root.mkdir(parents=True)
    done = cli(*INIT, *args, cwd=root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A single-group project with a kind (tests copy it, or leave it as it is)."""
    root = new_project(tmp_path_factory.mktemp("edit") / "fleet")
    done = cli("create", "api", "--group", "ship", "--version", "v1", "--kind", "Frigate", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def project_yaml(root: Path) -> dict[str, object]:
    data = yaml.safe_load((root / "PROJECT").read_text())
    assert isinstance(data, dict)
    return data


def test_multigroup_is_turned_on_and_off_in_project(fleet: Path, tmp_path: Path) -> None:
    root = shutil.copytree(fleet, tmp_path / "fleet")
    done = cli("edit", "--multigroup", cwd=root)
    assert done.returncode == 0, done.stderr
    assert project_yaml(root)["multigroup"] is True
    assert done.stdout.splitlines() == [
        "updated    PROJECT",
        "The project is multigroup: new kinds go to api/<group>/<version>/, controllers/<group>/, "
        "tests/<group>/ and webhooks/<group>/<version>/.",
        "Kinds scaffolded before keep their places: Frigate (ship.example.com) in api/v1/. New "
        "versions, controllers and webhooks of a kind go beside it.",
    ]
    # Run again, and with kubebuilder's explicit spellings: nothing is written.
    before = tree(root)
    for args in (("--multigroup",), ("--multigroup=True",)):
        done = cli("edit", *args, cwd=root)
        assert done.returncode == 0, done.stderr
        assert "updated" not in done.stdout
    assert tree(root) == before

    done = cli("edit", "--multigroup=false", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "multigroup" not in project_yaml(root)
    assert done.stdout.splitlines() == [
        "updated    PROJECT",
        "The project is single-group: new kinds go to api/<version>/, controllers/, tests/ and "
        "webhooks/<version>/.",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "error: nothing to edit: give --multigroup[=true|false] and/or --plugins <name>"),
        (("--multigroup=maybe",), "error: invalid value 'maybe' for --multigroup: true or false"),
        (
            ("--multigroup", "false"),
            "error: unexpected argument 'false' (a value of --multigroup follows an equals sign: "
            "--multigroup=false)",
        ),
        (("--multi-group",), "error: no such option: --multi-group (see `kubeforge edit --help`)"),
        (
            ("--plugins", "helm"),
            "error: unknown plugin 'helm': choose among grafana (grafana.kubebuilder.io/v1-alpha)",
        ),
        (
            ("--multigroup", "--plugins", "grafana,dashboards"),
            "error: unknown plugin 'dashboards': choose among grafana "
            "(grafana.kubebuilder.io/v1-alpha)",
        ),
    ],
)
def test_a_request_edit_cannot_do_is_refused_in_one_line(
    fleet: Path, args: tuple[str, ...], message: str
) -> None:
    before = tree(fleet)
    done = cli("edit", *args, cwd=fleet)
    assert done.returncode == 1, done.stdout
    assert done.stderr.strip().splitlines() == [message]
    assert tree(fleet) == before


def test_edit_outside_a_project_is_refused(tmp_path: Path) -> None:
    done = cli("edit", "--multigroup", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: {tmp_path}: not a kubeforge project (no PROJECT file); run `kubeforge init` first"
    )
    assert list(tmp_path.iterdir()) == []


def test_plugins_turned_on_later_write_what_init_writes(tmp_path: Path) -> None:
    # Directories of one name: the project's name is in its files.
    at_init = new_project(tmp_path / "first" / "fleet", "--plugins", "grafana")
    later = new_project(tmp_path / "later" / "fleet")
    assert not (later / "grafana").exists()

    done = cli("edit", "--plugins", grafana.PLUGIN, cwd=later)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"wrote      {grafana.RUNTIME_DASHBOARD}",
        f"wrote      {grafana.RESOURCES_DASHBOARD}",
        f"wrote      {grafana.CUSTOM_CONFIG}",
        "updated    PROJECT",
        f"Plugin grafana ({grafana.PLUGIN}) is on.",
    ]
    assert contents(later) == contents(at_init)
    assert project_yaml(later)["plugins"] == {grafana.PLUGIN: {}}

    # Again: the dashboards come out the same, the project's metrics config is its own.
    config = later / grafana.CUSTOM_CONFIG
    config.write_text("customMetrics:\n  - metric: fleet_size\n    type: gauge\n")
    before = tree(later)
    done = cli("edit", "--plugins", "grafana", cwd=later)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"wrote      {grafana.CUSTOM_DASHBOARD}",
        f"Plugin grafana ({grafana.PLUGIN}) is on.",
    ]
    after = tree(later)
    assert after.pop(grafana.CUSTOM_DASHBOARD) is not None
    assert after == before


def contents(root: Path) -> dict[str, bytes | None]:
    return {path: entry and entry[0] for path, entry in tree(root).items()}
