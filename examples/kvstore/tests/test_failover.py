"""Failover: a node goes NotReady and its member is started elsewhere with its data; a drain
evicts one member and the disruption budget holds the others.

Both work on any `kubeforge dev` cluster with several nodes: the node is taken down through
its `kubeforge.dev/node-health` annotation, which its simulated kubelet watches, and every
node touched is brought back (uncordoned, healthy) however the test ends.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import kubeforge
from kubeforge.testing import Kubectl, TestEnv, eventually

from tests.support import (
    SELECTOR,
    condition,
    get,
    kvstore_manifest,
    members,
    put,
    serving_on,
    settled,
    status,
)

HEALTH = "kubeforge.dev/node-health"


@asynccontextmanager
async def shared_storage_class(kubectl: Kubectl, name: str) -> AsyncIterator[str]:
    """A StorageClass whose volumes every node reaches (local-path-provisioner's shared
    file system mode, bound at once), as network storage is: a member can move to another
    node with its volume. Deleted afterwards (it is cluster-scoped)."""
    await kubectl.apply(
        f"""
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: {name}
provisioner: rancher.io/local-path
volumeBindingMode: Immediate
reclaimPolicy: Delete
"""
    )
    try:
        yield name
    finally:
        await kubectl.run("delete", "storageclass", name, "--ignore-not-found")


@asynccontextmanager
async def restored(kubectl: Kubectl, nodes: list[str]) -> AsyncIterator[list[str]]:
    """Nodes a test takes down or drains: healthy, schedulable and Ready again afterwards."""
    try:
        yield nodes
    finally:
        for node in nodes:
            await kubectl.run("annotate", "node", node, f"{HEALTH}-", check=False)
            await kubectl.run("uncordon", node, check=False)
        for node in nodes:
            await kubectl.run(
                "wait", "--for=condition=Ready", f"node/{node}", "--timeout=30s", timeout=40
            )


async def test_a_member_on_a_node_that_goes_not_ready_comes_back_elsewhere_with_its_data(
    manager: kubeforge.Manager, kubectl: Kubectl, testenv: TestEnv
) -> None:
    async with shared_storage_class(kubectl, f"shared-{testenv.namespace}") as storage_class:
        await kubectl.apply(
            kvstore_manifest("kv", replicas=3, storage_class=storage_class, failover_seconds=1)
        )
        await settled(kubectl, "kv", 3)
        await put(kubectl, "kv-1", "colour", "blue")
        pod = (await members(kubectl, "kv"))["kv-1"]
        failed, uid = pod["spec"]["nodeName"], pod["metadata"]["uid"]
        # The member tolerates the node failure taints for failoverSeconds only.
        tolerations = {t["key"]: t.get("tolerationSeconds") for t in pod["spec"]["tolerations"]}
        assert tolerations["node.kubernetes.io/not-ready"] == 1
        assert tolerations["node.kubernetes.io/unreachable"] == 1

        async with restored(kubectl, [failed]):
            await kubectl.run("annotate", "node", failed, f"{HEALTH}=not-ready")
            await kubectl.run(
                "wait", "--for=condition=Ready=false", f"node/{failed}", "--timeout=20s", timeout=30
            )
            node = await kubectl.json("get", "node", failed)
            taints = {(t["key"], t["effect"]) for t in node["spec"].get("taints") or []}
            assert ("node.kubernetes.io/not-ready", "NoExecute") in taints

            # After a second the member is evicted, and made again on a node that is ready.
            moved = await serving_on(kubectl, "kv-1", not_on=failed)
            assert (await members(kubectl, "kv"))["kv-1"]["metadata"]["uid"] != uid
            events = await kubectl.json(
                "get", "events", "--field-selector", "involvedObject.name=kv-1"
            )
            assert "TaintManagerEviction" in {e["reason"] for e in events["items"]}

            # Its volume came with it: the key it held is there.
            assert await get(kubectl, "kv-1", "colour") == "blue"

            async def reported() -> bool:
                found = await status(kubectl, "kv")
                nodes = {m["name"]: m["node"] for m in found.get("members") or []}
                return nodes.get("kv-1") == moved and found.get("readyReplicas") == 3

            await eventually(reported, timeout=20)
            assert condition(await status(kubectl, "kv"), "Available")["status"] == "True"


def eviction(namespace: str, pod: str) -> str:
    return json.dumps(
        {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod, "namespace": namespace},
        }
    )


async def test_a_drain_evicts_one_member_and_the_budget_holds_the_others(
    manager: kubeforge.Manager, kubectl: Kubectl, testenv: TestEnv
) -> None:
    # The default class: each volume lives on the node its member first ran on, as on kind.
    await kubectl.apply(kvstore_manifest("kv", replicas=3))
    await settled(kubectl, "kv", 3)
    await put(kubectl, "kv-0", "colour", "red")
    placed = {name: pod["spec"]["nodeName"] for name, pod in (await members(kubectl, "kv")).items()}
    drained = placed["kv-0"]
    others = sorted({node for name, node in placed.items() if name != "kv-0"})
    assert drained not in others, placed  # the scheduler spreads the members over the nodes
    selector = f"--pod-selector={SELECTOR.format(name='kv')}"

    async with restored(kubectl, [drained, placed["kv-1"]]):
        result = await kubectl.run(
            "drain",
            drained,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            selector,
            "--timeout=60s",
            timeout=70,
        )
        assert f"node/{drained} cordoned" in result.out
        assert "pod/kv-0 evicted" in result.out
        assert f"node/{drained} drained" in result.out

        # kv-0 is made again, but its volume is on the cordoned node: it waits there.
        async def waiting() -> str | None:
            pod = (await members(kubectl, "kv")).get("kv-0")
            if pod is None or pod["status"].get("phase") != "Pending":
                return None
            scheduled: dict[str, str] = next(
                (c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"),
                {},
            )
            return scheduled.get("message") if scheduled.get("status") == "False" else None

        message = await eventually(waiting, timeout=30)
        assert message is not None and "volume node affinity conflict" in message, message

        # Two of three serve: the store is available, and the budget allows no more.
        async def held() -> dict[str, int] | None:
            counts = (await kubectl.json("get", "pdb", "kv")).get("status") or {}
            return counts if counts.get("currentHealthy") == 2 else None

        counts = await eventually(held, timeout=20)
        assert counts is not None
        assert (counts["desiredHealthy"], counts["disruptionsAllowed"]) == (2, 0)
        found = await status(kubectl, "kv")
        assert condition(found, "Available")["status"] == "True"
        assert condition(found, "Ready")["reason"] == "MembersNotReady"

        # A second eviction is refused with 429 while kv-0 is down...
        path = f"/api/v1/namespaces/{testenv.namespace}/pods/kv-1/eviction"
        refused = await kubectl.run(
            "create",
            "--raw",
            path,
            "-f",
            "-",
            stdin=eviction(testenv.namespace, "kv-1"),
            check=False,
        )
        assert refused.code != 0
        assert "Error from server (TooManyRequests)" in refused.err
        assert "Cannot evict pod as it would violate the pod's disruption budget" in refused.err
        # ... and so is a drain of the next node: it keeps retrying until its timeout.
        blocked = await kubectl.run(
            "drain",
            placed["kv-1"],
            "--ignore-daemonsets",
            selector,
            "--timeout=2s",
            check=False,
            timeout=30,
        )
        assert blocked.code != 0
        assert "would violate the pod's disruption budget" in blocked.err
        assert "kv-1" in (await members(kubectl, "kv"))

        # Uncordoned, the node takes kv-0 back, with its data.
        await kubectl.run("uncordon", drained)
        assert await serving_on(kubectl, "kv-0") == drained
        assert await get(kubectl, "kv-0", "colour") == "red"
        await settled(kubectl, "kv", 3)
