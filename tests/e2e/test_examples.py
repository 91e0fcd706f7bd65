"""The example projects from the outside: their generated config is current, and each demo
plays end to end (as `make demo EXAMPLE=<name>` does)."""

from __future__ import annotations

import asyncio
import filecmp
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest
import yaml

from tests.support import ROOT

EXAMPLES = sorted(p.parent.name for p in (ROOT / "examples").glob("*/main.py"))
KUBEFORGE = [sys.executable, "-m", "kubeforge._cli.main"]


def differences(left: Path, right: Path) -> list[str]:
    """Files that differ, or exist on one side only, between two directory trees."""
    found: list[str] = []

    def walk(cmp: filecmp.dircmp[str], prefix: str) -> None:
        found.extend(f"{prefix}{name} (only in the original)" for name in cmp.left_only)
        found.extend(f"{prefix}{name} (only after regenerating)" for name in cmp.right_only)
        found.extend(f"{prefix}{name}" for name in cmp.diff_files)
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(left, right, ignore=["__pycache__"]), "")
    return found


async def run(*args: str, cwd: Path, timeout: float) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *args,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.stdout is not None
    chunks: list[bytes] = []

    async def read_all() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            chunks.append(chunk)
        await proc.wait()

    try:
        await asyncio.wait_for(read_all(), timeout)
    except TimeoutError:
        # Say where it stopped: what it printed so far is the clue.
        # Interrupt first so the demo stops the cluster it started; kill if that hangs too.
        proc.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(read_all(), 15)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        so_far = b"".join(chunks).decode(errors="replace")
        raise AssertionError(f"still running after {timeout} s; it printed:\n{so_far}") from None
    return proc.returncode or 0, b"".join(chunks).decode()


def test_there_are_examples() -> None:
    assert {"cnat"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
async def test_manifests_regenerate_the_committed_config(name: str, tmp_path: Path) -> None:
    copy = tmp_path / name
    shutil.copytree(
        ROOT / "examples" / name, copy, ignore=shutil.ignore_patterns("__pycache__", ".*cache")
    )
    code, out = await run(*KUBEFORGE, "manifests", "--dir", str(copy), cwd=tmp_path, timeout=60)
    assert code == 0, out
    assert "wrote" not in out and "removed" not in out, out
    assert differences(ROOT / "examples" / name / "config", copy / "config") == [], out


@pytest.mark.parametrize("name", EXAMPLES)
async def test_config_default_builds_the_manager_and_the_crds(name: str) -> None:
    # Each example has what `kubeforge init` and `create api` write: config/default builds
    # (as `make deploy` would build it) into the manager's Deployment with its CRDs and RBAC.
    code, out = await run(
        "kubectl", "kustomize", "config/default", cwd=ROOT / "examples" / name, timeout=60
    )
    assert code == 0, out
    objects = [o for o in yaml.safe_load_all(out) if o]
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("Deployment", f"{name}-controller-manager") in kinds
    assert ("ClusterRole", f"{name}-manager-role") in kinds
    assert ("Namespace", f"{name}-system") in kinds
    bases = list((ROOT / "examples" / name / "config" / "crd" / "bases").glob("*.yaml"))
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    assert len(crds) == len(bases) > 0
    for path in ("Makefile", "Dockerfile", ".dockerignore", "tests/test_setup.py"):
        assert (ROOT / "examples" / name / path).is_file(), path


@pytest.mark.parametrize(
    "name", [e for e in EXAMPLES if (ROOT / "examples" / e / "demo.sh").exists()]
)
async def test_the_demo_plays_end_to_end(name: str) -> None:
    code, out = await run(*KUBEFORGE, "demo", name, cwd=ROOT, timeout=90)
    assert code == 0, out
    assert "demo finished" in out, out
    assert "Traceback" not in out and "Unclosed" not in out, out


async def test_a_missing_rbac_rule_fails_the_example_tests_naming_the_rule(
    tmp_path: Path,
) -> None:
    # The examples run their controllers as their ServiceAccount (kubeforge_as_service_account):
    # without the rule that lets cnat create pods, its tests fail and say which rule is missing.
    copy = tmp_path / "cnat"
    shutil.copytree(
        ROOT / "examples" / "cnat", copy, ignore=shutil.ignore_patterns("__pycache__", ".*cache")
    )
    controller = copy / "controllers" / "at.py"
    granted = (
        '@kubeforge.rbac(groups="", resources="pods", '
        'verbs=["get", "list", "watch", "create", "delete"])'
    )
    source = controller.read_text()
    assert granted in source
    controller.write_text(source.replace(granted, ""))
    code, out = await run(*KUBEFORGE, "manifests", "--dir", str(copy), cwd=tmp_path, timeout=60)
    assert code == 0, out
    code, out = await run(
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-x",
        "-p",
        "no:cacheprovider",
        "tests/test_at.py::test_an_at_runs_its_command_once_its_time_has_come",
        cwd=copy,
        timeout=120,
    )
    assert code != 0, out
    assert "kubeforge RBAC refusals" in out, out
    assert 'needs @rbac(groups=[""], resources=["pods"], verbs=["create"])' in out, out
