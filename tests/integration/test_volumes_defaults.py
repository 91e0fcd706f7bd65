"""The volume controllers under `--controllers`: without kind's provisioner there is no
`standard` class, a claim that names no class gets the default class once one exists (the
binder's retroactive assignment), and without pvc-protection claims carry no finalizer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubeforge.client.client import Client
from kubeforge.client.errors import NotFound
from kubeforge.cluster.devcluster import DevCluster
from kubeforge.cluster.options import ClusterOptions
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
