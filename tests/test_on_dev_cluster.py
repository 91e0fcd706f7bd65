"""tools/on_dev_cluster.py, which `make test-existing` runs the examples' suites with: one
`kubeforge dev` started in the background, ready before the command runs, the command pointed
at it as at an existing cluster, and the cluster stopped afterwards whatever the command did."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support import ROOT

TOOL = ROOT / "tools" / "on_dev_cluster.py"

# The command: what it was given, and whether the cluster answered, then the exit status asked.
COMMAND = """
import json, os, subprocess, sys
import yaml
ready = subprocess.run(
    ["kubectl", "get", "--raw", "/readyz"], capture_output=True, text=True, check=False
)
with open(os.environ["KUBECONFIG"]) as f:
    server = yaml.safe_load(f)["clusters"][0]["cluster"]["server"]
with open(sys.argv[1], "w") as f:
    json.dump({"env": dict(os.environ), "readyz": ready.stdout, "server": server}, f)
sys.exit(int(sys.argv[2]))
"""


def listening(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((parts.hostname or "", parts.port or 0)) == 0


@pytest.mark.parametrize("status", [0, 3])
async def test_the_command_runs_against_a_ready_cluster_that_is_stopped_after(
    tmp_path: Path, status: int
) -> None:
    report = tmp_path / "report.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(TOOL),
        "--",
        sys.executable,
        "-c",
        COMMAND,
        str(report),
        str(status),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == status, out.decode()
    seen = json.loads(report.read_text())
    assert seen["readyz"] == "ok"
    assert seen["env"]["KUBEFORGE_USE_EXISTING_CLUSTER"] == "1"
    kubeconfig = Path(seen["env"]["KUBECONFIG"])
    # Stopped, and its temporary directory (the kubeconfig with it) removed.
    assert not kubeconfig.parent.exists()
    assert not listening(seen["server"])


async def test_options_before_the_command_are_the_clusters(tmp_path: Path) -> None:
    # `make test-existing` starts the cluster with several nodes: `--nodes 2` reaches
    # `kubeforge dev`, and nothing after `--` does.
    nodes = tmp_path / "nodes.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(TOOL),
        "--nodes",
        "2",
        "--",
        "sh",
        "-c",
        f"kubectl get nodes -o json > {nodes}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, out.decode()
    names = sorted(n["metadata"]["name"] for n in json.loads(nodes.read_text())["items"])
    assert names == ["kubeforge-node-0", "kubeforge-node-1"]


async def test_a_cluster_that_does_not_start_fails_without_running_the_command(
    tmp_path: Path,
) -> None:
    # The port the cluster asks for is taken: `kubeforge dev` exits at once.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        marker = tmp_path / "ran"
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(TOOL),
            "--port",
            str(port),
            "--",
            "touch",
            str(marker),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 1
    assert "kubeforge dev did not become ready" in err.decode()
    assert not marker.exists()
