"""Volumes under other cluster settings: without kind's provisioner there is no `standard`
class, and a claim that names no class gets the default class once one exists (the binder's
retroactive assignment); without pvc-protection claims carry no finalizer; with two nodes a
pod follows its claim's volume to its node."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubeforge._client.client import Client
from kubeforge._client.errors import NotFound
from kubeforge._cluster.devcluster import DevCluster
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import eventually

NS = "default"
PVC = "v1/PersistentVolumeClaim"


@pytest_asyncio.fixture
async def api() -> AsyncIterator[Client]:
    options = ClusterOptions(
        pod_start_seconds=0.05, controllers=("*", "-local-path-provisioner", "-pvc-protection")
    )
    async with DevCluster(options) as cluster:
        assert cluster.client is not None
        yield cluster.client


def claim(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            **spec,
        },
    }


async def reasons(api: Client, name: str) -> list[str]:
    events = await api.list("events.k8s.io/v1/Event", namespace=NS)
    return [str(e["reason"]) for e in events if e["regarding"]["name"] == name]


async def test_a_classless_claim_gets_the_default_class_once_there_is_one(api: Client) -> None:
    with pytest.raises(NotFound):
        await api.get("storage.k8s.io/v1/StorageClass", "standard")
    await api.create(claim("later"))
    await api.create(claim("never", storageClassName=""))
    created = await api.get(PVC, "later", namespace=NS)
    assert "storageClassName" not in created["spec"]
    # pvc-protection is off: nobody would remove its finalizer, so none is added.
    assert not created["metadata"].get("finalizers")

    async def no_class() -> bool:
        return "FailedBinding" in await reasons(api, "later")

    await eventually(no_class)

    await api.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": "fast",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "example.com/fast",
            "volumeBindingMode": "Immediate",
        }
    )

    async def defaulted() -> bool:
        found = await api.get(PVC, "later", namespace=NS)
        return bool(found["spec"].get("storageClassName") == "fast")

    await eventually(defaulted)

    async def handed_over() -> bool:
        return "ExternalProvisioning" in await reasons(api, "later")

    await eventually(handed_over)
    found = await api.get(PVC, "later", namespace=NS)
    assert found["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"] == (
        "example.com/fast"
    )
    # An explicit empty class asks for none, then as now.
    never = await api.get(PVC, "never", namespace=NS)
    assert never["spec"]["storageClassName"] == ""
    # New claims get the default class from the API server at once.
    await api.create(claim("now"))
    assert (await api.get(PVC, "now", namespace=NS))["spec"]["storageClassName"] == "fast"


async def test_a_pod_follows_its_claims_volume_to_its_node() -> None:
    async with DevCluster(ClusterOptions(pod_start_seconds=0.05, nodes=2)) as cluster:
        api = cluster.client
        assert api is not None
        await api.create(claim("pinned"))
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "first", "namespace": NS},
            "spec": {
                "containers": [{"name": "main", "image": "busybox"}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "pinned"}}],
                "terminationGracePeriodSeconds": 0,
            },
        }
        await api.create(pod)

        async def node_of(name: str) -> str:
            found = await api.get("v1/Pod", name, namespace=NS)
            return str(found["spec"].get("nodeName") or "")

        home = await eventually(lambda: node_of("first"))
        # Every later pod on the claim lands where its volume is, whatever the spreading says.
        for i in range(3):
            await api.create({**pod, "metadata": {"name": f"next-{i}", "namespace": NS}})
            assert await eventually(lambda i=i: node_of(f"next-{i}")) == home
        # With that node closed, no node fits.
        await api.patch("v1/Node", home, {"spec": {"unschedulable": True}})
        await api.create({**pod, "metadata": {"name": "homeless", "namespace": NS}})

        async def message() -> str:
            found = await api.get("v1/Pod", "homeless", namespace=NS)
            for condition in found["status"].get("conditions") or []:
                if condition["type"] == "PodScheduled" and condition["status"] == "False":
                    return str(condition["message"])
            return ""

        assert await eventually(message) == (
            "0/2 nodes are available: 1 node(s) had volume node affinity conflict, "
            "1 node(s) were unschedulable. preemption: 0/2 nodes are available: "
            "2 Preemption is not helpful for scheduling."
        )
