"""Admission webhooks in the development cluster: its controllers' writes are admitted."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from kubeforge._cluster.devcluster import DevCluster
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import Kubectl, eventually
from tests.support.admission import (
    mutating,
    patch,
    rule,
    webhook,
    webhook_server,
)

pytestmark = pytest.mark.kubectl


async def test_pods_a_replicaset_creates_go_through_mutating_webhooks(tmp_path: Path) -> None:
    async with DevCluster(ClusterOptions()) as cluster, webhook_server() as hooks:
        cache = tmp_path / "cache"
        cache.mkdir()
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
        kc = Kubectl(kubeconfig, cache_dir=cache, env={"HOME": str(cache)})
        hooks.route(
            "/inject",
            lambda req: patch(
                {"op": "add", "path": "/metadata/annotations", "value": {"injected": "yes"}}
            ),
        )
        config = mutating(
            "inject", webhook("inject.example.com", hooks, "/inject", [rule(["pods"])])
        )
        await kc.run("apply", "-f", "-", stdin=orjson.dumps(config).decode())
        await kc.run("create", "deployment", "web", "--image=nginx", "--replicas=2")

        async def injected() -> bool:
            out = (await kc.run("get", "pods", "-l", "app=web", "-o", "json")).out
            items = orjson.loads(out)["items"]
            return len(items) == 2 and all(
                (p["metadata"].get("annotations") or {}).get("injected") == "yes" for p in items
            )

        await eventually(injected, timeout=30)
        requests = hooks.requests("/inject")
        # The ReplicaSet controller creates pods with generateName: admission sees no name.
        assert all("name" not in r and r["object"]["metadata"]["generateName"] for r in requests)
