"""A project as `init` and `create api` make it runs its own tests against an existing cluster
(KUBEFORGE_USE_EXISTING_CLUSTER=1), twice in a row, as a CI job against kind would: each test
works in a namespace of its own and what it made is gone afterwards, the cluster-scoped kind's
objects included."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from kubeforge._cluster.devcluster import DevCluster
from kubeforge.testing import USE_EXISTING_CLUSTER, eventually
from tests.cli.test_cli_scaffold import FERRYMAN_API, cli, scaffold

GROUP = "ship.example.com"


async def test_the_generated_tests_pass_twice_against_one_existing_cluster(
    tmp_path: Path,
) -> None:
    project = tmp_path / "fleet"
    scaffold(project, webhook=False)
    done = cli(*FERRYMAN_API, "--cluster", "--plural", "ferrymen", cwd=project)
    assert done.returncode == 0, (done.stdout, done.stderr)
    async with DevCluster() as outside:
        assert outside.client is not None
        kubeconfig = outside.write_kubeconfig(tmp_path / "kubeconfig")
        env = {**os.environ, USE_EXISTING_CLUSTER: "1", "KUBECONFIG": str(kubeconfig)}
        for _ in range(2):
            # A process of its own: the cluster keeps serving from this event loop meanwhile.
            proc = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
                cwd=project,
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            out, _ = await asyncio.wait_for(proc.communicate(), 180)
            assert proc.returncode == 0, out.decode()
            assert b"3 passed" in out, out.decode()
        client = outside.client
        assert list(await client.list(f"{GROUP}/v1/Ferryman")) == []

        async def no_frigates() -> bool:
            left = await client.list(f"{GROUP}/v1/Frigate", all_namespaces=True)
            assert list(left) == [], left
            return True

        await eventually(no_frigates, timeout=30)
