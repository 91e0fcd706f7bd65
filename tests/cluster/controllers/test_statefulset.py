"""The StatefulSet controller on the development cluster: stable identities and claims,
ordered and parallel pod management, rolling updates with a partition, OnDelete, the claims'
retention policy, revision history, and what kubectl (1.33 and 1.29) and the official Python
client read and write."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from kubeforge import Client
from kubeforge._client.errors import NotFound
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

STS = "apps/v1/StatefulSet"
PVC = "v1/PersistentVolumeClaim"
REVISION = "apps/v1/ControllerRevision"


def stateful_set(
    name: str = "web",
    replicas: int = 3,
    *,
    claims: bool = True,
    annotations: dict[str, str] | None = None,
    image: str = "nginx:1",
    **spec: Any,
) -> dict[str, Any]:
    template: dict[str, Any] = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "main", "image": image}]},
    }
    if annotations:
        template["metadata"]["annotations"] = annotations
    body: dict[str, Any] = {
        "serviceName": name,
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": template,
        **spec,
    }
    if claims:
        body["volumeClaimTemplates"] = [
            {
                "metadata": {"name": "data"},
                # Bound or not (the cluster may have no volume provisioner), the pods run.
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": body,
    }


async def get_set(client: Client, name: str = "web") -> dict[str, Any]:
    return await client.get(STS, name, namespace=NS)


async def rolled_out(client: Client, name: str = "web") -> dict[str, Any]:
    """Wait until the set's status says every replica is updated, ready and current."""

    async def done() -> dict[str, Any] | None:
        sts = await get_set(client, name)
        status = sts.get("status") or {}
        want = sts["spec"]["replicas"]
        ok = (
            status.get("observedGeneration") == sts["metadata"]["generation"]
            and status.get("replicas", 0) == want
            and status.get("readyReplicas", 0) == want
            and status.get("updatedReplicas", 0) == want
            and status.get("currentRevision") == status.get("updateRevision")
        )
        return sts if ok else None

    result: dict[str, Any] = await wait_until(done)
    return result


async def claim_names(client: Client) -> list[str]:
    return sorted(c["metadata"]["name"] for c in await client.list(PVC, namespace=NS))


async def revisions(client: Client, app: str = "web") -> list[dict[str, Any]]:
    found = await client.list(REVISION, namespace=NS, label_selector=f"app={app}")
    return sorted(found, key=lambda r: r["revision"])


# -- identities, claims, order -------------------------------------------------------------------


async def test_ordered_ready_pods_have_stable_identities_and_claims_made_first() -> None:
    async with cluster() as env:
        client = env.client
        async with recording(client) as pod_events, recording(client, PVC) as claim_events:
            created = await client.create(stateful_set())
            sts = await rolled_out(client)
        uid = created["metadata"]["uid"]
        (revision,) = await revisions(client)
        name = revision["metadata"]["name"]
        assert name == f"web-{revision['metadata']['labels']['controller.kubernetes.io/hash']}"
        assert revision["revision"] == 1
        assert revision["metadata"]["ownerReferences"][0]["uid"] == uid
        assert sts["status"] == {
            "observedGeneration": 1,
            "replicas": 3,
            "readyReplicas": 3,
            "currentReplicas": 3,
            "updatedReplicas": 3,
            "availableReplicas": 3,
            "currentRevision": name,
            "updateRevision": name,
            "collisionCount": 0,
        }
        for ordinal, pod in enumerate(await pods(client, "app=web")):
            pod_name = f"web-{ordinal}"
            assert pod["metadata"]["name"] == pod_name
            assert pod["metadata"]["labels"] == {
                "app": "web",
                "statefulset.kubernetes.io/pod-name": pod_name,
                "apps.kubernetes.io/pod-index": str(ordinal),
                "controller-revision-hash": name,
            }
            assert pod["spec"]["hostname"] == pod_name
            assert pod["spec"]["subdomain"] == "web"
            assert {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{pod_name}"}} in (
                pod["spec"]["volumes"]
            )
            (owner,) = pod["metadata"]["ownerReferences"]
            assert owner["kind"] == "StatefulSet" and owner["uid"] == uid and owner["controller"]
        # The claims exist, unowned under the default Retain policy, labelled with the
        # selector's labels, asking for what their template asks.
        for claim in await client.list(PVC, namespace=NS):
            assert claim["spec"]["resources"] == {"requests": {"storage": "1Gi"}}
            assert claim["metadata"]["labels"] == {"app": "web"}
            assert not claim["metadata"].get("ownerReferences")
        assert await claim_names(client) == ["data-web-0", "data-web-1", "data-web-2"]
        # Each claim was made before its pod, and each pod only once its predecessor was
        # Running and Ready.
        for ordinal in range(3):
            claim = claim_events.of(f"data-web-{ordinal}")[0][1]
            pod = pod_events.of(f"web-{ordinal}")[0][1]
            assert int(claim["metadata"]["resourceVersion"]) < int(
                pod["metadata"]["resourceVersion"]
            )
        assert pod_events.names("ADDED") == ["web-0", "web-1", "web-2"]
        for ordinal in (1, 2):
            added_at = pod_events.events.index(pod_events.of(f"web-{ordinal}")[0])
            before = [obj for _, obj in pod_events.events[:added_at]]
            previous = [p for p in before if p["metadata"]["name"] == f"web-{ordinal - 1}"]
            assert previous and is_ready(previous[-1])
            assert previous[-1]["status"]["phase"] == "Running"


async def test_ordered_ready_waits_for_a_pod_that_never_gets_ready() -> None:
    async with cluster() as env:
        client = env.client
        await client.create(
            stateful_set(claims=False, annotations={"kubeforge.dev/ready": "false"})
        )

        async def first_running() -> bool:
            sts = await get_set(client)
            status = sts.get("status") or {}
            listed = await pods(client, "app=web")
            return status.get("replicas") == 1 and [p["status"]["phase"] for p in listed] == [
                "Running"
            ]

        await wait_until(first_running)
        # Status counted the running but unready web-0: web-1 had its chance and was not made.
        assert [p["metadata"]["name"] for p in await pods(client, "app=web")] == ["web-0"]
        assert (await get_set(client))["status"].get("readyReplicas", 0) == 0


async def test_parallel_creates_and_deletes_without_waiting() -> None:
    async with cluster() as env:
        client = env.client
        await client.create(
            stateful_set(
                claims=False,
                annotations={"kubeforge.dev/ready": "false"},
                podManagementPolicy="Parallel",
            )
        )

        async def all_running() -> bool:
            listed = await pods(client, "app=web")
            return [p["status"]["phase"] for p in listed] == ["Running"] * 3

        await wait_until(all_running)
        assert not any(is_ready(p) for p in await pods(client, "app=web"))
        await client.scale(STS, "web", 0, namespace=NS)

        async def none_left() -> bool:
            return not await pods(client, "app=web")

        await wait_until(none_left)


@KUBECTL_VERSIONS
async def test_kubectl_scale_removes_the_highest_ordinals_first_and_keeps_claims(
    version: str, tmp_path: Path
) -> None:
    async with cluster() as env:
        client = env.client
        kubectl = kubectl_for(env.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path, version)
        await client.create(stateful_set())
        await rolled_out(client)
        async with recording(client) as events:
            await kubectl.run("scale", "statefulset/web", "--replicas=1")
            await kubectl.run("rollout", "status", "statefulset/web", "--timeout=60s")

            async def one_left() -> bool:
                return [p["metadata"]["name"] for p in await pods(client, "app=web")] == ["web-0"]

            await wait_until(one_left)
        assert events.names("DELETED") == ["web-2", "web-1"]
        # web-1 was deleted only once web-2 was gone.
        gone = events.events.index(next(e for e in events.events if e[0] == "DELETED"))
        assert all(
            obj["metadata"]["name"] != "web-1" or kind != "DELETED"
            for kind, obj in events.events[:gone]
        )
        assert await claim_names(client) == ["data-web-0", "data-web-1", "data-web-2"]
        got = await kubectl.run("get", "statefulset", "web", "--no-headers")
        assert got.out.split()[:2] == ["web", "1/1"]


async def test_ordinals_start_names_the_first_pod() -> None:
    async with cluster() as env:
        client = env.client
        await client.create(stateful_set(replicas=2, claims=False, ordinals={"start": 5}))
        await rolled_out(client)
        listed = await pods(client, "app=web")
        assert [p["metadata"]["name"] for p in listed] == ["web-5", "web-6"]
        assert [p["metadata"]["labels"]["apps.kubernetes.io/pod-index"] for p in listed] == [
            "5",
            "6",
        ]


async def test_a_failed_pod_is_made_again_under_its_name() -> None:
    async with cluster() as env:
        client = env.client
        await client.create(stateful_set(replicas=2, claims=False))
        await rolled_out(client)
        (old,) = [p for p in await pods(client, "app=web") if p["metadata"]["name"] == "web-1"]
        # What the kubelet reports when the pod's node evicted it.
        await client.patch_status(
            POD, "web-1", {"status": {"phase": "Failed", "reason": "Evicted"}}, namespace=NS
        )

        async def replaced() -> bool:
            listed = {p["metadata"]["name"]: p for p in await pods(client, "app=web")}
            again = listed.get("web-1")
            return (
                again is not None
                and again["metadata"]["uid"] != old["metadata"]["uid"]
                and is_ready(again)
            )

        await wait_until(replaced)


async def test_min_ready_seconds_holds_availability_back() -> None:
    async with cluster() as env:
        client = env.client
        async with recording(client, STS) as events:
            await client.create(stateful_set(replicas=1, claims=False, minReadySeconds=1))

            async def available() -> bool:
                status = (await get_set(client)).get("status") or {}
                return status.get("availableReplicas") == 1

            await wait_until(available)
        statuses = [obj.get("status") or {} for _, obj in events.events]
        assert any(
            s.get("readyReplicas") == 1 and s.get("availableReplicas") == 0 for s in statuses
        )


# -- updates ---------------------------------------------------------------------------------------


@KUBECTL_VERSIONS
async def test_rolling_update_with_partition_and_kubectl_rollout(
    version: str, tmp_path: Path
) -> None:
    async with cluster() as env:
        client = env.client
        kubectl = kubectl_for(env.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path, version)
        await client.create(
            stateful_set(
                claims=False,
                updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
            )
        )
        first = (await rolled_out(client))["status"]["currentRevision"]
        await kubectl.run("annotate", "statefulset/web", "kubernetes.io/change-cause=to nginx 2")
        await kubectl.run("set", "image", "statefulset/web", "main=nginx:2")
        status = await kubectl.run("rollout", "status", "statefulset/web", "--timeout=60s")
        assert "partitioned roll out complete: 1 new pods have been updated" in status.out
        sts = await get_set(client)
        second = sts["status"]["updateRevision"]
        assert second != first and sts["status"]["currentRevision"] == first
        assert sts["status"]["updatedReplicas"] == 1 and sts["status"]["currentReplicas"] == 2
        images = {
            p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
            for p in await pods(client, "app=web")
        }
        assert images == {"web-0": "nginx:1", "web-1": "nginx:1", "web-2": "nginx:2"}

        async with recording(client) as events:
            await kubectl.run(
                "patch",
                "statefulset/web",
                "-p",
                '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}',
            )
            sts = await rolled_out(client)
        # From the highest ordinal down, one at a time.
        assert events.names("DELETED") == ["web-1", "web-0"]
        assert sts["status"]["currentRevision"] == second
        history = await kubectl.run("rollout", "history", "statefulset/web")
        rows = [line.split(None, 1) for line in history.out.splitlines()[2:] if line.strip()]
        assert [[cell.strip() for cell in row] for row in rows] == [
            ["1", "<none>"],
            ["2", "to nginx 2"],
        ]
        shown = await kubectl.run("rollout", "history", "statefulset/web", "--revision=1")
        assert "nginx:1" in shown.out

        undone = await kubectl.run("rollout", "undo", "statefulset/web")
        assert "rolled back" in undone.out
        sts = await rolled_out(client)
        # The first revision is current again, under a new number.
        assert sts["status"]["updateRevision"] == first
        numbers = {r["metadata"]["name"]: r["revision"] for r in await revisions(client)}
        assert numbers == {first: 3, second: 2}
        assert {p["spec"]["containers"][0]["image"] for p in await pods(client, "app=web")} == {
            "nginx:1"
        }
        again = await kubectl.run("rollout", "undo", "statefulset/web", "--to-revision=3")
        assert "skipped rollback (current template already matches revision 3)" in again.out


async def test_on_delete_updates_only_pods_the_user_deletes() -> None:
    async with cluster() as env:
        client = env.client
        await client.create(
            stateful_set(replicas=2, claims=False, updateStrategy={"type": "OnDelete"})
        )
        await rolled_out(client)
        await client.patch(
            STS,
            "web",
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}
                }
            },
            namespace=NS,
        )

        async def revision_seen() -> bool:
            sts = await get_set(client)
            status = sts.get("status") or {}
            return status.get("observedGeneration") == 2 and status.get(
                "updateRevision"
            ) != status.get("currentRevision")

        await wait_until(revision_seen)
        assert {p["spec"]["containers"][0]["image"] for p in await pods(client, "app=web")} == {
            "nginx:1"
        }
        await client.delete(POD, "web-0", namespace=NS)

        async def web0_updated() -> bool:
            images = {
                p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
                for p in await pods(client, "app=web")
                if is_ready(p)
            }
            return images == {"web-0": "nginx:2", "web-1": "nginx:1"}

        await wait_until(web0_updated)
        status = (await get_set(client))["status"]
        assert status["updatedReplicas"] == 1 and status["currentReplicas"] == 1


async def test_max_unavailable_is_dropped_as_by_a_default_1_33_server() -> None:
    async with cluster() as env:
        rolling = {"partition": 0, "maxUnavailable": 2}
        created = await env.client.create(
            stateful_set(
                claims=False, updateStrategy={"type": "RollingUpdate", "rollingUpdate": rolling}
            )
        )
        # MaxUnavailableStatefulSet is alpha, off by default, in Kubernetes 1.33.
        assert created["spec"]["updateStrategy"]["rollingUpdate"] == {"partition": 0}


async def test_revision_history_limit_keeps_the_newest_unused_revisions() -> None:
    async with cluster() as env:
        client = env.client
        await client.create(stateful_set(replicas=1, claims=False, revisionHistoryLimit=1))
        for tag in ("2", "3", "4"):
            await client.patch(
                STS,
                "web",
                {
                    "spec": {
                        "template": {
                            "spec": {"containers": [{"name": "main", "image": f"nginx:{tag}"}]}
                        }
                    }
                },
                namespace=NS,
            )
            await rolled_out(client)

        async def trimmed() -> list[int]:
            numbers = [r["revision"] for r in await revisions(client)]
            return numbers if numbers == [3, 4] else []

        assert await wait_until(trimmed) == [3, 4]


# -- claims' retention -------------------------------------------------------------------------


async def test_retention_policy_delete_hands_claims_to_the_set_and_to_scaled_down_pods() -> None:
    async with cluster() as env:
        client = env.client
        policy = {"whenDeleted": "Delete", "whenScaled": "Delete"}
        created = await client.create(
            stateful_set(replicas=2, persistentVolumeClaimRetentionPolicy=policy)
        )
        await rolled_out(client)
        for claim in await client.list(PVC, namespace=NS):
            (ref,) = claim["metadata"]["ownerReferences"]
            assert ref["kind"] == "StatefulSet" and ref["uid"] == created["metadata"]["uid"]
            assert ref["controller"] is True and ref["blockOwnerDeletion"] is True
        await client.scale(STS, "web", 1, namespace=NS)

        async def scaled_claim_gone() -> bool:
            return await claim_names(client) == ["data-web-0"]

        # The claim of the removed pod went with it (garbage collection of its owner).
        await wait_until(scaled_claim_gone)
        await client.delete(STS, "web", namespace=NS)

        async def all_gone() -> bool:
            return await claim_names(client) == []

        await wait_until(all_gone)


async def test_retention_policy_retain_on_scale_down_keeps_the_claim_for_the_next_pod() -> None:
    async with cluster() as env:
        client = env.client
        policy = {"whenDeleted": "Delete", "whenScaled": "Retain"}
        await client.create(stateful_set(replicas=2, persistentVolumeClaimRetentionPolicy=policy))
        await rolled_out(client)
        first_uid = (await client.get(PVC, "data-web-1", namespace=NS))["metadata"]["uid"]
        await client.scale(STS, "web", 1, namespace=NS)
        await rolled_out(client)
        await client.scale(STS, "web", 2, namespace=NS)
        await rolled_out(client)
        assert (await client.get(PVC, "data-web-1", namespace=NS))["metadata"]["uid"] == first_uid


# -- what clients see ----------------------------------------------------------------------------


async def test_python_client_reads_status_and_scales(tmp_path: Path) -> None:
    async with cluster() as env:
        await env.client.create(stateful_set(replicas=2, claims=False))
        await rolled_out(env.client)
        with python_client(env, tmp_path) as api:
            apps = k8s.AppsV1Api(api)

            def read() -> tuple[Any, list[Any]]:
                sts = apps.read_namespaced_stateful_set("web", NS)
                listed = apps.list_namespaced_controller_revision(NS, label_selector="app=web")
                apps.patch_namespaced_stateful_set_scale("web", NS, {"spec": {"replicas": 3}})
                return sts, listed.items

            sts, listed = await asyncio.to_thread(read)
        assert sts.status.ready_replicas == 2 and sts.status.available_replicas == 2
        assert sts.status.current_revision == listed[0].metadata.name
        assert listed[0].revision == 1
        sts = await rolled_out(env.client)
        assert sts["status"]["readyReplicas"] == 3


async def test_revision_names_are_those_kube_controller_manager_1_33_gives() -> None:
    async with cluster() as env:
        body = stateful_set("test", replicas=0, claims=False)
        body["spec"]["selector"] = {"matchLabels": {"app": "foo"}}
        body["spec"]["template"] = {
            "metadata": {"labels": {"app": "foo"}, "annotations": {"test": "value"}},
            "spec": {"containers": [{"name": "test", "image": "test"}]},
        }
        await env.client.create(body)

        async def named() -> list[str]:
            return [r["metadata"]["name"] for r in await revisions(env.client, "foo")]

        # The name kube-controller-manager 1.33 gives this template's first revision.
        assert await wait_until(named) == ["test-c77f6d978"]


async def test_turned_off_the_statefulset_controller_makes_no_pods(tmp_path: Path) -> None:
    from kubeforge._cluster.options import ClusterOptions

    options = ClusterOptions(controllers=("*", "-statefulset"))
    async with TestEnv(crd_paths=(), options=options) as env:
        client = env.client
        await client.create(stateful_set(replicas=1, claims=False))
        # The witness: the DaemonSet controller, still on, runs its pod meanwhile.
        await client.create(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "witness"},
                "spec": {
                    "selector": {"matchLabels": {"app": "witness"}},
                    "template": {
                        "metadata": {"labels": {"app": "witness"}},
                        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
                    },
                },
            }
        )

        async def witness_running() -> bool:
            return [p["status"]["phase"] for p in await pods(client, "app=witness")] == ["Running"]

        await wait_until(witness_running)
        assert await pods(client, "app=web") == []
        with pytest.raises(NotFound):
            await client.get(PVC, "data-web-0", namespace=NS)
