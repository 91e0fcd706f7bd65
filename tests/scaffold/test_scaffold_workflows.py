"""The CI that `kubeforge init` scaffolds, as kubebuilder v4 writes it: GitHub workflows for
lint, test and test-e2e, valid by SchemaStore's workflow schema (tests/data/schemastore) and
running only targets the scaffolded Makefile has; a dev container that sets the project up.
A project scaffolded before them keeps working without them."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.cli.test_cli_scaffold import cli
from tests.support import DATA

WORKFLOWS = ("lint.yml", "test.yml", "test-e2e.yml")
SCHEMA = DATA / "schemastore" / "github-workflow.json"


class WorkflowLoader(yaml.SafeLoader):
    """YAML as GitHub reads a workflow: only true and false are booleans (YAML 1.2), so the
    `on:` key stays a string where YAML 1.1 makes it True."""


WorkflowLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
WorkflowLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), list("tf")
)


def load_workflow(path: Path) -> dict[str, Any]:
    document = yaml.load(path.read_text(encoding="utf-8"), Loader=WorkflowLoader)
    assert isinstance(document, dict)
    return document


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ci") / "fleet"
    root.mkdir()
    done = cli("init", "--domain", "example.com", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def test_the_workflows_are_valid_github_workflows(project: Path) -> None:
    validator = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    found = sorted(p.name for p in (project / ".github" / "workflows").iterdir())
    assert found == sorted(WORKFLOWS)
    for name in WORKFLOWS:
        workflow = load_workflow(project / ".github" / "workflows" / name)
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(workflow)]
        assert not errors, (name, errors)
        # As kubebuilder's: on every push and pull request, with no token rights but reading.
        assert set(workflow["on"]) == {"push", "pull_request"}
        assert workflow["permissions"] == {}
        (job,) = workflow["jobs"].values()
        assert job["permissions"] == {"contents": "read"}
        uses = [step["uses"] for step in job["steps"] if "uses" in step]
        assert all(re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", u) for u in uses), uses


def test_the_schema_refuses_what_github_refuses(project: Path) -> None:
    # The check above could fail: a step both running and using an action is refused.
    validator = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    workflow = load_workflow(project / ".github" / "workflows" / "test.yml")
    workflow["jobs"]["test"]["steps"][0]["run"] = "make test"
    assert list(validator.iter_errors(workflow))
    del workflow["on"]
    assert any("'on' is a required property" in e.message for e in validator.iter_errors(workflow))


def run_lines(project: Path) -> list[list[str]]:
    lines = []
    for name in WORKFLOWS:
        for job in load_workflow(project / ".github" / "workflows" / name)["jobs"].values():
            for step in job["steps"]:
                for line in str(step.get("run", "")).splitlines():
                    if line.strip():
                        lines.append(shlex.split(line))
    return lines


def test_the_workflows_run_what_the_project_has(project: Path) -> None:
    makefile = (project / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([A-Za-z0-9_-]+):", makefile, re.MULTILINE))
    extras = tomllib.loads((project / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    run = run_lines(project)
    made = [words[1] for words in run if words[0] == "make"]
    assert sorted(made) == ["lint", "test", "test-e2e", "typecheck"]
    for target in made:
        assert target in targets, target
        # make itself finds the target and everything it runs first.
        dry = subprocess.run(
            [shutil.which("make") or "make", "-n", target],
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
        )
        assert dry.returncode == 0, (target, dry.stderr)
    installs = [words for words in run if words[:4] == ["python", "-m", "pip", "install"]]
    assert installs
    for words in installs:
        (spec,) = (w for w in words[4:] if not w.startswith("-"))
        extra = re.fullmatch(r"\.\[(\w+)\]", spec)
        assert extra and extra.group(1) in extras, spec
    assert {words[0] for words in run} <= {"make", "python"}


def test_the_dev_container_sets_the_project_up(project: Path) -> None:
    settings = json.loads((project / ".devcontainer" / "devcontainer.json").read_text())
    assert settings["name"] == "fleet (kubeforge)"
    assert settings["image"].startswith("mcr.microsoft.com/devcontainers/python:")
    script = settings["onCreateCommand"].split()[-1]
    text = (project / script).read_text()
    assert text.startswith("#!/bin/bash\n") and "set -euo pipefail" in text
    assert "pip install -e '.[dev]'" in text
    check = subprocess.run(["bash", "-n", str(project / script)], capture_output=True, check=False)
    assert check.returncode == 0, check.stderr


def test_a_project_scaffolded_before_the_ci_files_still_takes_new_kinds(tmp_path: Path) -> None:
    root = tmp_path / "older"
    root.mkdir()
    assert cli("init", "--domain", "example.com", cwd=root).returncode == 0
    shutil.rmtree(root / ".github")
    shutil.rmtree(root / ".devcontainer")
    done = cli("create", "api", "--group", "ship", "--version", "v1", "--kind", "Frigate", cwd=root)
    assert done.returncode == 0, done.stderr
    assert not (root / ".github").exists() and not (root / ".devcontainer").exists()
    assert (root / "api" / "v1" / "frigate.py").is_file()
