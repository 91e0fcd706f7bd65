"""The Deployment, ReplicaSet and ServiceAccount controllers against a real embedded server.

No kubelet runs here: tests play it, moving pods to Running and Ready through pods/status.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from kubeforge import Client, ClusterConfig
from kubeforge._client.auth import StaticToken
from kubeforge._client.errors import NotFound
from kubeforge._cluster.controllers import deployment, replicaset, serviceaccount
from kubeforge._runtime.manager import Manager
from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl, eventually

NS = "default"
DEPLOYMENT = "apps/v1/Deployment"
REPLICA_SET = "apps/v1/ReplicaSet"
POD = "v1/Pod"
_ips = itertools.count(2)


def config(server: APIServer) -> ClusterConfig:
    return ClusterConfig(
        server=server.url, ca_data=server.ca_pem, credentials=StaticToken(server.token)
    )


@pytest.fixture
async def api(server: APIServer) -> AsyncIterator[Client]:
    """A client of a server running the workload controllers."""
    manager = Manager(client=Client(config(server), field_manager="kube-controller-manager"))
    for module in (serviceaccount, replicaset, deployment):
        module.setup(manager)
    task = asyncio.create_task(manager.start())
    async with Client(config(server)) as client:
        yield client
    manager.stop()
    await task


# -- helpers -----------------------------------------------------------------------------------


def web(name: str = "web", replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1"}]},
            },
            **spec,
        },
    }


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def start_pod(api: Client, pod: dict[str, Any], ready: bool = True) -> None:
    """Do the kubelet's part: the pod runs (and is ready, unless told otherwise)."""
    image = pod["spec"]["containers"][0]["image"]
    status = {
        "phase": "Running",
        "podIP": f"10.244.{next(_ips) // 250}.{next(_ips) % 250 + 2}",
        "startTime": stamp(),
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": stamp()}
        ],
        "containerStatuses": [
            {
                "name": "main",
                "image": image,
                "imageID": "",
                "ready": ready,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": stamp()}},
            }
        ],
    }
    await api.patch_status(POD, pod["metadata"]["name"], {"status": status}, namespace=NS)


def is_ready(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


async def pods_of(api: Client, app: str) -> list[dict[str, Any]]:
    return (await api.list(POD, namespace=NS, label_selector=f"app={app}")).items


async def replica_sets(api: Client, app: str) -> list[dict[str, Any]]:
    return (await api.list(REPLICA_SET, namespace=NS, label_selector=f"app={app}")).items


async def get_deployment(api: Client, name: str) -> dict[str, Any]:
    return await api.get(DEPLOYMENT, name, namespace=NS)


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond["type"] == kind:
            return dict(cond)
    return None


def rolled_out(d: dict[str, Any]) -> bool:
    """What `kubectl rollout status` waits for."""
    status = d.get("status") or {}
    want = d["spec"]["replicas"]
    return (
        status.get("observedGeneration", 0) >= d["metadata"]["generation"]
        and status.get("updatedReplicas", 0) == want
        and status.get("replicas", 0) == want
        and status.get("availableReplicas", 0) == want
    )


async def wait_for(check: Callable[[], Awaitable[bool]], timeout: float = 15.0) -> None:
    await eventually(check, timeout=timeout)


async def start_pending_pods(api: Client, app: str) -> None:
    for pod in await pods_of(api, app):
        if (pod.get("status") or {}).get("phase") == "Pending":
            await start_pod(api, pod)


async def roll_out(api: Client, name: str) -> dict[str, Any]:
    """Play the kubelet until the deployment has rolled out; returns it."""
    result: dict[str, Any] = {}

    async def done() -> bool:
        await start_pending_pods(api, name)
        result.update(await get_deployment(api, name))
        return rolled_out(result)

    await wait_for(done)
    return result


# -- deployments -------------------------------------------------------------------------------


async def test_deployment_creates_a_hashed_replicaset_and_its_pods(api: Client) -> None:
    created = await api.create(web(replicas=3))

    async def three_pods() -> bool:
        return len(await pods_of(api, "web")) == 3

    await wait_for(three_pods)
    (rs,) = await replica_sets(api, "web")
    hash_value = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{hash_value}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": hash_value}
    assert rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == hash_value
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "3"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "4"
    (owner,) = rs["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": created["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    for pod in await pods_of(api, "web"):
        assert pod["metadata"]["name"].startswith(f"web-{hash_value}-")
        assert pod["metadata"]["labels"]["pod-template-hash"] == hash_value
        (ref,) = pod["metadata"]["ownerReferences"]
        assert ref["kind"] == "ReplicaSet" and ref["name"] == rs["metadata"]["name"]
        assert ref["controller"] is True and ref["blockOwnerDeletion"] is True

    async def unavailable_reported() -> bool:
        d = await get_deployment(api, "web")
        available = condition(d, "Available")
        return (
            d["status"].get("replicas") == 3
            and d["status"].get("unavailableReplicas") == 3
            and available is not None
            and available["status"] == "False"
            and available["reason"] == "MinimumReplicasUnavailable"
        )

    await wait_for(unavailable_reported)
    d = await roll_out(api, "web")
    assert d["status"]["readyReplicas"] == 3
    assert "unavailableReplicas" not in d["status"]
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    available = condition(d, "Available")
    progressing = condition(d, "Progressing")
    assert available is not None and progressing is not None
    assert (available["status"], available["reason"]) == ("True", "MinimumReplicasAvailable")
    assert available["message"] == "Deployment has minimum availability."
    assert (progressing["status"], progressing["reason"]) == ("True", "NewReplicaSetAvailable")
    assert progressing["message"] == f'ReplicaSet "web-{hash_value}" has successfully progressed.'
    for cond in (available, progressing):
        assert cond["lastUpdateTime"] and cond["lastTransitionTime"]


async def test_scaling_up_and_down_keeps_the_ready_pods(api: Client) -> None:
    await api.create(web(replicas=3))
    await roll_out(api, "web")
    await api.scale(DEPLOYMENT, "web", 5, namespace=NS)

    async def five_pods() -> bool:
        return len(await pods_of(api, "web")) == 5

    await wait_for(five_pods)
    ready = {p["metadata"]["name"] for p in await pods_of(api, "web") if is_ready(p)}
    assert len(ready) == 3  # the two new pods are still pending
    await api.scale(DEPLOYMENT, "web", 2, namespace=NS)

    async def two_pods() -> bool:
        return len(await pods_of(api, "web")) == 2

    await wait_for(two_pods)
    left = await pods_of(api, "web")
    # Pending pods go first, then ready ones.
    assert all(is_ready(p) for p in left)
    assert {p["metadata"]["name"] for p in left} <= ready
    d = await roll_out(api, "web")
    assert d["status"]["replicas"] == 2
    (rs,) = await replica_sets(api, "web")
    assert rs["spec"]["replicas"] == 2
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "2"


async def test_rolling_update_respects_max_surge_and_max_unavailable(
    api: Client, kubectl: Kubectl
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}}
    await api.create(web(replicas=4, strategy=strategy))
    await roll_out(api, "web")
    (first,) = await replica_sets(api, "web")
    status = asyncio.create_task(
        kubectl.run("rollout", "status", "deployment/web", "--timeout=60s", check=False)
    )
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}}
    await api.patch(DEPLOYMENT, "web", patch, namespace=NS, patch_type="strategic")
    observations = 0

    async def step() -> bool:
        """One observation of the rollout (checking the invariants), then one kubelet step:
        the oldest pending pod becomes ready."""
        nonlocal observations
        pods = [p for p in await pods_of(api, "web") if not p["metadata"].get("deletionTimestamp")]
        observations += 1
        # maxSurge 1: never more than 5 pods; maxUnavailable 25% of 4 = 1: at least 3 ready.
        assert len(pods) <= 5, [p["metadata"]["name"] for p in pods]
        assert sum(1 for p in pods if is_ready(p)) >= 3
        d = await get_deployment(api, "web")
        if (
            rolled_out(d)
            and d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        ):
            return True
        pending = sorted(
            (p for p in pods if not is_ready(p)), key=lambda p: p["metadata"]["creationTimestamp"]
        )
        if pending:
            await start_pod(api, pending[0])
        return False

    await wait_for(step, timeout=30)
    assert observations > 4
    result = await status
    assert result.code == 0, result.err
    assert 'deployment "web" successfully rolled out' in result.out
    rss = {rs["metadata"]["name"]: rs for rs in await replica_sets(api, "web")}
    assert len(rss) == 2
    assert rss[first["metadata"]["name"]]["spec"]["replicas"] == 0
    (new,) = [rs for name, rs in rss.items() if name != first["metadata"]["name"]]
    assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert new["spec"]["replicas"] == 4
    for pod in await pods_of(api, "web"):
        assert pod["spec"]["containers"][0]["image"] == "nginx:2"


async def test_kubectl_rollout_undo_and_history(api: Client, kubectl: Kubectl) -> None:
    await api.create(web(replicas=1))
    await roll_out(api, "web")
    (original,) = await replica_sets(api, "web")
    await kubectl.run("set", "image", "deployment/web", "main=nginx:2")

    async def revision(number: str) -> bool:
        await start_pending_pods(api, "web")
        d = await get_deployment(api, "web")
        current = d["metadata"].get("annotations", {}).get("deployment.kubernetes.io/revision")
        return rolled_out(d) and current == number

    await wait_for(lambda: revision("2"))
    await kubectl.run("rollout", "undo", "deployment/web")
    await wait_for(lambda: revision("3"))
    back = await api.get(REPLICA_SET, original["metadata"]["name"], namespace=NS)
    annotations = back["metadata"]["annotations"]
    assert annotations["deployment.kubernetes.io/revision"] == "3"
    assert annotations["deployment.kubernetes.io/revision-history"] == "1"
    assert back["spec"]["replicas"] == 1
    history = await kubectl.run("rollout", "history", "deployment/web")
    revisions = [line.split()[0] for line in history.out.splitlines()[2:] if line.strip()]
    assert revisions == ["2", "3"]


async def test_recreate_removes_old_pods_before_creating_new_ones(api: Client) -> None:
    await api.create(web(replicas=2, strategy={"type": "Recreate"}))
    await roll_out(api, "web")
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}}
    await api.patch(DEPLOYMENT, "web", patch, namespace=NS, patch_type="strategic")

    async def step() -> bool:
        pods = await pods_of(api, "web")
        images = {p["spec"]["containers"][0]["image"] for p in pods}
        assert len(images) <= 1, "old and new pods ran at the same time"
        await start_pending_pods(api, "web")
        d = await get_deployment(api, "web")
        return rolled_out(d) and images == {"nginx:2"} and len(pods) == 2

    await wait_for(step)


async def test_revision_history_limit_deletes_old_replicasets(api: Client) -> None:
    await api.create(web(replicas=1, revisionHistoryLimit=1))
    await roll_out(api, "web")
    for version in (2, 3, 4):
        patch = {
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "main", "image": f"nginx:{version}"}]}
                }
            }
        }
        await api.patch(DEPLOYMENT, "web", patch, namespace=NS, patch_type="strategic")

        async def rolled(version: int = version) -> bool:
            await start_pending_pods(api, "web")
            d = await get_deployment(api, "web")
            revision = d["metadata"].get("annotations", {}).get("deployment.kubernetes.io/revision")
            return rolled_out(d) and revision == str(version)

        await wait_for(rolled)

    async def trimmed() -> bool:
        return len(await replica_sets(api, "web")) == 2

    await wait_for(trimmed)
    revisions = sorted(
        int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"])
        for rs in await replica_sets(api, "web")
    )
    assert revisions == [3, 4]


async def test_scaling_mid_rollout_is_proportional(api: Client) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    await api.create(web(replicas=10, strategy=strategy))
    await roll_out(api, "web")
    (old,) = await replica_sets(api, "web")
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}}
    await api.patch(DEPLOYMENT, "web", patch, namespace=NS, patch_type="strategic")

    # New pods never become ready: the rollout stops at 8 old + 5 new (10 + 3 surge).
    async def stuck() -> bool:
        sizes = {
            rs["metadata"]["name"]: rs["spec"]["replicas"] for rs in await replica_sets(api, "web")
        }
        new = [size for name, size in sizes.items() if name != old["metadata"]["name"]]
        return sizes[old["metadata"]["name"]] == 8 and new == [5]

    await wait_for(stuck)
    await api.scale(DEPLOYMENT, "web", 20, namespace=NS)

    # 10 more replicas (23 allowed - 13) spread by size: 8 * 23/13 -> 14, 5 * 23/13 -> 9.
    async def spread() -> bool:
        sizes = {
            rs["metadata"]["name"]: rs["spec"]["replicas"] for rs in await replica_sets(api, "web")
        }
        new = [size for name, size in sizes.items() if name != old["metadata"]["name"]]
        return sizes[old["metadata"]["name"]] == 14 and new == [9]

    await wait_for(spread)


async def test_paused_deployment_does_not_roll_out_until_resumed(api: Client) -> None:
    await api.create(web(replicas=1))
    await roll_out(api, "web")
    await api.patch(DEPLOYMENT, "web", {"spec": {"paused": True}}, namespace=NS)

    async def paused() -> bool:
        progressing = condition(await get_deployment(api, "web"), "Progressing")
        return progressing is not None and progressing["reason"] == "DeploymentPaused"

    await wait_for(paused)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}}
    await api.patch(DEPLOYMENT, "web", patch, namespace=NS, patch_type="strategic")

    async def observed() -> bool:
        d = await get_deployment(api, "web")
        return d["status"].get("observedGeneration") == d["metadata"]["generation"]

    await wait_for(observed)
    assert len(await replica_sets(api, "web")) == 1
    await api.patch(DEPLOYMENT, "web", {"spec": {"paused": False}}, namespace=NS)

    async def resumed() -> bool:
        await start_pending_pods(api, "web")
        d = await get_deployment(api, "web")
        images = {p["spec"]["containers"][0]["image"] for p in await pods_of(api, "web")}
        return rolled_out(d) and images == {"nginx:2"}

    await wait_for(resumed)
    assert len(await replica_sets(api, "web")) == 2


async def test_progress_deadline_exceeded(api: Client, kubectl: Kubectl) -> None:
    await api.create(web(replicas=1, progressDeadlineSeconds=1))

    async def timed_out() -> bool:
        progressing = condition(await get_deployment(api, "web"), "Progressing")
        return progressing is not None and progressing["reason"] == "ProgressDeadlineExceeded"

    await wait_for(timed_out)
    progressing = condition(await get_deployment(api, "web"), "Progressing")
    assert progressing is not None and progressing["status"] == "False"
    assert progressing["message"].endswith("has timed out progressing.")
    result = await kubectl.run("rollout", "status", "deployment/web", "--timeout=20s", check=False)
    assert result.code != 0
    assert "exceeded its progress deadline" in result.err


async def test_kubectl_create_deployment_rollout_status_and_wait(
    api: Client, kubectl: Kubectl
) -> None:
    await kubectl.run("create", "deployment", "hello", "--image=nginx", "--replicas=3")

    async def three_pods() -> bool:
        return len(await pods_of(api, "hello")) == 3

    await wait_for(three_pods)
    status = asyncio.create_task(
        kubectl.run("rollout", "status", "deployment/hello", "--timeout=60s", check=False)
    )
    wait = asyncio.create_task(
        kubectl.run(
            "wait", "--for=condition=Available", "deployment/hello", "--timeout=60s", check=False
        )
    )
    for pod in await pods_of(api, "hello"):
        await start_pod(api, pod)
    for task in (status, wait):
        result = await task
        assert result.code == 0, result.err
    assert 'deployment "hello" successfully rolled out' in (await status).out
    assert "condition met" in (await wait).out
    got = await kubectl.run("get", "deployment", "hello", "--no-headers")
    assert got.out.split()[1:4] == ["3/3", "3", "3"]


# -- replicasets -------------------------------------------------------------------------------


def plain_replicaset(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]},
            },
        },
    }


async def test_replicaset_adopts_orphans_and_releases_pods_that_stop_matching(api: Client) -> None:
    orphan = await api.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "orphan", "namespace": NS, "labels": {"app": "rs"}},
            "spec": {"containers": [{"name": "main", "image": "nginx"}]},
        }
    )
    rs = await api.create(plain_replicaset("rs", 2))

    async def adopted() -> bool:
        pods = await pods_of(api, "rs")
        pod = await api.get(POD, "orphan", namespace=NS)
        refs = pod["metadata"].get("ownerReferences") or []
        return len(pods) == 2 and [r["uid"] for r in refs] == [rs["metadata"]["uid"]]

    await wait_for(adopted)
    assert (await api.get(POD, "orphan", namespace=NS))["metadata"]["uid"] == orphan["metadata"][
        "uid"
    ]
    await api.patch(POD, "orphan", {"metadata": {"labels": {"app": "elsewhere"}}}, namespace=NS)

    async def released() -> bool:
        pod = await api.get(POD, "orphan", namespace=NS)
        return not pod["metadata"].get("ownerReferences") and len(await pods_of(api, "rs")) == 2

    await wait_for(released)


async def test_replicaset_status_counts_ready_and_available_pods(api: Client) -> None:
    rs = plain_replicaset("slow", 2)
    rs["spec"]["minReadySeconds"] = 1
    await api.create(rs)

    async def two_pods() -> bool:
        return len(await pods_of(api, "slow")) == 2

    await wait_for(two_pods)
    for pod in await pods_of(api, "slow"):
        await start_pod(api, pod)

    async def ready_not_available() -> bool:
        status = (await api.get(REPLICA_SET, "slow", namespace=NS))["status"]
        return status.get("readyReplicas") == 2

    await wait_for(ready_not_available)
    status = (await api.get(REPLICA_SET, "slow", namespace=NS))["status"]
    assert status["replicas"] == 2 and status["fullyLabeledReplicas"] == 2
    assert status["observedGeneration"] == 1

    async def available() -> bool:
        status = (await api.get(REPLICA_SET, "slow", namespace=NS))["status"]
        return status.get("availableReplicas") == 2

    await wait_for(available)


async def test_finished_and_deleting_pods_do_not_count(api: Client) -> None:
    await api.create(plain_replicaset("batch", 1))

    async def one_pod() -> bool:
        return len(await pods_of(api, "batch")) == 1

    await wait_for(one_pod)
    (pod,) = await pods_of(api, "batch")
    await api.patch_status(
        POD, pod["metadata"]["name"], {"status": {"phase": "Succeeded"}}, namespace=NS
    )

    async def replaced() -> bool:
        pods = await pods_of(api, "batch")
        active = [p for p in pods if (p.get("status") or {}).get("phase") != "Succeeded"]
        return len(pods) == 2 and len(active) == 1

    await wait_for(replaced)
    status = (await api.get(REPLICA_SET, "batch", namespace=NS))["status"]
    assert status["replicas"] == 1


def test_failed_pod_creation_sets_replica_failure() -> None:
    rs = plain_replicaset("broken", 2)
    rs["metadata"]["generation"] = 3
    status = replicaset.calculate_status(rs, [], RuntimeError("quota exceeded"), datetime.now(UTC))
    assert status["replicas"] == 0 and status["observedGeneration"] == 3
    (failure,) = status["conditions"]
    assert failure["type"] == "ReplicaFailure" and failure["status"] == "True"
    assert failure["reason"] == "FailedCreate" and failure["message"] == "quota exceeded"
    rs["status"] = status
    assert "conditions" not in replicaset.calculate_status(rs, [], None, datetime.now(UTC))


# -- service accounts --------------------------------------------------------------------------


async def test_every_namespace_gets_a_default_service_account(api: Client) -> None:
    await api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})

    async def present() -> bool:
        try:
            await api.get("v1/ServiceAccount", "default", namespace="team")
        except NotFound:
            return False
        return True

    await wait_for(present)
    first = await api.get("v1/ServiceAccount", "default", namespace="team")
    await api.delete("v1/ServiceAccount", "default", namespace="team")

    async def recreated() -> bool:
        try:
            again = await api.get("v1/ServiceAccount", "default", namespace="team")
        except NotFound:
            return False
        return bool(again["metadata"]["uid"] != first["metadata"]["uid"])

    await wait_for(recreated)
    for namespace in ("default", "kube-system"):
        await api.get("v1/ServiceAccount", "default", namespace=namespace)


async def test_no_service_account_is_made_in_a_terminating_namespace(api: Client) -> None:
    await api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}})

    async def present(namespace: str) -> bool:
        try:
            await api.get("v1/ServiceAccount", "default", namespace=namespace)
        except NotFound:
            return False
        return True

    await wait_for(lambda: present("doomed"))
    # No namespace controller runs here: the namespace stays Terminating.
    await api.delete("v1/Namespace", "doomed")
    ns = await api.get("v1/Namespace", "doomed")
    assert ns["status"]["phase"] == "Terminating"
    await api.delete("v1/ServiceAccount", "default", namespace="doomed")
    # The controller has one worker: once a namespace created afterwards has its account,
    # the deletion above has been handled too.
    await api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "later"}})
    await wait_for(lambda: present("later"))
    assert not await present("doomed")


# -- pure rules --------------------------------------------------------------------------------


def test_surge_and_unavailability_round_like_upstream() -> None:
    assert deployment.resolve_fenceposts("25%", "25%", 10) == (3, 2)
    assert deployment.resolve_fenceposts("25%", "25%", 3) == (1, 0)
    assert deployment.resolve_fenceposts(0, 0, 5) == (0, 1)
    assert deployment.resolve_fenceposts("0%", "0%", 5) == (0, 1)
    assert deployment.resolve_fenceposts(2, "50%", 5) == (2, 2)


def test_template_hash_is_stable_and_follows_the_template() -> None:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "a"}]}}
    same = {"spec": {"containers": [{"name": "a"}]}, "metadata": {"labels": {"app": "x"}}}
    value = deployment.template_hash(template)
    assert value == deployment.template_hash(same)
    assert value != deployment.template_hash(template, 1)
    other = {"metadata": {"labels": {"app": "y"}}, "spec": {"containers": [{"name": "a"}]}}
    assert value != deployment.template_hash(other)
    assert set(value) <= set("bcdfghjklmnpqrstvwxz2456789")
