"""The scaffold written again from PROJECT: the commands it stands for, in the order that
gives back the scaffold the project's own commands wrote, byte for byte."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from kubeforge._cli.replay import ReplayError, commands_of, replay
from kubeforge._scaffold import templatesets
from kubeforge._scaffold.ownership import project_files
from kubeforge._scaffold.projectfile import ProjectFile
from tests.support.scaffolds import scaffold

# A user's commands: a hub with admission webhooks, then a spoke and the conversion, a
# cluster-scoped kind with an irregular plural, a plugin.
COMMANDS = [
    shlex.split(line)
    for line in (
        "init --domain example.com --owner 'The Fleet Authors' --plugins grafana",
        "create api --group ship --version v1 --kind Frigate",
        "create webhook --group ship --version v1 --kind Frigate --defaulting",
        "create api --group ship --version v2 --kind Frigate --no-controller",
        "create webhook --group ship --version v1 --kind Frigate --conversion --spoke v2",
        "create api --group ship --version v1 --kind Ferryman --cluster --plural ferrymen",
        "create webhook --group ship --version v1 --kind Ferryman --programmatic-validation",
    )
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("commands") / "fleet"
    scaffold(root, COMMANDS, templatesets.packaged())
    return root


def test_the_commands_are_those_that_wrote_the_project(project: Path) -> None:
    plan = commands_of(ProjectFile.load(project), project)
    assert plan.shown() == [
        "kubeforge init --project-name fleet --license apache2 --domain example.com --owner "
        f"'The Fleet Authors' --license-file {project}/hack/boilerplate.py.txt --plugins grafana",
        "kubeforge create api --group ship --version v1 --kind Frigate --controller --namespaced",
        "kubeforge create webhook --group ship --version v1 --kind Frigate --defaulting",
        "kubeforge create api --group ship --version v2 --kind Frigate --no-controller "
        "--namespaced",
        # As soon as its spoke exists.
        "kubeforge create webhook --group ship --version v1 --kind Frigate --conversion --spoke v2",
        "kubeforge create api --group ship --version v1 --kind Ferryman --controller --cluster "
        "--plural ferrymen",
        "kubeforge create webhook --group ship --version v1 --kind Ferryman "
        "--programmatic-validation",
    ]


def test_the_replay_writes_the_projects_scaffold_byte_for_byte(
    project: Path, tmp_path: Path
) -> None:
    replay(ProjectFile.load(project), project, tmp_path)
    files = project_files(project)
    assert files == project_files(tmp_path)
    for path in files:
        assert (tmp_path / path).read_bytes() == (project / path).read_bytes(), path


def test_settings_no_command_writes_are_carried(project: Path, tmp_path: Path) -> None:
    recorded = ProjectFile.load(project)
    recorded.extra["multigroup"] = True
    recorded.extra["plugins"]["helm.kubebuilder.io/v1-alpha"] = {"manifests": "dist/install.yaml"}
    recorded.resources = []
    plan = replay(recorded, project, tmp_path)
    assert plan.unknown_plugins == ["helm.kubebuilder.io/v1-alpha"]
    written = yaml.safe_load((tmp_path / "PROJECT").read_text())
    assert written["multigroup"] is True
    assert written["plugins"] == {
        "grafana.kubebuilder.io/v1-alpha": {},
        "helm.kubebuilder.io/v1-alpha": {"manifests": "dist/install.yaml"},
    }


def test_a_failing_command_names_itself(project: Path, tmp_path: Path) -> None:
    recorded = ProjectFile.load(project)
    recorded.resources = [{"group": "apps", "version": "v1", "kind": "Deployment"}]
    with pytest.raises(ReplayError, match="Deployment in apps/v1 has no API"):
        replay(recorded, project, tmp_path)
    assert not any(tmp_path.iterdir())  # refused before a command ran
    recorded.resources = [
        {"api": {"namespaced": True}, "group": "ship", "version": "v1", "kind": "frigate"}
    ]
    with pytest.raises(
        ReplayError,
        match=r"`kubeforge create api --group ship --version v1 --kind frigate .*` "
        "failed: error: invalid kind",
    ):
        replay(recorded, project, tmp_path)
