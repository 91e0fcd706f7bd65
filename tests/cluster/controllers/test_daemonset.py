"""The DaemonSet controller on the development cluster: a pod on every node that should run
one (node selector, required node affinity, taints and tolerations), nodes added and removed
at run time, RollingUpdate with maxUnavailable and maxSurge, OnDelete, revision history, and
what kubectl (1.33 and 1.29) and the official Python client read and write."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from kubeforge import Client
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import TestEnv
from tests.support import kubectl_for
from tests.support.workloads import (
    KUBECTL_VERSIONS,
    NS,
    POD,
    cluster,
    is_ready,
    pods,
    python_client,
    recording,
    wait_until,
)

DS = "apps/v1/DaemonSet"
NODE = "v1/Node"
REVISION = "apps/v1/ControllerRevision"
HASH = "controller-revision-hash"


def daemon_set(name: str = "agent", image: str = "agent:1", **spec: Any) -> dict[str, Any]:
    template_spec: dict[str, Any] = {"containers": [{"name": "main", "image": image}]}
    for key in ("nodeSelector", "tolerations", "affinity"):
        if key in spec:
            template_spec[key] = spec.pop(key)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": template_spec},
            **spec,
        },
    }


async def get_ds(client: Client, name: str = "agent") -> dict[str, Any]:
    return await client.get(DS, name, namespace=NS)


async def rolled_out(
    client: Client, name: str = "agent", desired: int | None = None
) -> dict[str, Any]:
    """Wait until every node that should run the pod runs an available, updated one."""

    async def done() -> dict[str, Any] | None:
        ds = await get_ds(client, name)
        status = ds.get("status") or {}
        want = status.get("desiredNumberScheduled", 0)
        ok = (
            status.get("observedGeneration") == ds["metadata"]["generation"]
            and (desired is None or want == desired)
            and status.get("currentNumberScheduled", 0) == want
            and status.get("updatedNumberScheduled", 0) == want
            and status.get("numberAvailable", 0) == want
            and len(await pods(client, f"app={name}")) == want
        )
        return ds if ok else None

    result: dict[str, Any] = await wait_until(done)
    return result


def nodes_of(listed: list[dict[str, Any]]) -> list[str]:
    return sorted(p["spec"].get("nodeName") or "" for p in listed)


async def revisions(client: Client, app: str = "agent") -> list[dict[str, Any]]:
    found = await client.list(REVISION, namespace=NS, label_selector=f"app={app}")
    return sorted(found, key=lambda r: r["revision"])


def new_image(image: str) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}}}


# -- placement ---------------------------------------------------------------------------------


async def test_one_pod_per_node_pinned_to_it_with_the_daemon_tolerations() -> None:
    async with cluster(nodes=3) as env:
        client = env.client
        created = await client.create(daemon_set())
        assert created["metadata"]["annotations"] == {
            "deprecated.daemonset.template.generation": "1"
        }
        ds = await rolled_out(client, desired=3)
        (revision,) = await revisions(client)
        hash_value = revision["metadata"]["labels"][HASH]
        assert revision["metadata"]["name"] == f"agent-{hash_value}"
        assert revision["metadata"]["labels"] == {"app": "agent", HASH: hash_value}
        assert revision["revision"] == 1
        assert revision["data"]["spec"]["template"]["$patch"] == "replace"
        assert ds["status"] == {
            "desiredNumberScheduled": 3,
            "currentNumberScheduled": 3,
            "numberMisscheduled": 0,
            "numberReady": 3,
            "updatedNumberScheduled": 3,
            "numberAvailable": 3,
            "observedGeneration": 1,
        }
        listed = await pods(client, "app=agent")
        assert nodes_of(listed) == ["kubeforge-node-0", "kubeforge-node-1", "kubeforge-node-2"]
        for pod in listed:
            node = pod["spec"]["nodeName"]
            assert pod["metadata"]["name"].startswith("agent-")
            assert pod["metadata"]["labels"] == {
                "app": "agent",
                HASH: hash_value,
                "pod-template-generation": "1",
            }
            required = pod["spec"]["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]
            assert required == {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            }
            tolerated = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
            assert tolerated == {
                ("node.kubernetes.io/not-ready", "NoExecute"),
                ("node.kubernetes.io/unreachable", "NoExecute"),
                ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                ("node.kubernetes.io/unschedulable", "NoSchedule"),
            }
            # The daemon's own not-ready toleration has no time limit.
            assert all("tolerationSeconds" not in t for t in pod["spec"]["tolerations"])
            (owner,) = pod["metadata"]["ownerReferences"]
            assert owner["kind"] == "DaemonSet" and owner["uid"] == created["metadata"]["uid"]


async def test_node_selector_affinity_and_taints_choose_the_nodes() -> None:
    async with cluster(nodes=3) as env:
        client = env.client
        await client.patch(NODE, "kubeforge-node-1", {"metadata": {"labels": {"disk": "ssd"}}})
        taint = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
        await client.patch(NODE, "kubeforge-node-2", {"spec": {"taints": [taint]}})
        await client.create(daemon_set("ssd", nodeSelector={"disk": "ssd"}))
        await client.create(daemon_set("plain"))
        toleration = {
            "key": "dedicated",
            "operator": "Equal",
            "value": "infra",
            "effect": "NoSchedule",
        }
        await client.create(daemon_set("tolerant", tolerations=[toleration]))
        not_node_0 = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "NotIn",
                                    "values": ["kubeforge-node-0"],
                                }
                            ]
                        }
                    ]
                }
            }
        }
        await client.create(daemon_set("affine", affinity=not_node_0, tolerations=[toleration]))
        await rolled_out(client, "ssd", desired=1)
        await rolled_out(client, "plain", desired=2)
        await rolled_out(client, "tolerant", desired=3)
        await rolled_out(client, "affine", desired=2)
        assert nodes_of(await pods(client, "app=ssd")) == ["kubeforge-node-1"]
        assert nodes_of(await pods(client, "app=plain")) == ["kubeforge-node-0", "kubeforge-node-1"]
        assert nodes_of(await pods(client, "app=affine")) == [
            "kubeforge-node-1",
            "kubeforge-node-2",
        ]
        # A NoExecute taint no pod tolerates: the pods there go; a NoSchedule one would not
        # have moved them.
        evict = {"key": "evict", "value": "now", "effect": "NoExecute"}
        await client.patch(NODE, "kubeforge-node-1", {"spec": {"taints": [evict]}})
        await rolled_out(client, "plain", desired=1)
        await rolled_out(client, "ssd", desired=0)
        assert nodes_of(await pods(client, "app=plain")) == ["kubeforge-node-0"]
        assert nodes_of(await pods(client, "app=tolerant")) == [
            "kubeforge-node-0",
            "kubeforge-node-2",
        ]


async def test_a_node_added_later_gets_its_pod_and_a_removed_one_loses_it() -> None:
    options = ClusterOptions(nodes=1, pod_gc_quarantine_seconds=0.5)
    async with TestEnv(crd_paths=(), options=options) as env:
        client = env.client
        assert env.cluster is not None
        await client.create(daemon_set())
        await rolled_out(client, desired=1)
        added = await env.cluster.add_node(labels={"pool": "extra"})
        assert added.name == "kubeforge-node-1"
        node = await client.get(NODE, added.name)
        assert node["metadata"]["labels"]["pool"] == "extra"
        await rolled_out(client, desired=2)
        assert nodes_of(await pods(client, "app=agent")) == ["kubeforge-node", added.name]
        (on_added,) = [
            p for p in await pods(client, "app=agent") if p["spec"]["nodeName"] == added.name
        ]
        async with recording(client) as events:
            await env.cluster.remove_node(added.name)
            await rolled_out(client, desired=1)

            async def collected() -> bool:
                return nodes_of(await pods(client, "app=agent")) == ["kubeforge-node"]

            await wait_until(collected)
        # The pod garbage collector failed the orphan before deleting it.
        last = [obj for kind, obj in events.of(on_added["metadata"]["name"]) if kind != "DELETED"]
        assert last[-1]["status"]["phase"] == "Failed"
        reasons = {c["type"]: c.get("reason") for c in last[-1]["status"]["conditions"]}
        assert reasons["DisruptionTarget"] == "DeletionByPodGC"


# -- updates -------------------------------------------------------------------------------------


@KUBECTL_VERSIONS
async def test_rolling_update_within_max_unavailable_and_kubectl_rollout(
    version: str, tmp_path: Path
) -> None:
    async with cluster(nodes=3) as env:
        client = env.client
        kubectl = kubectl_for(env.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path, version)
        await client.create(daemon_set())
        await rolled_out(client, desired=3)
        (first,) = await revisions(client)
        async with recording(client, DS) as statuses:
            await kubectl.run("set", "image", "daemonset/agent", "main=agent:2")
            done = await kubectl.run("rollout", "status", "daemonset/agent", "--timeout=60s")
            ds = await rolled_out(client, desired=3)
        assert 'daemon set "agent" successfully rolled out' in done.out
        # maxUnavailable 1 (the default): never more than one node without an available pod.
        observed = [obj.get("status") or {} for _, obj in statuses.events]
        assert max(s.get("numberUnavailable", 0) for s in observed) == 1
        assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"
        images = {p["spec"]["containers"][0]["image"] for p in await pods(client, "app=agent")}
        assert images == {"agent:2"}
        labels = {
            p["metadata"]["labels"]["pod-template-generation"]
            for p in await pods(client, "app=agent")
        }
        assert labels == {"2"}

        history = await kubectl.run("rollout", "history", "daemonset/agent")
        assert [line.split()[0] for line in history.out.splitlines()[2:] if line.strip()] == [
            "1",
            "2",
        ]
        shown = await kubectl.run("rollout", "history", "daemonset/agent", "--revision=1")
        assert "agent:1" in shown.out
        assert "rolled back" in (await kubectl.run("rollout", "undo", "daemonset/agent")).out
        await rolled_out(client, desired=3)
        numbers = {r["metadata"]["name"]: r["revision"] for r in await revisions(client)}
        assert numbers[first["metadata"]["name"]] == 3
        images = {p["spec"]["containers"][0]["image"] for p in await pods(client, "app=agent")}
        assert images == {"agent:1"}
        again = await kubectl.run("rollout", "undo", "daemonset/agent", "--to-revision=3")
        assert "skipped rollback (current template already matches revision 3)" in again.out


async def test_max_surge_starts_the_new_pod_beside_the_old_one() -> None:
    async with cluster(nodes=2) as env:
        client = env.client
        rolling = {"maxSurge": 1, "maxUnavailable": 0}
        await client.create(
            daemon_set(updateStrategy={"type": "RollingUpdate", "rollingUpdate": rolling})
        )
        await rolled_out(client, desired=2)
        async with recording(client) as events:
            await client.patch(DS, "agent", new_image("agent:2"), namespace=NS)
            await rolled_out(client, desired=2)
        new_hash = (await revisions(client))[-1]["metadata"]["labels"][HASH]
        # On each node the new pod ran, Ready, beside the old one before the old one was
        # deleted: the node never lacked a ready pod.
        ready_new: set[str] = set()
        retired: list[str] = []
        for _, pod in events.events:
            node = target(pod)
            if pod["metadata"]["labels"][HASH] == new_hash:
                if is_ready(pod):
                    ready_new.add(node)
            elif pod["metadata"].get("deletionTimestamp") and node not in retired:
                assert node in ready_new, f"the old pod on {node} went first"
                retired.append(node)
        assert sorted(retired) == ["kubeforge-node-0", "kubeforge-node-1"]


def target(pod: dict[str, Any]) -> str:
    """The node a daemon pod is for."""
    required = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    node: str = required["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
    return node


async def test_on_delete_replaces_only_pods_the_user_deletes() -> None:
    async with cluster(nodes=2) as env:
        client = env.client
        await client.create(daemon_set(updateStrategy={"type": "OnDelete"}))
        await rolled_out(client, desired=2)
        await client.patch(DS, "agent", new_image("agent:2"), namespace=NS)

        async def seen() -> bool:
            status = (await get_ds(client)).get("status") or {}
            return status.get("observedGeneration") == 2 and not status.get(
                "updatedNumberScheduled"
            )

        await wait_until(seen)
        (victim, kept) = await pods(client, "app=agent")
        await client.delete(POD, victim["metadata"]["name"], namespace=NS)

        async def one_updated() -> bool:
            listed = [p for p in await pods(client, "app=agent") if is_ready(p)]
            images = sorted(p["spec"]["containers"][0]["image"] for p in listed)
            status = (await get_ds(client)).get("status") or {}
            return images == ["agent:1", "agent:2"] and status.get("updatedNumberScheduled") == 1

        await wait_until(one_updated)
        assert kept["metadata"]["name"] in [
            p["metadata"]["name"] for p in await pods(client, "app=agent")
        ]


async def test_a_failed_daemon_pod_is_replaced() -> None:
    async with cluster() as env:
        client = env.client
        await client.create(daemon_set())
        await rolled_out(client, desired=1)
        (old,) = await pods(client, "app=agent")
        await client.patch_status(
            POD, old["metadata"]["name"], {"status": {"phase": "Failed"}}, namespace=NS
        )

        async def replaced() -> bool:
            listed = await pods(client, "app=agent")
            return [
                p["metadata"]["uid"] != old["metadata"]["uid"] and is_ready(p) for p in listed
            ] == [True]

        await wait_until(replaced)


async def test_revision_history_limit_for_daemon_sets() -> None:
    async with cluster() as env:
        client = env.client
        await client.create(daemon_set(revisionHistoryLimit=1))
        await rolled_out(client, desired=1)
        for tag in ("2", "3", "4"):
            await client.patch(DS, "agent", new_image(f"agent:{tag}"), namespace=NS)
            await rolled_out(client, desired=1)

        async def trimmed() -> list[int]:
            numbers = [r["revision"] for r in await revisions(client)]
            return numbers if numbers == [3, 4] else []

        assert await wait_until(trimmed) == [3, 4]


# -- what clients see ----------------------------------------------------------------------------


async def test_python_client_reads_daemon_set_status(tmp_path: Path) -> None:
    async with cluster(nodes=2) as env:
        await env.client.create(daemon_set())
        await rolled_out(env.client, desired=2)
        with python_client(env, tmp_path) as api:
            apps = k8s.AppsV1Api(api)

            def read() -> tuple[Any, Any]:
                ds = apps.read_namespaced_daemon_set("agent", NS)
                listed = apps.list_namespaced_controller_revision(NS, label_selector="app=agent")
                return ds, listed.items

            ds, listed = await asyncio.to_thread(read)
        assert ds.status.desired_number_scheduled == 2 and ds.status.number_ready == 2
        assert ds.status.number_available == 2 and ds.status.updated_number_scheduled == 2
        assert [r.revision for r in listed] == [1]
        assert listed[0].metadata.owner_references[0].kind == "DaemonSet"


async def test_a_not_ready_node_keeps_its_daemon_pod_which_counts_as_misscheduled() -> None:
    options = ClusterOptions(nodes=2, node_monitor_grace_period=1.0)
    async with TestEnv(crd_paths=(), options=options) as env:
        client = env.client
        await client.create(daemon_set())
        await rolled_out(client, desired=2)
        before = {
            p["spec"]["nodeName"]: p["metadata"]["uid"] for p in await pods(client, "app=agent")
        }
        await env.set_node_health("kubeforge-node-1", "not-ready")

        async def tainted_and_counted() -> bool:
            node = await client.get(NODE, "kubeforge-node-1")
            keys = {(t["key"], t["effect"]) for t in node["spec"].get("taints") or ()}
            status = (await get_ds(client)).get("status") or {}
            return ("node.kubernetes.io/not-ready", "NoExecute") in keys and (
                status.get("desiredNumberScheduled"),
                status.get("numberMisscheduled"),
            ) == (1, 1)

        # The NoSchedule taint makes the node unfit for a new daemon pod; the pod there
        # tolerates the NoExecute one without a time limit, so it stays.
        await wait_until(tainted_and_counted)
        now = {p["spec"]["nodeName"]: p["metadata"]["uid"] for p in await pods(client, "app=agent")}
        assert now == before
        await env.set_node_health("kubeforge-node-1", "ready")
        await rolled_out(client, desired=2)
        after = {
            p["spec"]["nodeName"]: p["metadata"]["uid"] for p in await pods(client, "app=agent")
        }
        assert after == before
