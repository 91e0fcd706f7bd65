"""With `exec_pods`, a claim's volume is a real directory under the cluster's volume
directory, at the container's mount path: what a container writes there survives the
container's restart and the pod's deletion, and a new pod on the same claim reads it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio

from kubeforge._client.client import Client
from kubeforge._cluster.devcluster import DevCluster
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import eventually

NS = "default"


@pytest_asyncio.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[DevCluster]:
    options = ClusterOptions(pod_start_seconds=0.05, exec_pods=True)
    async with DevCluster(options, data_dir=tmp_path / "data") as c:
        yield c


def writer(name: str, script: str, restart: str = "Never") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "restartPolicy": restart,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sh", "-c", script],
                    "volumeMounts": [{"name": "state", "mountPath": "/var/lib/app"}],
                }
            ],
            "volumes": [{"name": "state", "persistentVolumeClaim": {"claimName": "state"}}],
        },
    }


async def finished(api: Client, name: str) -> dict[str, Any]:
    async def done() -> dict[str, Any] | None:
        pod = await api.get("v1/Pod", name, namespace=NS)
        return pod if pod["status"].get("phase") in ("Succeeded", "Failed") else None

    found: dict[str, Any] = await eventually(done, timeout=20)
    return found


async def test_data_in_a_claim_outlives_restarts_and_pods(
    cluster: DevCluster, tmp_path: Path
) -> None:
    api = cluster.client
    assert api is not None
    await api.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "state", "namespace": NS},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    )
    # Each run appends a line; the first run fails, so the container is restarted.
    script = (
        "echo run >> /var/lib/app/runs; cat /var/lib/app/runs; "
        'test "$(wc -l < /var/lib/app/runs)" -ge 2'
    )
    await api.create(writer("first", script, "OnFailure"))
    first = await finished(api, "first")
    assert first["status"]["phase"] == "Succeeded"
    assert first["status"]["containerStatuses"][0]["restartCount"] == 1
    assert await api.logs("first", namespace=NS) == "run\nrun\n"

    claim = await api.get("v1/PersistentVolumeClaim", "state", namespace=NS)
    volume = await api.get("v1/PersistentVolume", claim["spec"]["volumeName"])
    directory = Path(volume["spec"]["hostPath"]["path"])
    # The volume's data lives with the cluster's data directory.
    assert (tmp_path / "data" / "volumes") in directory.parents
    assert (directory / "runs").read_text() == "run\nrun\n"

    await api.delete("v1/Pod", "first", namespace=NS, grace_period_seconds=0)

    async def first_gone() -> bool:
        names = [p["metadata"]["name"] for p in await api.list("v1/Pod", namespace=NS)]
        return "first" not in names

    await eventually(first_gone)
    await api.create(writer("second", "echo again >> /var/lib/app/runs; cat /var/lib/app/runs"))
    second = await finished(api, "second")
    assert second["status"]["phase"] == "Succeeded"
    assert second["spec"]["nodeName"] == first["spec"]["nodeName"]
    assert await api.logs("second", namespace=NS) == "run\nrun\nagain\n"
