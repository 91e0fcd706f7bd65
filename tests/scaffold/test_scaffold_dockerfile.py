"""kubeforge as a user installs it, and what the generated Dockerfile does, without a container
engine: `python -m build` makes kubeforge's sdist and wheel (as `make dist` does); the wheel
goes into a fresh virtual environment, far from this checkout; its `kubeforge` scaffolds a
project whose own tests pass there; the project's wheel installs with its dependencies and
its `manager` entrypoint becomes ready against a cluster and reconciles a sample."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest
import yaml

from kubeforge import __version__
from kubeforge.testing import TestEnv, eventually
from tests.support import ROOT, free_port

# A wheel of the package alone stays small: growing past this means something came in by
# accident (tests, caches, data).
WHEEL_LIMIT = 3 * 1024 * 1024


def readyz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            status: int = answer.status
            return status
    except OSError:
        return 0


def check_wheel_contents(wheel: Path) -> None:
    assert wheel.stat().st_size < WHEEL_LIMIT, wheel.stat().st_size
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"kubeforge", f"kubeforge-{__version__}.dist-info"}, tops
    strays = [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".pyo"))]
    assert not strays, strays
    assert "kubeforge/_scaffold/templates/init/Dockerfile.tmpl" in names
    assert "kubeforge/py.typed" in names


async def run_in(venv: Path, *args: str, cwd: Path, timeout: float = 300) -> str:
    """A command with only `venv` on the path, as a user's shell with it activated, nothing of
    this checkout importable. Returns its output; fails the test when it fails."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        NO_COLOR="1",
    )
    proc = await asyncio.create_subprocess_exec(
        *args, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode == 0, (args, out.decode())
    return out.decode()


# Building, installing and testing a project take a minute on an idle machine; the default
# limit of two minutes is too tight when the suite's other workers share its two cores.
@pytest.mark.timeout(300)
async def test_the_wheel_installs_scaffolds_a_passing_project_whose_manager_reconciles(
    tmp_path: Path,
) -> None:
    # `make dist`: the sdist, and the wheel built from it.
    dist = tmp_path / "dist"
    await run_in(
        Path(sys.prefix), sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT),
        cwd=tmp_path,
    )  # fmt: skip
    (wheel,) = dist.glob(f"kubeforge-{__version__}-py3-none-any.whl")
    assert list(dist.glob(f"kubeforge-{__version__}.tar.gz"))
    check_wheel_contents(wheel)

    venv = tmp_path / "venv"
    await run_in(Path(sys.prefix), sys.executable, "-m", "venv", str(venv), cwd=tmp_path)
    python = str(venv / "bin" / "python")
    await run_in(venv, python, "-m", "pip", "install", "--quiet", str(wheel), cwd=tmp_path)
    shown = await run_in(venv, "kubeforge", "version", cwd=tmp_path)
    assert f"kubeforge: {__version__}\n" in shown
    assert f"({sys.implementation.name.replace('cpython', 'CPython')}, {python})" in shown

    project = tmp_path / "fleet"
    project.mkdir()
    await run_in(venv, "kubeforge", "init", "--domain", "example.com", cwd=project)
    # The templates of dot-folders came along in the wheel.
    assert (project / ".github" / "workflows" / "test.yml").is_file()
    await run_in(
        venv, "kubeforge", "create", "api", "--group", "ship", "--version", "v1",
        "--kind", "Frigate", cwd=project,
    )  # fmt: skip
    # The Dockerfile's steps: the project built as a wheel and installed with its
    # dependencies (kubeforge: the wheel above), here with its development tools.
    await run_in(venv, python, "-m", "pip", "install", "--quiet", f"{project}[dev]", cwd=project)
    tests = await run_in(venv, python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=project)
    assert " passed" in tests and "failed" not in tests, tests
    manager_command = venv / "bin" / "manager"
    assert manager_command.is_file()

    async with TestEnv(crd_paths=[project / "config" / "crd" / "bases"]) as env:
        kubeconfig = env.write_kubeconfig(tmp_path / "kubeconfig")
        port = free_port()
        # The arguments config/manager/manager.yaml gives the container, on free ports here.
        proc = await asyncio.create_subprocess_exec(
            str(manager_command),
            "--leader-elect",
            f"--health-probe-bind-address=127.0.0.1:{port}",
            "--metrics-bind-address=0",
            "--kubeconfig",
            str(kubeconfig),
            cwd=tmp_path,  # nothing of the project's source is there: the wheel is used
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )
        try:

            async def ready() -> bool:
                return await asyncio.to_thread(readyz, port) == 200

            await eventually(ready, timeout=30)
            sample = yaml.safe_load((project / "config/samples/ship_v1_frigate.yaml").read_text())
            await env.client.create(sample, namespace="default")

            async def available() -> bool:
                frigate = await env.client.get(
                    "ship.example.com/v1/Frigate", "frigate-sample", namespace="default"
                )
                conditions = (frigate.get("status") or {}).get("conditions") or []
                return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)

            assert await eventually(available, timeout=30)
            lease = await env.client.get(
                "coordination.k8s.io/v1/Lease", "fleet-leader-election", namespace="default"
            )
            assert lease["spec"]["holderIdentity"]
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            output, _ = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 0, output.decode()
