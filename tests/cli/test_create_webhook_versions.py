"""`kubeforge create webhook` for every combination of webhook types, versions and kinds: each
version keeps its own webhook module and test, main.py serves every version's, the
manifests hold every webhook, and the generated project passes its own checks. A request
that cannot be scaffolded is refused in one line and leaves every file as it was.

The project's Frigate gets its webhooks as kubebuilder's CronJob tutorial adds them: a
defaulter, then a validator joining it, then both on a second version, then the conversion
between the two. Its Sloop gets the conversion first (a webhook module of its own), then a
defaulter joining that module, then a validator on the spoke."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from kubeforge._cli.project import load_project
from tests.cli.test_cli_scaffold import cli, project_checks

SHIP = ("--group", "ship")
STEPS = [
    ("init", "--domain", "example.com", "--license", "none"),
    ("create", "api", *SHIP, "--version", "v1", "--kind", "Frigate"),
    ("create", "webhook", *SHIP, "--version", "v1", "--kind", "Frigate", "--defaulting"),
    ("create", "webhook", *SHIP, "--version", "v1", "--kind", "Frigate",
     "--programmatic-validation"),
    ("create", "api", *SHIP, "--version", "v2", "--kind", "Frigate", "--no-controller"),
    ("create", "webhook", *SHIP, "--version", "v2", "--kind", "Frigate", "--defaulting",
     "--programmatic-validation"),
    ("create", "webhook", *SHIP, "--version", "v1", "--kind", "Frigate", "--conversion",
     "--spoke", "v2"),
    ("create", "api", *SHIP, "--version", "v1", "--kind", "Sloop"),
    ("create", "api", *SHIP, "--version", "v2", "--kind", "Sloop", "--no-controller"),
    ("create", "webhook", *SHIP, "--version", "v1", "--kind", "Sloop", "--conversion",
     "--spoke", "v2"),
    ("create", "webhook", *SHIP, "--version", "v1", "--kind", "Sloop", "--defaulting"),
    ("create", "webhook", *SHIP, "--version", "v2", "--kind", "Sloop", "--programmatic-validation"),
]  # fmt: skip


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project after STEPS (tests must not change it)."""
    root = tmp_path_factory.mktemp("versions") / "armada"
    root.mkdir()
    for step in STEPS:
        done = cli(*step, cwd=root)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
        if step[1] == "webhook":
            # Nothing the command meant to write was left for the user to do.
            assert "skipped" not in done.stdout, (step, done.stdout)
            assert "note: " not in done.stderr, (step, done.stderr)
    return root


def tree(root: Path) -> dict[str, tuple[bytes, int] | None]:
    """Every file (content and modification time) and directory under `root`."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else None
        for p in sorted(root.rglob("*"))
    }


def test_main_serves_every_versions_webhooks_once(project: Path) -> None:
    main = (project / "main.py").read_text()
    for kind, version in [("frigate", "v1"), ("frigate", "v2"), ("sloop", "v1"), ("sloop", "v2")]:
        statement = (
            f"from webhooks.{version}.{kind} import setup_{kind}_webhook "
            f"as setup_{kind}_{version}_webhook\n"
        )
        assert main.count(statement) == 1, main
        assert main.count(f"    setup_{kind}_{version}_webhook(manager)\n") == 1, main
    assert len(re.findall(r"^from webhooks\.", main, re.MULTILINE)) == 4, main

    # The conversion module took the defaulter in; its one statement serves both.
    sloop = (project / "webhooks" / "v1" / "sloop.py").read_text()
    assert "class SloopDefaulter(webhook.Defaulter[Sloop]):" in sloop
    assert "log = logging.getLogger(__name__)" in sloop and "\nimport logging\n" in sloop
    assert sloop.count("manager.webhook_for(Sloop)") == 1
    assert "manager.webhook_for(Sloop).defaulter(SloopDefaulter()).complete()" in sloop
    frigate = (project / "webhooks" / "v1" / "frigate.py").read_text()
    assert frigate.count("class Frigate") == 2 and frigate.count("manager.webhook_for(") == 1


def test_each_version_has_its_own_webhook_test(project: Path) -> None:
    imports = {
        "tests/test_frigate_v1_webhook.py": "from webhooks.v1.frigate import FrigateDefaulter, "
        "FrigateValidator",
        "tests/test_frigate_v2_webhook.py": "from webhooks.v2.frigate import FrigateDefaulter, "
        "FrigateValidator",
        "tests/test_sloop_v1_webhook.py": "from webhooks.v1.sloop import SloopDefaulter",
        "tests/test_sloop_v2_webhook.py": "from webhooks.v2.sloop import SloopValidator",
    }
    for path, statement in imports.items():
        text = (project / path).read_text()
        assert statement + "\n" in text, (path, text)
    assert sorted(p.name for p in (project / "tests").glob("test_*_webhook.py")) == sorted(
        Path(p).name for p in imports
    )


async def test_the_manifests_hold_every_webhook_and_do_not_change(project: Path) -> None:
    documents = list(yaml.safe_load_all((project / "config/webhook/manifests.yaml").read_text()))
    names = {d["kind"]: sorted(w["name"] for w in d["webhooks"]) for d in documents}
    assert names == {
        "MutatingWebhookConfiguration": [
            "mfrigate-v1.kb.io",
            "mfrigate-v2.kb.io",
            "msloop-v1.kb.io",
        ],
        "ValidatingWebhookConfiguration": [
            "vfrigate-v1.kb.io",
            "vfrigate-v2.kb.io",
            "vsloop-v2.kb.io",
        ],
    }
    paths = [w["clientConfig"]["service"]["path"] for d in documents for w in d["webhooks"]]
    assert "/mutate-ship-example-com-v2-frigate" in paths and len(set(paths)) == 6
    for plural in ("frigates", "sloops"):
        crd = yaml.safe_load(
            (project / f"config/crd/bases/ship.example.com_{plural}.yaml").read_text()
        )
        assert crd["spec"]["conversion"]["strategy"] == "Webhook", plural
    served = [hook.path for hook in load_project(project).webhooks()]
    assert served.count("/convert") == 1 and len(served) == 7, served

    before = tree(project / "config")
    again = cli("manifests", cwd=project)
    assert again.returncode == 0, again.stderr
    assert "wrote" not in again.stdout
    assert tree(project / "config") == before


async def test_the_generated_project_passes_ruff_mypy_and_its_own_tests(project: Path) -> None:
    tests = await project_checks(project)
    assert "13 passed" in tests, tests


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("webhook", *SHIP, "--version", "v2", "--kind", "Frigate", "--defaulting"),
            "error: Frigate in ship.example.com/v2 already has a defaulting webhook (PROJECT)",
        ),
        (
            ("webhook", *SHIP, "--version", "v1", "--kind", "Sloop", "--programmatic-validation",
             "--defaulting"),
            "error: Sloop in ship.example.com/v1 already has a defaulting webhook (PROJECT)",
        ),
        (
            ("webhook", *SHIP, "--version", "v2", "--kind", "Frigate", "--conversion",
             "--spoke", "v1"),
            "error: Frigate converts through its hub v1 already (PROJECT); a kind has one hub, "
            "and v2 can only be one of its spokes",
        ),
        (
            ("webhook", *SHIP, "--version", "v2", "--kind", "Frigate", "--conversion"),
            "error: --conversion needs the versions that convert to this one: --spoke <version>",
        ),
        (
            ("webhook", *SHIP, "--version", "v1", "--kind", "Frigate"),
            "error: say which webhooks: --defaulting, --programmatic-validation and/or "
            "--conversion",
        ),
        (
            ("webhook", *SHIP, "--version", "v3", "--kind", "Frigate", "--defaulting"),
            "error: no Frigate in ship.example.com/v3 in this project; create it first with "
            "`kubeforge create api`",
        ),
        (
            ("api", "--group", "crew", "--version", "v1", "--kind", "Frigate"),
            "error: Frigate exists in group ship.example.com already (PROJECT): a kind's files "
            "(api/<version>/frigate.py, controllers/frigate.py) are named by the kind alone in the "
            "single-group layout; `kubeforge edit --multigroup` gives each group its own "
            "directories (api/<group>/<version>/)",
        ),
        (
            ("api", "--group", "crew", "--version", "v3", "--kind", "Sloop", "--no-controller"),
            "error: Sloop exists in group ship.example.com already (PROJECT): a kind's files "
            "(api/<version>/sloop.py, controllers/sloop.py) are named by the kind alone in the "
            "single-group layout; `kubeforge edit --multigroup` gives each group its own "
            "directories (api/<group>/<version>/)",
        ),
        (
            ("api", *SHIP, "--version", "v3", "--kind", "FriGate"),
            "error: FriGate would share the files of Frigate (api/<version>/frigate.py, "
            "controllers/frigate.py); choose another kind",
        ),
        (
            ("api", *SHIP, "--version", "v2", "--kind", "Frigate", "--no-controller"),
            "error: Frigate already exists in ship.example.com/v2 (PROJECT); use --no-resource "
            "to add only a controller",
        ),
        (
            ("api", *SHIP, "--version", "v3", "--kind", "Frigate"),
            "error: Frigate already has a controller (in v1); add v3 with --no-controller",
        ),
        (
            ("api", *SHIP, "--version", "v2", "--kind", "Frigate", "--no-resource"),
            "error: Frigate already has a controller (in v1); add v2 with --no-controller",
        ),
        (
            ("api", *SHIP, "--version", "v3", "--kind", "Frigate", "--no-resource"),
            "error: no Frigate in ship.example.com/v3 in this project; scaffold it with --resource",
        ),
        (
            ("api", *SHIP, "--version", "v1", "--kind", "Frigate", "--no-resource",
             "--no-controller"),
            "error: nothing to scaffold: --no-resource and --no-controller",
        ),
    ],
)  # fmt: skip
def test_a_refused_request_leaves_every_file_as_it_was(
    project: Path, args: tuple[str, ...], message: str
) -> None:
    before = tree(project)
    done = cli("create", *args, cwd=project)
    assert done.returncode == 1, (args, done.stdout)
    assert done.stderr.strip().splitlines() == [message], done.stderr
    assert done.stdout == ""
    assert tree(project) == before


def test_a_project_scaffolded_before_keeps_its_one_import_and_test(tmp_path: Path) -> None:
    """A project whose main.py imports `setup_<kind>_webhook` without an alias and whose
    webhook test is tests/test_<kind>_webhook.py: a validator added to that version joins
    them instead of registering the module a second time."""
    root = tmp_path / "older"
    root.mkdir()
    for step in STEPS[:3]:
        assert cli(*step, cwd=root).returncode == 0, step
    main = root / "main.py"
    main.write_text(
        main.read_text()
        .replace(" as setup_frigate_v1_webhook", "")
        .replace("setup_frigate_v1_webhook(manager)", "setup_frigate_webhook(manager)")
    )
    (root / "tests/test_frigate_v1_webhook.py").rename(root / "tests/test_frigate_webhook.py")
    before = main.read_text()

    done = cli(*STEPS[3], cwd=root)
    assert done.returncode == 0, done.stderr
    assert main.read_text() == before
    test = (root / "tests/test_frigate_webhook.py").read_text()
    assert "from webhooks.v1.frigate import FrigateDefaulter, FrigateValidator\n" in test
    assert "async def test_the_validator_admits_a_valid_frigate() -> None:" in test
    assert not (root / "tests/test_frigate_v1_webhook.py").exists()
    served = sorted(hook.path for hook in load_project(root).webhooks())
    assert served == [
        "/mutate-ship-example-com-v1-frigate",
        "/validate-ship-example-com-v1-frigate",
    ]
