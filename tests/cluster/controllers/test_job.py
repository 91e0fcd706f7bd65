"""The Job controller against a real embedded server; tests play the kubelet."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from kubeforge import Client, ClusterConfig
from kubeforge._client.auth import StaticToken
from kubeforge._cluster.controllers import job
from kubeforge._runtime.manager import Manager
from kubeforge.apiserver import APIServer
from kubeforge.testing import Kubectl, eventually

NS = "default"
JOB = "batch/v1/Job"
POD = "v1/Pod"
FINALIZER = "batch.kubernetes.io/job-tracking"


@pytest.fixture
async def api(server: APIServer) -> AsyncIterator[Client]:
    """A client of a server running the Job controller (with a short failure backoff)."""
    cfg = ClusterConfig(
        server=server.url, ca_data=server.ca_pem, credentials=StaticToken(server.token)
    )
    manager = Manager(client=Client(cfg, field_manager="kube-controller-manager"))
    job.setup(manager, pod_failure_backoff=0.05)
    task = asyncio.create_task(manager.start())
    async with Client(cfg) as client:
        yield client
    manager.stop()
    await task


def a_job(name: str, restart: str = "Never", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": restart,
                    "containers": [{"name": "main", "image": "busybox"}],
                }
            },
            **spec,
        },
    }


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def pods_of(api: Client, name: str) -> list[dict[str, Any]]:
    return (await api.list(POD, namespace=NS, label_selector=f"job-name={name}")).items


def phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        p
        for p in pods
        if phase(p) in ("Pending", "Running") and not p["metadata"].get("deletionTimestamp")
    ]


async def finish(api: Client, pod: dict[str, Any], succeeded: bool) -> None:
    """The kubelet reports the pod's container exited (0 or 1)."""
    code = 0 if succeeded else 1
    status = {
        "phase": "Succeeded" if succeeded else "Failed",
        "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": stamp()}],
        "containerStatuses": [
            {
                "name": "main",
                "image": "busybox",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Completed" if succeeded else "Error",
                        "startedAt": stamp(),
                        "finishedAt": stamp(),
                    }
                },
            }
        ],
    }
    await api.patch_status(POD, pod["metadata"]["name"], {"status": status}, namespace=NS)


async def start(api: Client, pod: dict[str, Any], restarts: int = 0) -> None:
    """The kubelet runs the pod (its container restarted `restarts` times)."""
    status = {
        "phase": "Running",
        "podIP": "10.244.0.9",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp()}],
        "containerStatuses": [
            {
                "name": "main",
                "image": "busybox",
                "imageID": "",
                "ready": True,
                "restartCount": restarts,
                "state": {"running": {"startedAt": stamp()}},
            }
        ],
    }
    await api.patch_status(POD, pod["metadata"]["name"], {"status": status}, namespace=NS)


async def get_job(api: Client, name: str) -> dict[str, Any]:
    return await api.get(JOB, name, namespace=NS)


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond["type"] == kind:
            return dict(cond)
    return None


async def wait_for(check: Callable[[], Awaitable[bool]], timeout: float = 15.0) -> None:
    await eventually(check, timeout=timeout)


async def running_pods(api: Client, name: str, count: int) -> list[dict[str, Any]]:
    """Wait until exactly `count` pods of the job are running; returns them."""
    found: list[dict[str, Any]] = []

    async def check() -> bool:
        found[:] = running(await pods_of(api, name))
        return len(found) == count

    await wait_for(check)
    return found


async def finished(api: Client, name: str, kind: str) -> dict[str, Any]:
    result: dict[str, Any] = {}

    async def check() -> bool:
        result.update(await get_job(api, name))
        cond = condition(result, kind)
        return cond is not None and cond["status"] == "True"

    await wait_for(check)
    return result


async def test_job_runs_its_completions_one_at_a_time(api: Client, kubectl: Kubectl) -> None:
    created = await api.create(a_job("count", completions=2, parallelism=1))
    uid = created["metadata"]["uid"]
    (first,) = await running_pods(api, "count", 1)
    assert first["metadata"]["name"].startswith("count-")
    assert first["metadata"]["finalizers"] == [FINALIZER]
    labels = first["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == "count" and labels["job-name"] == "count"
    assert labels["controller-uid"] == uid and labels["batch.kubernetes.io/controller-uid"] == uid
    (owner,) = first["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Job", "count", uid)
    assert owner["controller"] is True and owner["blockOwnerDeletion"] is True

    async def active_reported() -> bool:
        status = (await get_job(api, "count")).get("status") or {}
        return status.get("active") == 1 and status.get("ready") == 0 and "startTime" in status

    await wait_for(active_reported)
    wait = asyncio.create_task(
        kubectl.run("wait", "--for=condition=complete", "job/count", "--timeout=60s", check=False)
    )
    await start(api, first)

    async def ready_reported() -> bool:
        return ((await get_job(api, "count")).get("status") or {}).get("ready") == 1

    await wait_for(ready_reported)
    await finish(api, first, succeeded=True)

    async def second_pod() -> bool:
        pods = running(await pods_of(api, "count"))
        return len(pods) == 1 and pods[0]["metadata"]["name"] != first["metadata"]["name"]

    await wait_for(second_pod)

    # The next pod is created before the status is written in the same sync: wait for both.
    async def first_counted() -> bool:
        return ((await get_job(api, "count")).get("status") or {}).get("succeeded") == 1

    await wait_for(first_counted)
    assert condition(await get_job(api, "count"), "Complete") is None
    (second,) = running(await pods_of(api, "count"))
    await finish(api, second, succeeded=True)
    done = await finished(api, "count", "Complete")
    status = done["status"]
    assert status["succeeded"] == 2
    assert "active" not in status and "failed" not in status
    assert status["ready"] == 0 and status["terminating"] == 0
    assert status["uncountedTerminatedPods"] == {}
    assert status["completionTime"] >= status["startTime"]
    met = condition(done, "SuccessCriteriaMet")
    complete = condition(done, "Complete")
    assert met is not None and complete is not None
    assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert met["reason"] == complete["reason"] == "CompletionsReached"
    assert complete["message"] == "Reached expected number of succeeded pods"
    assert status["completionTime"] == complete["lastTransitionTime"]
    for pod in await pods_of(api, "count"):
        assert not pod["metadata"].get("finalizers")  # counted, so released
    result = await wait
    assert result.code == 0, result.err
    assert "condition met" in result.out


async def test_parallelism_is_capped_by_remaining_completions(api: Client) -> None:
    await api.create(a_job("wide", completions=3, parallelism=5))
    pods = await running_pods(api, "wide", 3)
    for pod in pods:
        await finish(api, pod, succeeded=True)
    done = await finished(api, "wide", "Complete")
    assert done["status"]["succeeded"] == 3
    assert len(await pods_of(api, "wide")) == 3


async def test_work_queue_completes_when_one_succeeded_and_none_runs(api: Client) -> None:
    created = a_job("queue", parallelism=2)
    await api.create(created)
    stored = await get_job(api, "queue")
    assert stored["spec"]["parallelism"] == 2 and "completions" not in stored["spec"]
    first, second = await running_pods(api, "queue", 2)
    await finish(api, first, succeeded=True)

    async def counted() -> bool:
        return ((await get_job(api, "queue")).get("status") or {}).get("succeeded") == 1

    await wait_for(counted)
    # One success: the other pod keeps running, nothing new starts, not complete yet.
    assert [p["metadata"]["name"] for p in running(await pods_of(api, "queue"))] == [
        second["metadata"]["name"]
    ]
    assert condition(await get_job(api, "queue"), "Complete") is None
    await finish(api, second, succeeded=True)
    done = await finished(api, "queue", "Complete")
    assert done["status"]["succeeded"] == 2
    assert len(await pods_of(api, "queue")) == 2


async def test_failed_pods_are_replaced_until_the_backoff_limit(api: Client) -> None:
    await api.create(a_job("flaky", backoffLimit=1, parallelism=2, completions=3))
    first, other = await running_pods(api, "flaky", 2)
    await start(api, other)
    await finish(api, first, succeeded=False)

    async def replaced() -> bool:
        pods = running(await pods_of(api, "flaky"))
        names = {p["metadata"]["name"] for p in pods}
        status = (await get_job(api, "flaky")).get("status") or {}
        return (
            len(pods) == 2 and first["metadata"]["name"] not in names and status.get("failed") == 1
        )

    await wait_for(replaced)
    replacement = next(
        p
        for p in running(await pods_of(api, "flaky"))
        if p["metadata"]["name"] != other["metadata"]["name"]
    )
    await finish(api, replacement, succeeded=False)
    done = await finished(api, "flaky", "Failed")
    status = done["status"]
    assert status["failed"] == 3  # two failures, and the running pod deleted with the job
    target = condition(done, "FailureTarget")
    failed = condition(done, "Failed")
    assert target is not None and failed is not None
    assert target["reason"] == failed["reason"] == "BackoffLimitExceeded"
    assert failed["message"] == "Job has reached the specified backoff limit"
    assert [c["type"] for c in status["conditions"]] == ["FailureTarget", "Failed"]
    assert "completionTime" not in status
    assert status["terminating"] == 0 and "active" not in status
    assert await pods_of(api, "flaky") == [
        p for p in await pods_of(api, "flaky") if phase(p) == "Failed"
    ]


async def test_on_failure_counts_container_restarts(api: Client) -> None:
    await api.create(a_job("restarts", restart="OnFailure", backoffLimit=2))
    (pod,) = await running_pods(api, "restarts", 1)
    await start(api, pod, restarts=1)

    async def still_running() -> bool:
        status = (await get_job(api, "restarts")).get("status") or {}
        return status.get("ready") == 1

    await wait_for(still_running)
    assert condition(await get_job(api, "restarts"), "Failed") is None
    await start(api, pod, restarts=2)
    done = await finished(api, "restarts", "Failed")
    failed = condition(done, "Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"

    async def pod_gone() -> bool:
        return not await pods_of(api, "restarts")

    # Pods of a failed job are deleted; once counted, their finalizer goes too.
    await wait_for(pod_gone)


async def test_active_deadline_fails_the_job(api: Client) -> None:
    # The deadline is set once the pod runs: a deadline set at creation could pass before a
    # loaded machine has shown the pod running, and the test would wait for a deleted pod.
    await api.create(a_job("slow"))
    (pod,) = await running_pods(api, "slow", 1)
    await start(api, pod)
    await api.patch(JOB, "slow", {"spec": {"activeDeadlineSeconds": 1}}, namespace=NS)
    done = await finished(api, "slow", "Failed")
    failed = condition(done, "Failed")
    assert failed is not None and failed["reason"] == "DeadlineExceeded"
    assert failed["message"] == "Job was active longer than specified deadline"
    assert done["status"]["failed"] == 1


async def test_suspended_job_runs_nothing_until_resumed(api: Client) -> None:
    await api.create(a_job("later", suspend=True))

    async def suspended() -> bool:
        cond = condition(await get_job(api, "later"), "Suspended")
        return cond is not None and cond["status"] == "True" and cond["reason"] == "JobSuspended"

    await wait_for(suspended)
    assert await pods_of(api, "later") == []
    assert "startTime" not in ((await get_job(api, "later")).get("status") or {})
    await api.patch(JOB, "later", {"spec": {"suspend": False}}, namespace=NS)
    (pod,) = await running_pods(api, "later", 1)
    resumed = condition(await get_job(api, "later"), "Suspended")
    assert (
        resumed is not None and resumed["status"] == "False" and resumed["reason"] == "JobResumed"
    )
    await finish(api, pod, succeeded=True)
    await finished(api, "later", "Complete")


async def test_indexed_job_runs_each_index_once(api: Client) -> None:
    await api.create(a_job("idx", completionMode="Indexed", completions=3, parallelism=2))
    pods = await running_pods(api, "idx", 2)
    by_index = {
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]: p for p in pods
    }
    assert sorted(by_index) == ["0", "1"]
    for index, pod in by_index.items():
        assert pod["metadata"]["name"].startswith(f"idx-{index}-")
        assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == index
        assert pod["spec"]["hostname"] == f"idx-{index}"
        (env,) = pod["spec"]["containers"][0]["env"]
        assert env["name"] == "JOB_COMPLETION_INDEX"
        field = env["valueFrom"]["fieldRef"]["fieldPath"]
        assert field == "metadata.labels['batch.kubernetes.io/job-completion-index']"
    await finish(api, by_index["1"], succeeded=True)

    async def index_two_started() -> bool:
        indexes = {
            p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            for p in running(await pods_of(api, "idx"))
        }
        status = (await get_job(api, "idx")).get("status") or {}
        return indexes == {"0", "2"} and status.get("completedIndexes") == "1"

    await wait_for(index_two_started)
    for pod in running(await pods_of(api, "idx")):
        await finish(api, pod, succeeded=True)
    done = await finished(api, "idx", "Complete")
    assert done["status"]["completedIndexes"] == "0-2"
    assert done["status"]["succeeded"] == 3


def test_completed_indexes_round_trip() -> None:
    assert job.format_indexes({0, 1, 2, 4, 6, 7}) == "0-2,4,6-7"
    assert job.parse_indexes("0-2,4,6-7", 10) == {0, 1, 2, 4, 6, 7}
    assert job.parse_indexes("3-9,x", 5) == {3, 4}
    assert job.format_indexes(set()) == ""
