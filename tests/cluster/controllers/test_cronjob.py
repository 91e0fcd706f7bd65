"""The CronJob controller against a real embedded server, on a clock the tests set.

The controller reads the time from kubeforge.clock. Most tests run the process on a virtual
clock, which the test advances (the controller may be down meanwhile, as a crashed
kube-controller-manager is); the older ones run it on the machine's clock moved to a second
and a half before a minute's end, so that a `* * * * *` schedule is due in moments, and poke
the CronJob (a label) so the controller looks at once. Most tests play the Job controller; the
last ones run the whole development cluster, with kubectl and the official Python client.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from kubernetes import client as k8s, config as k8s_config

from kubeforge import Client, ClusterConfig, clock
from kubeforge._client.auth import StaticToken
from kubeforge._client.errors import Invalid, NotFound
from kubeforge._cluster.controllers import cronjob
from kubeforge._cluster.devcluster import DevCluster
from kubeforge._cluster.options import ClusterOptions
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result
from kubeforge.apiserver import APIServer
from kubeforge.testing import eventually
from tests.support import kubectl_for

NS = "default"
CRONJOB = "batch/v1/CronJob"
JOB = "batch/v1/Job"
SCHEDULED = "batch.kubernetes.io/cronjob-scheduled-timestamp"


class ShiftedClock(clock.RealClock):
    """The machine's clock with its wall time moved by `offset` seconds; timers and
    sleeps keep real durations."""

    def __init__(self, offset: float = 0.0) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return super().now() + timedelta(seconds=self.offset)

    def time(self) -> float:
        return super().time() + self.offset

    def before_next_minute(self, lead: float = 1.5, minutes: int = 0) -> datetime:
        """Move to `lead` seconds before the end of the minute `minutes` after the current
        one; returns the minute boundary that is then next."""
        real = clock.RealClock().now()
        boundary = real.replace(second=0, microsecond=0) + timedelta(minutes=1 + minutes)
        self.offset = (boundary - timedelta(seconds=lead) - real).total_seconds()
        return boundary


@pytest.fixture
def shifted() -> Iterator[ShiftedClock]:
    with clock.use(ShiftedClock()) as moved:
        assert isinstance(moved, ShiftedClock)
        yield moved


@pytest.fixture
async def api(server: APIServer, shifted: ShiftedClock) -> AsyncIterator[Client]:
    """A client of a server running the CronJob controller (no Job controller)."""
    cfg = ClusterConfig(
        server=server.url, ca_data=server.ca_pem, credentials=StaticToken(server.token)
    )
    manager = Manager(client=Client(cfg, field_manager="kube-controller-manager"))
    cronjob.setup(manager)
    task = asyncio.create_task(manager.start())
    async with Client(cfg) as client:
        yield client
    manager.stop()
    await task


VIRTUAL_START = datetime(2030, 1, 1, 0, 0, 30, tzinfo=UTC)


@dataclass
class Virtual:
    """A server and a client on a virtual clock; the CronJob controller runs inside
    `controllers()` (with the reconcilers given, each watching Jobs), down outside it."""

    server: APIServer
    api: Client
    clock: clock.VirtualClock

    @contextlib.asynccontextmanager
    async def controllers(self, *jobs: Reconciler) -> AsyncIterator[Manager]:
        config = ClusterConfig(
            server=self.server.url,
            ca_data=self.server.ca_pem,
            credentials=StaticToken(self.server.token),
        )
        manager = Manager(client=Client(config, field_manager="kube-controller-manager"))
        cronjob.setup(manager)
        for index, reconciler in enumerate(jobs):
            manager.controller().named(f"jobs-{index}").for_(JOB).complete(reconciler)
        task = asyncio.create_task(manager.start())
        try:
            await eventually(lambda: manager.running.is_set() or task.done())
            yield manager
        finally:
            manager.stop()
            await task


@pytest.fixture
async def virtual(server: APIServer) -> AsyncIterator[Virtual]:
    """`server` with the process on a virtual clock, half a minute into 2030."""
    with clock.use(clock.VirtualClock(VIRTUAL_START)) as on:
        assert isinstance(on, clock.VirtualClock)
        cfg = ClusterConfig(
            server=server.url, ca_data=server.ca_pem, credentials=StaticToken(server.token)
        )
        async with Client(cfg) as client:
            yield Virtual(server, client, on)


def a_cronjob(name: str = "tick", schedule: str = "* * * * *", **spec: Any) -> dict[str, Any]:
    job_spec = spec.pop("job_spec", {})
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "metadata": {"labels": {"team": "ops"}},
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "main", "image": "busybox"}],
                        }
                    },
                    **job_spec,
                },
            },
            **spec,
        },
    }


def minutes(boundary: datetime) -> int:
    return int(boundary.timestamp()) // 60


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def jobs_of(api: Client, name: str = "tick") -> dict[str, dict[str, Any]]:
    jobs = await api.list(JOB, namespace=NS)
    return {
        job["metadata"]["name"]: job
        for job in jobs
        if any(ref.get("name") == name for ref in job["metadata"].get("ownerReferences") or ())
    }


async def status_of(api: Client, name: str = "tick") -> dict[str, Any]:
    result: dict[str, Any] = (await api.get(CRONJOB, name, namespace=NS)).get("status") or {}
    return result


async def reasons(api: Client, name: str = "tick") -> list[str]:
    events = await api.list("v1/Event", namespace=NS)
    return [e.get("reason", "") for e in events if e["involvedObject"].get("name") == name]


async def finish(api: Client, job: dict[str, Any], outcome: str = "Complete") -> str:
    """The Job controller's part: the job finished; returns its completion time."""
    done = stamp(clock.now())
    status: dict[str, Any] = {
        "startTime": done,
        "conditions": [{"type": outcome, "status": "True", "lastTransitionTime": done}],
    }
    if outcome == "Complete":
        status["completionTime"] = done
        status["conditions"].insert(
            0, {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": done}
        )
        status["succeeded"] = 1
    else:
        status["conditions"].insert(
            0, {"type": "FailureTarget", "status": "True", "lastTransitionTime": done}
        )
        status["failed"] = 1
    await api.patch_status(JOB, job["metadata"]["name"], {"status": status}, namespace=NS)
    return done


async def poke(api: Client, name: str = "tick") -> None:
    """Make the controller look now (after the test moved its clock)."""
    patch = {"metadata": {"labels": {"poked": stamp(clock.now()).replace(":", "-")}}}
    await api.patch(CRONJOB, name, patch, namespace=NS)


# -- starting jobs on schedule -----------------------------------------------------------------


async def test_a_job_starts_at_the_scheduled_minute_and_its_end_is_recorded(
    api: Client, shifted: ShiftedClock
) -> None:
    boundary = shifted.before_next_minute(lead=2.5)
    await api.create(a_cronjob())
    name = f"tick-{minutes(boundary)}"
    # Nothing before the minute is up.
    assert await jobs_of(api) == {}

    async def started() -> dict[str, Any] | None:
        return (await jobs_of(api)).get(name)

    job = await eventually(started, timeout=10)
    assert clock.now() >= boundary
    meta = job["metadata"]
    assert meta["annotations"][SCHEDULED] == stamp(boundary)
    assert meta["labels"]["team"] == "ops"
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "tick", True)
    status = await status_of(api)
    assert status["lastScheduleTime"] == stamp(boundary)
    (active,) = status["active"]
    assert (active["kind"], active["name"], active["uid"]) == ("Job", name, meta["uid"])
    assert "SuccessfulCreate" in await reasons(api)

    completed = await finish(api, job)

    async def recorded() -> bool:
        status = await status_of(api)
        return "active" not in status and status.get("lastSuccessfulTime") == completed

    await eventually(recorded, timeout=10)
    assert "SawCompletedJob" in await reasons(api)


async def test_forbid_skips_while_a_job_runs_and_replace_replaces_it(
    api: Client, shifted: ShiftedClock
) -> None:
    first = shifted.before_next_minute()
    # Suspended Jobs never finish on their own: the first start stays active.
    await api.create(a_cronjob(concurrencyPolicy="Forbid", job_spec={"suspend": True}))
    running = f"tick-{minutes(first)}"
    await eventually(lambda: _has(api, running), timeout=10)

    second = shifted.before_next_minute(lead=-0.5, minutes=1)
    await poke(api)
    await eventually(lambda: _has_reason(api, "JobAlreadyActive"), timeout=10)
    assert set(await jobs_of(api)) == {running}

    # Replace: the running Job goes, the start of the second minute comes.
    await api.patch(CRONJOB, "tick", {"spec": {"concurrencyPolicy": "Replace"}}, namespace=NS)
    replacement = f"tick-{minutes(second)}"

    async def replaced() -> bool:
        status = await status_of(api)
        names = [ref["name"] for ref in status.get("active") or ()]
        return names == [replacement] and set(await jobs_of(api)) == {replacement}

    await eventually(replaced, timeout=10)
    assert (await status_of(api))["lastScheduleTime"] == stamp(second)
    assert "SuccessfulDelete" in await reasons(api)


async def test_only_the_latest_missed_start_is_made(virtual: Virtual) -> None:
    # The controller is down for three hours (and ten seconds into a minute): 180 starts
    # were missed; the last one is made, with a warning.
    await virtual.api.create(a_cronjob())
    await virtual.clock.advance(hours=3, seconds=-20)
    latest = virtual.clock.now().replace(second=0)
    async with virtual.controllers():
        await virtual.clock.settle()
        assert set(await jobs_of(virtual.api)) == {f"tick-{minutes(latest)}"}
        assert "TooManyMissedTimes" in await reasons(virtual.api)


async def test_a_start_past_its_deadline_is_not_made(virtual: Virtual) -> None:
    # Down for an hour, back 40 s into a minute: that minute's start is 40 s late.
    await virtual.api.create(a_cronjob(startingDeadlineSeconds=30))
    await virtual.api.create(a_cronjob("late-ok", startingDeadlineSeconds=60))
    await virtual.clock.advance(hours=1, seconds=10)
    moved = virtual.clock.now()
    assert moved.second == 40
    async with virtual.controllers():
        await virtual.clock.settle()
        assert set(await jobs_of(virtual.api, "late-ok")) == {f"late-ok-{minutes(moved)}"}
        assert await jobs_of(virtual.api) == {}
        assert "TooManyMissedTimes" not in await reasons(virtual.api)


async def test_suspended_cronjobs_start_nothing(virtual: Virtual) -> None:
    async with virtual.controllers():
        await virtual.api.create(a_cronjob(suspend=True))
        await virtual.api.create(a_cronjob("witness"))
        # The minute has just begun (the controller looks a tenth of a second after it).
        await virtual.clock.advance(seconds=31)
        boundary = virtual.clock.now().replace(second=0)
        assert set(await jobs_of(virtual.api, "witness")) == {f"witness-{minutes(boundary)}"}
        assert await jobs_of(virtual.api) == {}
        await virtual.api.patch(CRONJOB, "tick", {"spec": {"suspend": False}}, namespace=NS)
        await virtual.clock.settle()
        assert set(await jobs_of(virtual.api)) == {f"tick-{minutes(boundary)}"}


async def test_history_limits_delete_the_oldest_finished_jobs(virtual: Virtual) -> None:
    api = virtual.api
    async with virtual.controllers():
        created = await api.create(
            a_cronjob(successfulJobsHistoryLimit=1, failedJobsHistoryLimit=0, suspend=True)
        )
        owner = {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "name": "tick",
            "uid": created["metadata"]["uid"],
            "controller": True,
        }
        names = ["tick-1", "tick-2", "tick-3"]
        for name in names:
            job = a_cronjob()["spec"]["jobTemplate"]
            job = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": NS, "ownerReferences": [owner]},
                "spec": {**job["spec"], "suspend": True},
            }
            made = await api.create(job)
            await finish(api, made, "Failed" if name == "tick-3" else "Complete")
        await virtual.clock.advance(seconds=30)
        boundary = virtual.clock.now()
        await api.patch(CRONJOB, "tick", {"spec": {"suspend": False}}, namespace=NS)
        await virtual.clock.settle()
        # The newest successful Job stays; the failed one goes (limit 0); then the due start.
        assert set(await jobs_of(api)) == {"tick-2", f"tick-{minutes(boundary)}"}


async def test_a_time_zone_places_the_schedule(api: Client, shifted: ShiftedClock) -> None:
    boundary = shifted.before_next_minute()
    local = boundary.astimezone(ZoneInfo("Asia/Kolkata"))
    schedule = f"{local.minute} {local.hour} * * *"
    await api.create(a_cronjob(schedule=schedule, timeZone="Asia/Kolkata"))
    # The same fields in UTC name another time (5:30 apart): that one must not start.
    await api.create(a_cronjob("utc", schedule=schedule))
    job = await eventually(lambda: _job(api, f"tick-{minutes(boundary)}"), timeout=10)
    assert job["metadata"]["annotations"][SCHEDULED] == local.isoformat()
    assert await jobs_of(api, "utc") == {}


async def test_schedules_and_zones_are_validated(api: Client) -> None:
    with pytest.raises(Invalid) as zone:
        await api.create(a_cronjob(timeZone="Mars/Olympus"))
    assert 'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus' in str(
        zone.value
    )
    with pytest.raises(Invalid) as prefix:
        await api.create(a_cronjob(schedule="TZ=UTC * * * * *"))
    assert "cannot use TZ or CRON_TZ in schedule, use timeZone field instead" in str(prefix.value)
    with pytest.raises(Invalid) as bad:
        await api.create(a_cronjob(schedule="61 * * * *"))
    assert "end of range (61) above maximum (59): 61" in str(bad.value)


async def _has(api: Client, job: str, cronjob_name: str = "tick") -> bool:
    return job in await jobs_of(api, cronjob_name)


async def _job(api: Client, name: str) -> dict[str, Any]:
    try:
        found: dict[str, Any] = await api.get(JOB, name, namespace=NS)
    except NotFound:
        raise AssertionError(f"no job {name}") from None
    return found


async def _has_reason(api: Client, reason: str) -> bool:
    return reason in await reasons(api)


# -- a day on a virtual clock --------------------------------------------------------------------


class JobsFinish(Reconciler):
    """The Job controller's part, at once: a Job scheduled for an even minute completes, one
    for an odd minute fails. `finished` names every Job it saw."""

    def __init__(self) -> None:
        self.finished: set[str] = set()

    async def reconcile(self, request: Request) -> Result | None:
        try:
            job = await self.client.get(JOB, request.name, namespace=request.namespace)
        except NotFound:
            return None
        if (job.get("status") or {}).get("conditions"):
            return None
        self.finished.add(request.name)
        scheduled = datetime.fromisoformat(job["metadata"]["annotations"][SCHEDULED])
        await finish(self.client, job, "Complete" if scheduled.minute % 2 == 0 else "Failed")
        return None


async def test_a_day_of_minute_schedules_keeps_exactly_the_history_limits(
    virtual: Virtual,
) -> None:
    api = virtual.api
    await api.create(a_cronjob(successfulJobsHistoryLimit=3, failedJobsHistoryLimit=2))
    finishing = JobsFinish()
    async with virtual.controllers(finishing):
        await virtual.clock.advance(days=1)
    # 1440 starts, from 00:01 to midnight; the newest of each outcome are kept.
    end = VIRTUAL_START.replace(second=0) + timedelta(days=1)
    kept = await jobs_of(api)
    succeeded = sorted(n for n, j in kept.items() if (j.get("status") or {}).get("succeeded"))
    failed = sorted(n for n, j in kept.items() if (j.get("status") or {}).get("failed"))
    last = minutes(end)
    assert succeeded == [f"tick-{m}" for m in (last - 4, last - 2, last)]
    assert failed == [f"tick-{m}" for m in (last - 3, last - 1)]
    assert len(kept) == 5
    status = await status_of(api)
    assert status["lastScheduleTime"] == stamp(end)
    assert status["lastSuccessfulTime"] == stamp(end)
    assert "active" not in status
    events = await api.list("v1/Event", namespace=NS)
    assert len(finishing.finished) == 24 * 60
    # A Job a minute is more than the recorder passes on as Events of their own: after nine
    # distinct messages in ten minutes the tenth and later are combined into one series, and the
    # spam filter (a burst of 25, then one per five minutes) drops the rest, as client-go's
    # EventCorrelator does.
    created = [e for e in events if e.get("reason") == "SuccessfulCreate"]
    combined = [e for e in created if e["message"].startswith("(combined from similar events)")]
    assert len(created) == 10 and len(combined) == 1
    assert 1 < combined[0]["series"]["count"] < 24 * 60


# -- the whole cluster ---------------------------------------------------------------------------


@pytest.fixture
async def cluster(shifted: ShiftedClock) -> AsyncIterator[DevCluster]:
    async with DevCluster(ClusterOptions()) as c:
        yield c


@pytest.mark.parametrize("version", ["1.33", "1.29"])
async def test_kubectl_and_the_python_client_see_a_cronjob_run(
    cluster: DevCluster, shifted: ShiftedClock, tmp_path: Path, version: str
) -> None:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    kc = kubectl_for(kubeconfig, tmp_path / "cache", version)
    boundary = shifted.before_next_minute()
    await kc.run(
        "create", "cronjob", "hello", "--image=busybox", "--schedule=* * * * *",
        "--", "sh", "-c", "echo hello",
    )  # fmt: skip
    job = f"hello-{minutes(boundary)}"

    async def started() -> bool:
        return (await kc.run("get", "job", job, check=False)).code == 0

    await eventually(started, timeout=10)
    await kc.run("wait", f"job/{job}", "--for=condition=Complete", "--timeout=30s")
    logs = await kc.run("logs", f"job/{job}")
    assert logs.out == "hello\n"
    api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    batch = k8s.BatchV1Api(api)

    def succeeded() -> k8s.V1CronJobStatus:
        status: k8s.V1CronJobStatus = batch.read_namespaced_cron_job("hello", NS).status
        assert status.last_successful_time is not None
        return status

    try:
        status = await eventually(lambda: asyncio.to_thread(succeeded), timeout=10)
    finally:
        api.close()
    assert status.last_schedule_time == boundary
    assert not status.active
    listed = (await kc.run("get", "cronjobs")).out
    assert "hello" in listed and "* * * * *" in listed
