"""What the generated Dockerfile does, without a container engine: build the project's wheel,
install it in a fresh virtual environment with its dependencies, and run its `manager`
entrypoint against a cluster; it becomes ready and reconciles a sample."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import urllib.request
from pathlib import Path

import yaml

from kubeforge.testing import TestEnv, eventually
from tests.cli.test_cli_scaffold import ROOT, run, scaffold
from tests.support import free_port


def readyz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            status: int = answer.status
            return status
    except OSError:
        return 0


async def test_the_wheel_installs_and_its_manager_reconciles_a_sample(tmp_path: Path) -> None:
    project = tmp_path / "fleet"
    scaffold(project, webhook=False)

    # The Dockerfile's steps: `pip wheel --no-deps .`, a fresh venv, `pip install` the wheel
    # (kubeforge itself from this checkout: it is not published where this runs).
    wheels = tmp_path / "wheels"
    code, out = await run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels),
        str(project), cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert code == 0, out
    (wheel,) = wheels.glob("fleet-0.1.0-*.whl")
    venv = tmp_path / "venv"
    code, out = await run(sys.executable, "-m", "venv", str(venv), cwd=tmp_path)
    assert code == 0, out
    code, out = await run(
        str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(ROOT), str(wheel),
        cwd=tmp_path, timeout=400,
    )  # fmt: skip
    assert code == 0, out
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
