"""Run a command against one `kubeforge dev` started for it, then stop the cluster.

    .venv/bin/python tools/on_dev_cluster.py -- sh -c 'cd examples/cnat && pytest'

The cluster listens on a free port of 127.0.0.1 and writes its kubeconfig into a private
temporary directory. Once its API server answers `/readyz`, the command runs with KUBECONFIG
set to that kubeconfig and KUBEFORGE_USE_EXISTING_CLUSTER=1, so test suites use the cluster
as they would use kind or a real one (`make test-existing` runs every example's suite this
way). Whatever the command does, the cluster is stopped afterwards (SIGTERM, as `kubeforge
dev` expects; killed if it has not stopped within 20 s), also when this script is interrupted
or the cluster does not come up, and the temporary directory is removed. The exit status is
the command's, or 1 when the cluster did not start (its output is then shown).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kubeforge.client.client import Client
from kubeforge.client.config import load_kubeconfig
from kubeforge.testing import USE_EXISTING_CLUSTER

START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0


async def _ready(kubeconfig: Path) -> bool:
    """Whether the cluster answers /readyz."""
    async with Client(load_kubeconfig(kubeconfig)) as client:
        try:
            answer = await client.transport.request("GET", "/readyz", timeout=5)
        except Exception:
            return False
        return answer.body.strip() == b"ok"


def wait_until_ready(dev: subprocess.Popen[bytes], kubeconfig: Path, timeout: float) -> bool:
    """Poll until the cluster is ready; False when it exited or the time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if dev.poll() is not None:
            return False
        # The kubeconfig is written once the cluster has started.
        if kubeconfig.exists() and asyncio.run(_ready(kubeconfig)):
            return True
        time.sleep(0.1)
    return False


def stop(dev: subprocess.Popen[bytes]) -> None:
    """Stop the cluster as Ctrl-C would, killing it if it does not stop in time."""
    if dev.poll() is not None:
        return
    dev.send_signal(signal.SIGTERM)
    try:
        dev.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        dev.kill()
        dev.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="the API server's (default: free)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command (after --)")
    args = parser.parse_args(argv)
    command = args.command
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        parser.error("no command given")
    with tempfile.TemporaryDirectory(prefix="kubeforge-dev-") as tmp:
        directory = Path(tmp)
        kubeconfig = directory / "kubeconfig"
        log = (directory / "dev.log").open("wb")
        dev = subprocess.Popen(
            [
                *(sys.executable, "-m", "kubeforge.cli.main", "dev"),
                *("--port", str(args.port), "--kubeconfig", str(kubeconfig)),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            if not wait_until_ready(dev, kubeconfig, START_TIMEOUT):
                log.flush()
                sys.stderr.write((directory / "dev.log").read_text(errors="replace"))
                print("kubeforge dev did not become ready", file=sys.stderr)
                return 1
            env = {**os.environ, "KUBECONFIG": str(kubeconfig), USE_EXISTING_CLUSTER: "1"}
            return subprocess.run(command, env=env, check=False).returncode
        except KeyboardInterrupt:
            return 130
        finally:
            stop(dev)
            log.close()


if __name__ == "__main__":
    sys.exit(main())
