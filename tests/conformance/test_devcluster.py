"""kubectl against the development cluster: deployments, jobs, logs, namespaces."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from kubeforge._cluster.devcluster import DevCluster
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import Kubectl, eventually
from tests.support import kubectl_for

pytestmark = pytest.mark.kubectl


@pytest.fixture(params=[False], ids=["simulated"])
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[DevCluster]:
    async with DevCluster(ClusterOptions(exec_pods=request.param, job_backoff_seconds=0.1)) as c:
        yield c


@pytest.fixture
def kc(cluster: DevCluster, tmp_path: Path) -> Kubectl:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    return kubectl_for(kubeconfig, tmp_path / "cache", "1.31")


async def pods(kc: Kubectl, selector: str, namespace: str = "default") -> list[dict[str, object]]:
    out = (await kc.run("get", "pods", "-n", namespace, "-l", selector, "-o", "json")).out
    items: list[dict[str, object]] = orjson.loads(out)["items"]
    return items


async def running(kc: Kubectl, selector: str) -> list[str]:
    return [
        p["metadata"]["name"]  # type: ignore[index]
        for p in await pods(kc, selector)
        if p["status"]["phase"] == "Running"  # type: ignore[index]
        and not p["metadata"].get("deletionTimestamp")  # type: ignore[attr-defined]
    ]


async def test_deployment_lifecycle_with_kubectl(kc: Kubectl) -> None:
    await kc.run("create", "deployment", "web", "--image=nginx", "--replicas=3")
    await kc.run("rollout", "status", "deploy/web", "--timeout=30s")
    await kc.run("wait", "--for=condition=Available", "deploy/web", "--timeout=30s")

    async def count(n: int) -> bool:
        return len(await running(kc, "app=web")) == n and len(await pods(kc, "app=web")) == n

    await eventually(lambda: count(3), timeout=30)
    table = (await kc.run("get", "pods", "-l", "app=web")).out.splitlines()
    assert all(" Running " in row and "1/1" in row for row in table[1:])

    await kc.run("scale", "deploy/web", "--replicas=5")
    await eventually(lambda: count(5), timeout=30)
    await kc.run("scale", "deploy/web", "--replicas=2")
    await eventually(lambda: count(2), timeout=30)

    before = set(await running(kc, "app=web"))
    await kc.run("set", "image", "deploy/web", "nginx=nginx:1.27")
    out = (await kc.run("rollout", "status", "deploy/web", "--timeout=60s")).out
    assert "successfully rolled out" in out

    async def rolled() -> bool:
        current = await pods(kc, "app=web")
        images = {p["spec"]["containers"][0]["image"] for p in current}  # type: ignore[index]
        names = {p["metadata"]["name"] for p in current}  # type: ignore[index]
        return images == {"nginx:1.27"} and len(current) == 2 and not (names & before)

    await eventually(rolled, timeout=30)
    replicasets = orjson.loads((await kc.run("get", "rs", "-l", "app=web", "-o", "json")).out)[
        "items"
    ]
    assert len(replicasets) == 2
    assert sorted(rs["spec"]["replicas"] for rs in replicasets) == [0, 2]

    await kc.run("delete", "deployment", "web", "--wait=true")

    async def all_gone() -> bool:
        rs = orjson.loads((await kc.run("get", "rs", "-l", "app=web", "-o", "json")).out)["items"]
        return not rs and not await pods(kc, "app=web")

    await eventually(all_gone, timeout=30)


async def test_job_completes_and_logs(kc: Kubectl) -> None:
    await kc.run("create", "job", "hello", "--image=busybox", "--", "echo", "hello")
    await kc.run("wait", "--for=condition=complete", "job/hello", "--timeout=30s")
    assert (await kc.run("logs", "job/hello")).out.strip() == "hello"
    table = (await kc.run("get", "jobs")).out.splitlines()
    assert table[1].split()[:3] == ["hello", "Complete", "1/1"]


async def test_a_failing_job_ends_failed(kc: Kubectl) -> None:
    manifest = """
apiVersion: batch/v1
kind: Job
metadata: {name: broken}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo trying; exit 3"]
"""
    await kc.run("apply", "-f", "-", stdin=manifest)
    await kc.run("wait", "--for=condition=failed", "job/broken", "--timeout=30s")
    job = orjson.loads((await kc.run("get", "job", "broken", "-o", "json")).out)
    assert job["status"]["failed"] == 2


async def test_deleting_a_namespace_removes_everything_in_it(kc: Kubectl) -> None:
    await kc.run("create", "namespace", "team")
    await kc.run("create", "deployment", "app", "--image=nginx", "--replicas=2", "-n", "team")
    await kc.run("create", "configmap", "settings", "--from-literal=a=b", "-n", "team")
    await kc.run("rollout", "status", "deploy/app", "-n", "team", "--timeout=30s")
    await kc.run("delete", "namespace", "team", "--wait=true", "--timeout=60s")
    missing = await kc.run("get", "namespace", "team", check=False)
    assert missing.code != 0 and "NotFound" in missing.err


async def test_default_service_account_and_cluster_services(kc: Kubectl) -> None:
    await kc.run("create", "namespace", "fresh")

    async def has_default() -> bool:
        out = (await kc.run("get", "serviceaccounts", "-n", "fresh", "-o", "name", check=False)).out
        return "serviceaccount/default" in out.split()

    await eventually(has_default)
    await kc.run("create", "deployment", "api", "--image=nginx", "--replicas=2", "--port=80")
    await kc.run("expose", "deployment", "api", "--port=80")
    service = orjson.loads((await kc.run("get", "svc", "api", "-o", "json")).out)
    assert service["spec"]["clusterIP"].startswith("10.")

    async def endpoints_ready() -> bool:
        ep = orjson.loads(
            (await kc.run("get", "endpoints", "api", "-o", "json", check=False)).out or b"{}"
        )
        subsets = ep.get("subsets") or []
        return sum(len(s.get("addresses") or []) for s in subsets) == 2

    await eventually(endpoints_ready, timeout=30)
    nodes = (await kc.run("get", "nodes")).out.splitlines()
    assert nodes[1].split()[:2] == ["kubeforge-node", "Ready"]


@pytest.mark.parametrize("cluster", [True], ids=["exec-pods"], indirect=True)
async def test_exec_pods_show_the_real_output(kc: Kubectl) -> None:
    await kc.run(
        "create",
        "job",
        "real",
        "--image=busybox",
        "--",
        "sh",
        "-c",
        "echo hello from $(uname -s)",
    )
    await kc.run("wait", "--for=condition=complete", "job/real", "--timeout=30s")
    out = (await kc.run("logs", "job/real")).out.strip()
    assert out == "hello from Linux"
