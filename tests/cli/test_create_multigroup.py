"""`create api` and `create webhook` in a multigroup project (`kubeforge edit --multigroup`):
each group has its own directories, so the same Kind in two groups gives two kinds with files
of their own, two CRDs and the RBAC for both from `kubeforge manifests`, two controllers
registered in main.py under names of their own, webhooks of distinct names, and the project
passes its own checks. In a single-group project the same Kind in a second group is refused
with a message naming `kubeforge edit --multigroup`, leaving every file as it was; after the
edit the same command works, and the kind scaffolded before stays where it was.

The fleet's Frigate is in groups ship and crew: both get a controller, ship's a defaulting
and a validating webhook, crew's a defaulting webhook and a second version, v2, converted
through v1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeforge._cli.project import load_project
from tests.cli.test_cli_project import kustomize, rules_of
from tests.cli.test_cli_scaffold import cli, project_checks
from tests.cli.test_create_webhook_versions import tree

GROUPS = ("ship", "crew")
FRIGATE = ("--version", "v1", "--kind", "Frigate")
STEPS = [
    ("init", "--domain", "example.com", "--license", "none"),
    ("edit", "--multigroup"),
    ("create", "api", "--group", "ship", *FRIGATE),
    ("create", "api", "--group", "crew", *FRIGATE),
    ("create", "webhook", "--group", "ship", *FRIGATE, "--defaulting",
     "--programmatic-validation"),
    ("create", "webhook", "--group", "crew", *FRIGATE, "--defaulting"),
    ("create", "api", "--group", "crew", "--version", "v2", "--kind", "Frigate",
     "--no-controller"),
    ("create", "webhook", "--group", "crew", *FRIGATE, "--conversion", "--spoke", "v2"),
]  # fmt: skip
GENERATED = [
    "config/crd/bases/ship.example.com_frigates.yaml",
    "config/crd/bases/crew.example.com_frigates.yaml",
    "config/rbac/role.yaml",
    "config/webhook/manifests.yaml",
]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project after STEPS, its generated manifests then removed and written again by
    `kubeforge manifests` (tests must not change it)."""
    root = tmp_path_factory.mktemp("multigroup") / "fleet"
    root.mkdir()
    for step in STEPS:
        done = cli(*step, cwd=root)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
        if step[:2] == ("create", "webhook"):
            # Nothing the command meant to write was left for the user to do.
            assert "skipped" not in done.stdout and "note: " not in done.stderr, (step, done)
    for path in GENERATED:
        (root / path).unlink()
    done = cli("manifests", cwd=root)
    assert done.returncode == 0, done.stderr
    for path in GENERATED:
        assert f"wrote      {path}" in done.stdout.splitlines(), (path, done.stdout)
    return root


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def test_each_group_has_its_own_directories(fleet: Path) -> None:
    for group in GROUPS:
        for path in (
            f"api/{group}/__init__.py",
            f"api/{group}/v1/frigate.py",
            f"controllers/{group}/__init__.py",
            f"controllers/{group}/frigate.py",
            f"tests/{group}/__init__.py",
            f"tests/{group}/test_frigate.py",
            f"webhooks/{group}/v1/frigate.py",
            f"config/samples/{group}_v1_frigate.yaml",
        ):
            assert (fleet / path).is_file(), path
        for role in ("admin", "editor", "viewer"):
            file = fleet / f"config/rbac/{group}_frigate_{role}_role.yaml"
            assert load(file)["metadata"]["name"] == f"{group}-frigate-{role}-role"
    assert (fleet / "tests/ship/test_frigate_v1_webhook.py").is_file()
    assert (fleet / "tests/crew/test_frigate_conversion.py").is_file()
    assert "from api.crew import v1, v2" in (fleet / "api/crew/__init__.py").read_text()
    assert "from api.crew import v1\n" in (fleet / "api/crew/v2/frigate.py").read_text()
    # Nothing in the single-group places.
    assert sorted(p.name for p in (fleet / "api").iterdir()) == ["__init__.py", "crew", "ship"]
    assert not list((fleet / "controllers").glob("*.py"))[1:]  # __init__.py alone

    project = load(fleet / "PROJECT")
    assert project["multigroup"] is True
    assert [(r["group"], r["version"], r["path"]) for r in project["resources"]] == [
        ("ship", "v1", "api/ship/v1"),
        ("crew", "v1", "api/crew/v1"),
        ("crew", "v2", "api/crew/v2"),
    ]


def test_the_end_to_end_checks_of_each_groups_webhooks_have_names_of_their_own(
    fleet: Path,
) -> None:
    """The same Kind's checks in two groups are two tests, each expecting its own webhook's
    name in a refusal (one name for both would leave one test shadowing the other)."""
    suite = (fleet / "test/e2e/test_webhooks.py").read_text()
    for group in ("ship", "crew"):
        assert suite.count(f"def test_the_{group}_frigate_v1_defaulter_admits_the_sample(") == 1
        assert f'admission webhook "m{group}-frigate-v1.kb.io" denied the request' in suite
    assert "def test_the_ship_frigate_v1_validator_admits_the_sample(" in suite
    assert "def test_the_crew_frigate_converts_between_its_versions_through_the_webhook(" in suite


def test_main_registers_a_controller_and_the_webhooks_of_each_group(fleet: Path) -> None:
    main = (fleet / "main.py").read_text()
    for group in GROUPS:
        assert f"from api.{group} import v1 as {group}_v1\n" in main
        assert f"from controllers.{group} import frigate as {group}_frigate\n" in main
        assert (
            f'    manager.controller().named("{group}-frigate").for_({group}_v1.Frigate)'
            f".complete(\n        {group}_frigate.FrigateReconciler()\n    )\n"
        ) in main
        assert (
            f"from webhooks.{group}.v1.frigate import setup_frigate_webhook as "
            f"setup_{group}_frigate_v1_webhook\n"
        ) in main
        assert main.count(f"    setup_{group}_frigate_v1_webhook(manager)\n") == 1

    project = load_project(fleet)
    assert sorted(project.offline_manager().controllers) == ["crew-frigate", "ship-frigate"]
    kinds = sorted(
        (r.__kubeforge__.gvk.group, r.__kubeforge__.gvk.version) for r in project.resources
    )
    assert kinds == [
        ("crew.example.com", "v1"),
        ("crew.example.com", "v2"),
        ("ship.example.com", "v1"),
    ]


async def test_manifests_hold_both_kinds_and_the_rbac_for_both(fleet: Path) -> None:
    for group in GROUPS:
        crd = load(fleet / f"config/crd/bases/{group}.example.com_frigates.yaml")
        assert crd["metadata"]["name"] == f"frigates.{group}.example.com"
    crew = load(fleet / "config/crd/bases/crew.example.com_frigates.yaml")
    assert sorted(v["name"] for v in crew["spec"]["versions"]) == ["v1", "v2"]

    (role,) = [d for d in yaml.safe_load_all((fleet / "config/rbac/role.yaml").read_text()) if d]
    verbs = rules_of(role)
    for group in GROUPS:
        assert "watch" in verbs[(f"{group}.example.com", "frigates")]
        assert verbs[(f"{group}.example.com", "frigates/status")] == ["get", "patch", "update"]

    webhooks = [
        (hook["name"], hook["clientConfig"]["service"]["path"])
        for config in yaml.safe_load_all((fleet / "config/webhook/manifests.yaml").read_text())
        for hook in config["webhooks"]
    ]
    assert sorted(webhooks) == [
        ("mcrew-frigate-v1.kb.io", "/mutate-crew-example-com-v1-frigate"),
        ("mship-frigate-v1.kb.io", "/mutate-ship-example-com-v1-frigate"),
        ("vship-frigate-v1.kb.io", "/validate-ship-example-com-v1-frigate"),
    ]

    # config/default has both CRDs and each group's helper roles.
    built = await kustomize(fleet / "config" / "default")
    names = {(o["kind"], o["metadata"]["name"]) for o in built}
    for group in GROUPS:
        assert ("CustomResourceDefinition", f"frigates.{group}.example.com") in names
        assert ("ClusterRole", f"fleet-{group}-frigate-editor-role") in names


async def test_the_project_passes_its_own_checks(fleet: Path) -> None:
    # ruff, mypy and the project's tests: its setup, each group's controller, ship's
    # defaulter and validator, crew's defaulter, and crew's round trips through v1 and v2.
    tests = await project_checks(fleet)
    assert "8 passed" in tests, tests


def test_a_second_group_of_a_kind_needs_the_multigroup_layout(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    root.mkdir()
    for step in STEPS[:1] + STEPS[2:3]:  # init, create api ship Frigate (single-group)
        done = cli(*step, cwd=root)
        assert done.returncode == 0, done.stderr
    before = tree(root)
    crew = ("create", "api", "--group", "crew", *FRIGATE)
    done = cli(*crew, cwd=root)
    assert done.returncode == 1, done.stdout
    assert done.stderr.strip().splitlines() == [
        "error: Frigate exists in group ship.example.com already (PROJECT): a kind's files "
        "(api/<version>/frigate.py, controllers/frigate.py) are named by the kind alone in the "
        "single-group layout; `kubeforge edit --multigroup` gives each group its own "
        "directories (api/<group>/<version>/)"
    ]
    assert tree(root) == before  # every file and directory, byte for byte, untouched

    assert cli("edit", "--multigroup", cwd=root).returncode == 0
    single = {p: c for p, c in tree(root).items() if p.startswith(("api/v1", "controllers/"))}
    done = cli(*crew, cwd=root)
    assert done.returncode == 0, done.stderr
    after = tree(root)
    assert {p: after[p] for p in single} == single  # ship's Frigate stays where it was
    assert (root / "api/crew/v1/frigate.py").is_file()
    assert sorted(load_project(root).offline_manager().controllers) == ["crew-frigate", "frigate"]

    # Two groups whose names differ only where a package name cannot follow are refused too.
    done = cli(
        "create", "api", "--group", "ship-yard", "--version", "v1", "--kind", "Dock", cwd=root
    )
    assert done.returncode == 0, done.stderr
    before = tree(root)
    done = cli(
        "create", "api", "--group", "ship.yard", "--version", "v1", "--kind", "Crane", cwd=root
    )
    assert done.returncode == 1, done.stdout
    assert done.stderr.strip().splitlines() == [
        "error: group ship.yard.example.com would share the directories of group "
        "ship-yard.example.com (api/ship_yard/, controllers/ship_yard/): their names differ only "
        "in characters a package name cannot hold"
    ]
    assert tree(root) == before


def test_init_multigroup_starts_a_project_in_the_multigroup_layout(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    root.mkdir()
    done = cli(*STEPS[0], "--multigroup", cwd=root)
    assert done.returncode == 0, done.stderr
    assert load(root / "PROJECT")["multigroup"] is True
    done = cli(*STEPS[2], "--no-controller", cwd=root)
    assert done.returncode == 0, done.stderr
    assert (root / "api/ship/v1/frigate.py").is_file()
