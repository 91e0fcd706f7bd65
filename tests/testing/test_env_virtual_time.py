"""TestEnv(virtual_time=True): the cluster, the managers and the test on one clock that stands
still until the test advances it.

The tests share one environment (a cluster each would cost more than the tests themselves):
each works in a namespace of its own, and measures time from the clock's reading when it
starts, since the tests before it have moved the clock on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

import kubeforge
from kubeforge import clock
from kubeforge._api.machinery.timestamps import format_micro_time, format_time, parse_time
from kubeforge._client.auth import StaticToken
from kubeforge.client import Unauthorized
from kubeforge.testing import FlakyReconciler, TestEnv, eventually
from tests.support import kubectl_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

CONFIGMAP = "v1/ConfigMap"
_names = itertools.count()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[TestEnv]:
    async with TestEnv(crd_paths=[], virtual_time=True) as started:
        yield started


@pytest_asyncio.fixture(loop_scope="module")
async def ns(env: TestEnv) -> str:
    name = f"virtual-{next(_names)}"
    await env.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def virtual(env: TestEnv) -> clock.VirtualClock:
    assert isinstance(env.clock, clock.VirtualClock)
    return env.clock


def configmap(name: str, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **metadata}}


async def test_the_process_runs_on_the_environments_clock_while_it_is_started(
    env: TestEnv,
) -> None:
    assert clock.get() is env.clock
    unstarted = TestEnv(crd_paths=[], virtual_time=True)
    assert isinstance(unstarted.clock, clock.VirtualClock)
    assert clock.get() is env.clock  # made, not started: nothing changes yet
    assert isinstance(TestEnv(crd_paths=[]).clock, clock.RealClock)


async def test_the_api_server_writes_the_virtual_time(
    env: TestEnv, ns: str, tmp_path: Path
) -> None:
    created = virtual(env).now()
    made = await env.client.create(
        configmap("dated", finalizers=["example.com/hold"]), namespace=ns
    )
    assert made["metadata"]["creationTimestamp"] == format_time(created)
    (entry,) = made["metadata"]["managedFields"]
    assert entry["time"] == format_time(created)

    await virtual(env).advance(minutes=42)
    # kubectl's AGE column is the server's, from the clock's time.
    env.write_kubeconfig(tmp_path / "kubeconfig")
    kubectl = kubectl_for(tmp_path / "kubeconfig", tmp_path / "kubectl")
    header, row = (await kubectl.run("get", "configmap", "dated", "-n", ns)).rows()
    assert dict(zip(header, row, strict=True))["AGE"] == "42m"

    updated = await env.client.patch(
        CONFIGMAP, "dated", {"data": {"a": "b"}}, namespace=ns, field_manager="later"
    )
    times = {e["manager"]: e["time"] for e in updated["metadata"]["managedFields"]}
    assert times == {
        "kubeforge-testenv": format_time(created),
        "later": format_time(virtual(env).now()),
    }

    await env.client.delete(CONFIGMAP, "dated", namespace=ns)
    held = await env.client.get(CONFIGMAP, "dated", namespace=ns)
    assert held["metadata"]["deletionTimestamp"] == format_time(virtual(env).now())
    await env.client.patch(CONFIGMAP, "dated", {"metadata": {"finalizers": None}}, namespace=ns)


class Requeuing(kubeforge.Reconciler):
    """Records when it runs, asks to come back in ten minutes twice, and says so in an
    Event."""

    def __init__(self, events: kubeforge.events.EventRecorder) -> None:
        self.events = events
        self.runs: list[datetime] = []

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        if request.name != "again":
            return None  # the namespace's kube-root-ca.crt
        self.runs.append(clock.now())
        found = await self.client.get(CONFIGMAP, request.name, namespace=request.namespace)
        self.events.record(found, "Normal", "Ran", f"run {len(self.runs)}")
        if len(self.runs) < 3:
            return kubeforge.Result(requeue_after=600)
        return None


class Done(kubeforge.Reconciler):
    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        return None


async def test_requeue_after_and_the_retry_backoff_follow_the_virtual_clock(
    env: TestEnv, ns: str
) -> None:
    requeuing: list[Requeuing] = []
    flaky: list[FlakyReconciler] = []

    def setup(manager: kubeforge.Manager) -> None:
        requeuing.append(Requeuing(manager.event_recorder("requeuing")))
        manager.controller().named("requeuing").for_(CONFIGMAP).complete(requeuing[0])
        # The first four passes fail: the rate limiter's backoff is 5 ms doubling.
        flaky.append(FlakyReconciler(Done(), failures=4))
        manager.controller().named("flaky").for_("v1/Secret").complete(flaky[0])

    async with env.run_manager(setup, namespace=ns):
        start = virtual(env).now()
        await env.client.create(configmap("again"), namespace=ns)
        await env.client.create(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}, namespace=ns
        )
        await eventually(lambda: requeuing[0].runs and len(flaky[0].calls) == 1)
        await virtual(env).advance(seconds=599)
        assert requeuing[0].runs == [start]
        await virtual(env).advance(seconds=1)
        assert requeuing[0].runs == [start, start + timedelta(minutes=10)]
        await virtual(env).advance(hours=1)
        assert requeuing[0].runs == [start + timedelta(minutes=m) for m in (0, 10, 20)]

        # Exactly the backoff, to rounding: no time passes while the retries run.
        assert flaky[0].gaps() == pytest.approx([0.005, 0.01, 0.02, 0.04], abs=1e-6)
        assert len(flaky[0].calls) == 5

        events = await env.client.list("events.k8s.io/v1/Event", namespace=ns)
        ran = {e["note"]: e["eventTime"] for e in events if e["regarding"]["name"] == "again"}
        assert ran == {
            f"run {n}": format_micro_time(start + timedelta(minutes=10 * (n - 1)))
            for n in (1, 2, 3)
        }


async def test_a_lease_left_by_a_manager_that_died_is_taken_over_after_its_term(
    env: TestEnv, ns: str
) -> None:
    election = {
        "namespace": ns,
        "leader_election": True,
        "leader_election_id": "virtual-lock",
        "leader_election_namespace": ns,
        "release_on_cancel": False,  # stopping one is then as though its process died
    }
    lease = "coordination.k8s.io/v1/Lease"
    assert env.config is not None
    # The standby is started by hand: run_manager returns once a manager's controllers run,
    # which for a candidate that does not lead is never.
    b = kubeforge.Manager(env.config, identity="b", **election)
    async with contextlib.AsyncExitStack() as first:
        a = await first.enter_async_context(env.run_manager(identity="a", **election))
        assert a.leading
        standing_by = asyncio.create_task(b.start())
        try:
            await virtual(env).advance(minutes=5)  # a renews; b keeps trying
            assert a.leading and not b.leading
            held = await env.client.get(lease, "virtual-lock", namespace=ns)
            renewed = parse_time(held["spec"]["renewTime"])
            assert held["spec"]["holderIdentity"] == "a"
            assert virtual(env).now() - renewed <= timedelta(seconds=2)

            await first.aclose()  # a stops renewing; the Lease still names it
            # b counts the term (15 s) from when it last saw the Lease change, which it saw
            # at most one retry (2 s, up to 2.2 times that with jitter) after a's last
            # renewal; once the term is over it takes the Lease at its next retry. So the
            # Lease is b's within 4.4 + 15 + 4.4 s of a stopping, and not before 10 s.
            await virtual(env).advance(seconds=10)
            assert not b.leading
            await virtual(env).advance(seconds=15)
            assert b.leading
            taken = await env.client.get(lease, "virtual-lock", namespace=ns)
            assert taken["spec"]["holderIdentity"] == "b"
            assert taken["spec"]["leaseTransitions"] == held["spec"]["leaseTransitions"] + 1
            acquired = parse_time(taken["spec"]["acquireTime"])
            assert renewed + timedelta(seconds=15) < acquired <= virtual(env).now()
        finally:
            b.stop()
            await standing_by


async def test_containers_run_and_jobs_time_out_on_the_virtual_clock(env: TestEnv, ns: str) -> None:
    start = virtual(env).now()
    script = "date +%s; sleep 600; date +%s"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "ten-minutes"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", script]}],
        },
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "too-long"},
        "spec": {
            "activeDeadlineSeconds": 3600,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "main", "image": "busybox", "command": ["sleep", "7200"]}
                    ],
                }
            },
        },
    }
    await env.client.create(pod, namespace=ns)
    await env.client.create(job, namespace=ns)

    async def phase() -> str:
        found = await env.client.get("v1/Pod", "ten-minutes", namespace=ns)
        return str((found.get("status") or {}).get("phase"))

    await virtual(env).advance(seconds=1)  # the simulated start takes a tenth of a second
    assert await phase() == "Running"
    await virtual(env).advance(minutes=9, seconds=58)
    assert await phase() == "Running"
    await virtual(env).advance(seconds=2)  # ten minutes after its start
    assert await phase() == "Succeeded"
    logs = await env.client.logs("ten-minutes", namespace=ns)
    started, ended = (int(line) for line in logs.split())
    assert ended - started == 600
    assert started == int(start.timestamp())

    async def job_failure() -> str | None:
        found = await env.client.get("batch/v1/Job", "too-long", namespace=ns)
        conditions = (found.get("status") or {}).get("conditions") or []
        return next((c["reason"] for c in conditions if c["type"] == "Failed"), None)

    assert await job_failure() is None
    await virtual(env).advance(minutes=50)  # an hour after the Job started
    assert await job_failure() == "DeadlineExceeded"


async def test_service_account_tokens_expire_on_the_virtual_clock(env: TestEnv, ns: str) -> None:
    await env.client.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}, namespace=ns
    )
    await eventually(lambda: env.client.get("v1/ServiceAccount", "robot", namespace=ns))
    review = await env.client.create_subresource(
        "v1/ServiceAccount",
        "robot",
        "token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        },
        namespace=ns,
    )
    expires = parse_time(review["status"]["expirationTimestamp"])
    assert expires == virtual(env).now() + timedelta(minutes=10)
    assert env.config is not None
    config = dataclasses.replace(env.config, credentials=StaticToken(review["status"]["token"]))
    async with kubeforge.Client(config) as robot:
        review_of = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        assert (await robot.create(review_of))["status"]["userInfo"]["username"] == (
            f"system:serviceaccount:{ns}:robot"
        )
        # Past its expiry and the minute of leeway kube-apiserver allows.
        await virtual(env).advance(minutes=11, seconds=1)
        with pytest.raises(Unauthorized):
            await robot.create(review_of)
