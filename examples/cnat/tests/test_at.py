"""The cnat scenario on a development cluster: kubectl 1.33 applies Ats and shows what the
controller does with them. The Ats are written as v1alpha1 (the command as one line), as the
scenario's users write them; the controller works on v1, and the manager's conversion webhook
converts between the two."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import kubeforge
import pytest
from kubeforge.models import Pod
from kubeforge.testing import FlakyReconciler, Kubectl, TestEnv, eventually, metric_value

from api.v1 import At, AtSpec
from controllers.at import FINALIZER, AtReconciler
from main import setup

# The version these tests write (kubectl's plain `at` is the preferred version, v1).
V1ALPHA1 = "ats.v1alpha1.cnat.kubeforge.dev"


def at_manifest(
    name: str, command: str, *, in_seconds: float = 1.0, schedule: str | None = None
) -> str:
    when = schedule or (datetime.now(UTC) + timedelta(seconds=in_seconds)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    return f"""
apiVersion: cnat.kubeforge.dev/v1alpha1
kind: At
metadata:
  name: {name}
spec:
  schedule: "{when}"
  command: {command}
"""


def v1_manifest(name: str, command: list[str], *, in_seconds: float = 1.0) -> str:
    when = (datetime.now(UTC) + timedelta(seconds=in_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"""
apiVersion: cnat.kubeforge.dev/v1
kind: At
metadata:
  name: {name}
spec:
  schedule: "{when}"
  command: {json.dumps(command)}
"""


async def phase_shown(kubectl: Kubectl, name: str) -> str:
    """The PHASE column of `kubectl get at NAME`."""
    header, row = (await kubectl.run("get", "at", name)).rows()
    return dict(zip(header, row, strict=False)).get("PHASE", "")


async def phase_is(kubectl: Kubectl, name: str, phase: str) -> bool:
    return await phase_shown(kubectl, name) == phase


async def phase_in(kubectl: Kubectl, name: str, *phases: str) -> bool:
    return await phase_shown(kubectl, name) in phases


async def test_an_at_runs_its_command_once_its_time_has_come(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(at_manifest("hello", "echo hello from cnat", in_seconds=5))

    # PENDING until the schedule, shown in the printer column (the first reconcile may wait
    # for the manager's caches on a busy machine).
    assert await eventually(lambda: phase_shown(kubectl, "hello"), timeout=30) == "PENDING"
    # RUNNING lasts as long as the pod's `echo`, which can be shorter than one look with
    # kubectl on a busy machine: seen or already past.
    await eventually(lambda: phase_in(kubectl, "hello", "RUNNING", "DONE"), timeout=15)
    await eventually(lambda: phase_is(kubectl, "hello", "DONE"), timeout=15)

    wide = (await kubectl.run("get", V1ALPHA1, "hello", "-o", "wide")).rows()
    assert wide[0] == ["NAME", "SCHEDULE", "COMMAND", "PHASE", "AGE"]
    assert wide[1][2] == "echo hello from cnat" and wide[1][3] == "DONE"

    pod = await kubectl.json("get", "pod", "hello")
    assert pod["status"]["phase"] == "Succeeded"
    assert pod["spec"]["restartPolicy"] == "OnFailure"
    (container,) = pod["spec"]["containers"]
    assert container["image"] == "busybox"
    assert container["command"] == ["echo", "hello", "from", "cnat"]
    at = await kubectl.json("get", "at", "hello")
    (owner,) = pod["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "At",
        "hello",
        at["metadata"]["uid"],
        True,
    )

    logs = await kubectl.run("logs", "hello")
    assert logs.out == "hello from cnat\n"


async def test_the_controller_waits_for_the_schedule(
    manager: kubeforge.Manager, kubectl: Kubectl, testenv: TestEnv
) -> None:
    await kubectl.apply(at_manifest("later", "echo later", in_seconds=3600))
    await eventually(lambda: phase_is(kubectl, "later", "PENDING"))
    # An hour ahead: the reconciler asked to come back then, and made no pod meanwhile.
    pods = await testenv.client.list(Pod, namespace=testenv.namespace)
    assert [p.metadata.name for p in pods] == []


@pytest.mark.kubeforge_virtual_time
# On virtual time a failed reconcile is retried when the clock has moved past its backoff,
# and this test waits for the first reconcile without moving it.
@pytest.mark.kubeforge_explore(skip=["error"], reason="retries wait for the virtual clock")
async def test_an_at_an_hour_ahead_runs_once_the_clock_has_moved_an_hour(
    manager: kubeforge.Manager, testenv: TestEnv
) -> None:
    """On virtual time the hour passes when the test says, and at once: the controller asked
    to come back at the schedule, and nothing runs before."""
    client, namespace = testenv.client, testenv.namespace
    schedule = testenv.clock.now().replace(microsecond=0) + timedelta(hours=1)
    await client.create(
        At(
            metadata=kubeforge.ObjectMeta(name="hourly"),
            spec=AtSpec(schedule=schedule, command=["echo", "an hour later"]),
        )
    )

    async def phase() -> str | None:
        at = await client.get(At, "hourly", namespace=namespace)
        return at.status.phase if at.status is not None else None

    assert await eventually(phase) == "PENDING"
    await testenv.clock.advance(minutes=59, seconds=59)
    assert await phase() == "PENDING"
    assert await client.list(Pod, namespace=namespace) == []

    # The hour's last second, and the one a simulated pod takes to start and run.
    await testenv.clock.advance(seconds=2)

    async def done() -> bool:
        return await phase() == "DONE"

    await eventually(done)
    pod = await client.get(Pod, "hourly", namespace=namespace)
    assert pod.status is not None and pod.status.phase == "Succeeded"
    assert await client.logs("hourly", namespace=namespace) == "an hour later\n"


async def test_quoted_arguments_stay_together(manager: kubeforge.Manager, kubectl: Kubectl) -> None:
    await kubectl.apply(at_manifest("quoted", """'sh -c "echo one; echo two"'"""))
    await eventually(lambda: phase_is(kubectl, "quoted", "DONE"), timeout=15)
    pod = await kubectl.json("get", "pod", "quoted")
    assert pod["spec"]["containers"][0]["command"] == ["sh", "-c", "echo one; echo two"]
    assert (await kubectl.run("logs", "quoted")).out == "one\ntwo\n"


async def test_deleting_an_at_deletes_its_pod(manager: kubeforge.Manager, kubectl: Kubectl) -> None:
    await kubectl.apply(at_manifest("gone", "echo bye"))
    await eventually(lambda: phase_is(kubectl, "gone", "DONE"), timeout=15)
    at = await kubectl.json("get", "at", "gone")
    assert at["metadata"]["finalizers"] == [FINALIZER]
    await kubectl.run("delete", "at", "gone")
    await kubectl.run("wait", "--for=delete", "pod/gone", "--timeout=30s")


async def test_deleting_a_running_at_cancels_its_command(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(at_manifest("long", "sleep 3600"))
    await eventually(lambda: phase_is(kubectl, "long", "RUNNING"), timeout=15)
    await kubectl.run("wait", "--for=jsonpath={.status.phase}=Running", "pod/long", "--timeout=30s")
    await kubectl.run("delete", "at", "long", "--wait=true", "--timeout=30s")
    await kubectl.run("wait", "--for=delete", "pod/long", "--timeout=30s")

    async def cancelled() -> bool:
        events = await kubectl.json("get", "events", "--field-selector", "involvedObject.name=long")
        return "Cancelled" in [e["reason"] for e in events["items"]]

    await eventually(cancelled)


async def test_invalid_schedules_are_rejected_with_the_field_path(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    for schedule in ("tomorrow at nine", "2030-01-01T09:00:00+02:00", "2030-01-01 09:00:00Z"):
        result = await kubectl.run(
            "apply", "-f", "-", stdin=at_manifest("bad", "echo", schedule=schedule), check=False
        )
        assert result.code != 0, schedule
        assert 'The At "bad" is invalid' in result.err
        assert f'spec.schedule: Invalid value: "{schedule}"' in result.err

    empty = await kubectl.run("apply", "-f", "-", stdin=at_manifest("bad", "''"), check=False)
    assert 'spec.command: Invalid value: ""' in empty.err

    # The schedule is immutable once set (a transition rule).
    await kubectl.apply(at_manifest("fixed", "echo", in_seconds=3600))
    moved = await kubectl.run(
        "patch",
        V1ALPHA1,
        "fixed",
        "--type=merge",
        "-p",
        '{"spec":{"schedule":"2031-01-01T00:00:00Z"}}',
        check=False,
    )
    assert moved.code != 0
    assert "spec.schedule: Invalid value" in moved.err
    assert "the schedule cannot be changed once set" in moved.err


async def test_a_restarted_controller_picks_up_where_it_left(
    testenv: TestEnv, kubectl: Kubectl, kubeforge_manager_config: kubeforge.ClusterConfig | None
) -> None:
    # Written before any manager runs: as v1, which needs no conversion webhook.
    await kubectl.apply(v1_manifest("resume", ["sleep", "1"]))
    async with testenv.run_manager(setup, config=kubeforge_manager_config):
        await eventually(lambda: phase_is(kubectl, "resume", "RUNNING"), timeout=15)
        await eventually(lambda: _pod_exists(testenv, "resume"))
    # The controller is gone while the pod runs; a new one takes over and finishes the job.
    async with testenv.run_manager(setup, config=kubeforge_manager_config):
        await eventually(lambda: phase_is(kubectl, "resume", "DONE"), timeout=15)
    pods = await testenv.client.list(Pod, namespace=testenv.namespace)
    assert [p.metadata.name for p in pods] == ["resume"]  # one run, not two


async def _pod_exists(testenv: TestEnv, name: str) -> bool:
    try:
        await testenv.client.get(Pod, name, namespace=testenv.namespace)
    except kubeforge.NotFound:
        return False
    return True


async def test_a_failing_reconciler_is_retried_with_backoff(
    testenv: TestEnv, kubectl: Kubectl, kubeforge_manager_config: kubeforge.ClusterConfig | None
) -> None:
    flaky: FlakyReconciler | None = None

    def setup_flaky(manager: kubeforge.Manager) -> None:
        nonlocal flaky
        flaky = FlakyReconciler(AtReconciler(manager.event_recorder("at-controller")), failures=5)
        manager.controller().for_(At).owns(Pod).complete(flaky)
        manager.webhook_for(At).complete()

    # Only the test's namespace: the backoff it measures is one object's, which objects that
    # other tests left behind on a shared cluster must not interleave with.
    async with testenv.run_manager(
        setup_flaky, config=kubeforge_manager_config, namespaces=[testenv.namespace]
    ) as manager:
        await kubectl.apply(at_manifest("flaky", "echo survived"))
        await eventually(lambda: phase_is(kubectl, "flaky", "DONE"), timeout=20)
        assert flaky is not None
        gaps = flaky.gaps()
        # Per-item exponential backoff from 5 ms: retries come no sooner than 5, 10, 20, 40 ms.
        assert gaps[3] >= 0.04 and sum(gaps[:4]) >= 0.075, gaps
        errors = metric_value(manager, "controller_runtime_reconcile_errors_total", controller="at")
        assert errors == 5
        assert manager.running.is_set()  # the manager kept going
    assert (await kubectl.run("logs", "flaky")).out == "survived\n"
