"""The multi-cluster vocabulary: requests that name their cluster, the cluster a reconcile
works for, and a cluster's own cache and client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kubeforge import Request
from kubeforge._client.transport import ClientClosed
from kubeforge._runtime.multicluster import in_cluster
from kubeforge.apiserver import APIServer
from kubeforge.client import load_kubeconfig
from kubeforge.multicluster import LOCAL_CLUSTER, Cluster, ClusterRequest, current_cluster
from kubeforge.testing import eventually


def test_a_cluster_request_names_its_cluster() -> None:
    request = ClusterRequest("ns", "app", "east")
    assert str(request) == "cluster://east/ns/app"
    assert str(ClusterRequest("", "node", "east")) == "cluster://east/node"
    assert str(ClusterRequest("ns", "app")) == "ns/app"  # the manager's own cluster
    assert ClusterRequest("ns", "app").cluster == LOCAL_CLUSTER
    assert isinstance(request, Request)
    assert request.request == Request("ns", "app")
    # One object in two clusters is two requests; a plain request is neither.
    assert request != ClusterRequest("ns", "app", "west")
    assert request != Request("ns", "app")
    assert len({request, ClusterRequest("ns", "app", "east"), Request("ns", "app")}) == 2


async def test_the_current_cluster_is_the_reconciles_own() -> None:
    with pytest.raises(LookupError, match="no cluster"):
        current_cluster()
    seen: dict[str, str] = {}

    async def work(name: str) -> None:
        with in_cluster(name):
            await asyncio.sleep(0)
            seen[name] = current_cluster()

    await asyncio.gather(work("east"), work("west"))
    assert seen == {"east": "east", "west": "west"}
    with pytest.raises(LookupError):
        current_cluster()


async def test_a_cluster_has_its_own_cache_and_client(server: APIServer, tmp_path: Path) -> None:
    config = load_kubeconfig(server.write_kubeconfig(tmp_path / "kubeconfig"))
    cluster = Cluster(config, namespace="default")
    informer = cluster.cache.informer_for("v1/ConfigMap")
    await cluster.start()
    try:
        await cluster.client.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
        )
        await eventually(lambda: "default/a" in informer.store)
        assert (await cluster.client.get("v1/ConfigMap", "a", namespace="default"))["metadata"][
            "name"
        ] == "a"
        assert informer.namespaces == ("default",)
    finally:
        await cluster.stop()
    with pytest.raises(ClientClosed):
        await cluster.api_reader.get("v1/ConfigMap", "a", namespace="default")
