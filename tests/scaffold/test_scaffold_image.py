"""The manager's image as `kubeforge init` scaffolds it, checked without a container engine:
the Dockerfile against hadolint's rules (parsed by dockerfile-parse), and which engine the
Makefile's image targets run: docker, else podman, else a clear message."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from tests.cli.test_cli_scaffold import cli


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("image") / "fleet"
    root.mkdir()
    done = cli("init", "--domain", "example.com", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def stages(parser: DockerfileParser) -> list[list[tuple[str, str]]]:
    """The (instruction, value) pairs of each stage, comments left out."""
    found: list[list[tuple[str, str]]] = []
    for item in parser.structure:
        if item["instruction"] == "FROM":
            found.append([])
        if found and item["instruction"] != "COMMENT":
            found[-1].append((item["instruction"], item["value"]))
    return found


def test_the_dockerfile_follows_hadolints_rules(project: Path) -> None:
    parser = DockerfileParser(path=str(project / "Dockerfile"))
    instructions = [item["instruction"] for item in parser.structure]
    # DL3006 / DL3007: every base image has an explicit tag, and not `latest` (the ARG's
    # default, as the build resolves it).
    assert parser.parent_images
    for image in parser.parent_images:
        name, _, tag = image.rpartition(":")
        assert name and tag and "/" not in tag and tag != "latest", image
    # DL3020: COPY, not ADD.
    assert "ADD" not in instructions
    # DL3025: ENTRYPOINT and CMD in JSON (exec) form, so the manager gets the signals.
    for item in parser.structure:
        if item["instruction"] in ("ENTRYPOINT", "CMD"):
            assert isinstance(json.loads(item["value"]), list), item
    builder, final = stages(parser)
    # Multi-stage: the sources and the build stay in the builder; the final stage takes only
    # the virtual environment from it.
    assert builder[0][1].endswith(" AS builder")
    copies = [value for keyword, value in final if keyword == "COPY"]
    assert copies == ["--from=builder /venv /venv"]
    assert not [v for k, v in final if k == "RUN"]
    # DL3002: the last USER is not root; numeric, so Kubernetes' runAsNonRoot can check it.
    users = [value for keyword, value in final if keyword == "USER"]
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid.isdigit(), users
    # DL3045: COPY to a relative destination only after WORKDIR.
    for stage in (builder, final):
        workdir = False
        for keyword, value in stage:
            workdir = workdir or keyword == "WORKDIR"
            if keyword == "COPY" and not value.split()[-1].startswith("/"):
                assert workdir, value
    # DL3042: pip's cache stays out of the image: a cache mount (kept between builds) on each
    # RUN that installs or builds with pip.
    pip_runs = [
        v for k, v in builder if k == "RUN" and re.search(r"-m pip .*\b(install|wheel)\b", v)
    ]
    assert len(pip_runs) == 2
    assert all(v.startswith("--mount=type=cache,target=/root/.cache/pip ") for v in pip_runs)
    # The locked dependencies: installed from requirements.lock, then the project's wheel
    # constrained by it; the lock copied before the sources, so it is its own layer.
    locked, project_wheel = pip_runs
    assert "--requirement requirements.lock" in locked
    assert "--constraint requirements.lock" in project_wheel
    copied = [v for k, v in builder if k == "COPY"]
    assert copied == ["pyproject.toml requirements.loc[k] ./", ". ."]
    ignore = (project / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("**") :][:2] == ["**", "!pyproject.toml"]
    assert "!requirements.lock" in ignore and "!tests" not in ignore


def fake_path(tmp_path: Path, engines: tuple[str, ...]) -> str:
    """A PATH with the tools make's recipes need and fake engines that print their calls."""
    bin_dir = tmp_path / "-".join(("bin", *engines))
    bin_dir.mkdir()
    for tool in ("bash", "env", "sh", "cat", "echo", "dirname"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    for engine in engines:
        script = bin_dir / engine
        script.write_text(f'#!/bin/sh\necho "{engine} $*"\n')
        script.chmod(0o755)
    return str(bin_dir)


def make(project: Path, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [shutil.which("make") or "make", "--silent", "--no-print-directory", *args],
        cwd=project,
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if k != "CONTAINER_TOOL"}, "PATH": path},
        check=False,
        timeout=60,
    )


def test_the_image_targets_use_docker_else_podman_else_say_so(
    project: Path, tmp_path: Path
) -> None:
    both = make(project, fake_path(tmp_path, ("docker", "podman")), "docker-build", "IMG=a:1")
    assert both.returncode == 0, both.stderr
    assert both.stdout.splitlines()[-1] == "docker build -t a:1 ."

    podman = fake_path(tmp_path, ("podman",))
    built = make(project, podman, "docker-build", "IMG=a:1", "BASE_IMAGE=python:3.13-slim")
    assert built.returncode == 0, built.stderr
    assert built.stdout.splitlines()[-1] == (
        "podman build --build-arg BASE_IMAGE=python:3.13-slim -t a:1 ."
    )
    multi = make(project, podman, "docker-buildx", "IMG=a:1", "PLATFORMS=linux/amd64,linux/arm64")
    assert multi.returncode == 0, multi.stderr
    assert multi.stdout.splitlines()[-2:] == [
        "podman build --platform=linux/amd64,linux/arm64 --manifest a:1 .",
        "podman manifest push a:1",
    ]

    neither = make(project, fake_path(tmp_path, ()), "docker-build", "IMG=a:1")
    assert neither.returncode != 0
    assert "Neither docker nor podman is installed" in neither.stderr
    assert "build" not in neither.stdout

    chosen = make(project, podman, "docker-push", "IMG=a:1", "CONTAINER_TOOL=nerdctl")
    assert chosen.returncode != 0  # no nerdctl here: what was asked for is what runs
    assert "nerdctl" in chosen.stderr
