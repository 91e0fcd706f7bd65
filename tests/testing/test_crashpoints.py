"""Crash points: a manager killed right after one of its writes, as kill -9 of its pod would
stop it; what it leaves half done, and a new manager on the same cluster that finishes it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeforge._client.transport import ClientClosed
from kubeforge.testing import InterceptedCall, ManagerCrashed, TestEnv, eventually
from tests.support.widgetoperator import (
    CONFIGMAP,
    NAMESPACE,
    WIDGET,
    WidgetReconciler,
    config_name,
    ready,
    setup_with,
    widget,
    widget_env,
)

LEASE = "coordination.k8s.io/v1/Lease"


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[TestEnv]:
    async with widget_env(tmp_path / "crds") as started:
        yield started


async def test_a_crash_between_two_dependent_writes_then_the_restart_converges(
    env: TestEnv,
) -> None:
    record = env.faults.record_writes(user=env.manager_user)
    await env.client.create(widget("w", 2))
    with pytest.raises(ManagerCrashed) as crashed:
        async with env.run_manager(setup_with(WidgetReconciler()), crash_after_writes=1) as dead:
            # Never true before the crash: the crash interrupts the wait.
            await eventually(lambda: ready(env.client, "w", 2), timeout=30)
    # It stopped right after its first write, the ConfigMap: the status was never written.
    write = crashed.value.write
    assert (crashed.value.writes, write.verb, write.kind) == (1, "create", "v1/ConfigMap")
    assert dead.killed
    config = await env.client.get(CONFIGMAP, config_name("w"))
    assert "status" not in await env.client.get(WIDGET, "w")
    assert [(w.verb, w.resource, w.name) for w in record] == [("create", "configmaps", "w-config")]
    assert record.writes[0].resource_version == config["metadata"]["resourceVersion"]
    # Nothing more leaves the dead manager; none of its watches is open.
    with pytest.raises(ClientClosed):
        await dead.api_reader.get(WIDGET, "w")
    open_watches = env.faults.server.watches.active.values()
    assert [call for call in open_watches if call.user.name == env.manager_user] == []

    # The restarted pod finds the ConfigMap there and finishes the job.
    restarted = WidgetReconciler()
    async with env.run_manager(setup_with(restarted)):
        await eventually(lambda: ready(env.client, "w", 2), timeout=15)
    assert restarted.errors == []
    assert [c["metadata"]["name"] for c in await env.client.list(CONFIGMAP)] == ["w-config"]
    assert ("update", "widgets", "status") in [(w.verb, w.resource, w.subresource) for w in record]
    assert sum(w.verb == "create" for w in record) == 1


async def test_a_function_chooses_the_write_to_crash_after(env: TestEnv) -> None:
    def status_write(call: InterceptedCall) -> bool:
        return call.verb == "update_status"

    await env.client.create(widget("w", 3))
    with pytest.raises(ManagerCrashed) as crashed:
        async with env.run_manager(setup_with(WidgetReconciler()), crash_after_writes=status_write):
            await eventually(lambda: False, timeout=30)
    assert crashed.value.writes == 2  # the ConfigMap, then the status
    assert (crashed.value.write.verb, crashed.value.write.name) == ("update_status", "w")
    # The status write happened: the caller never heard of it, the cluster did.
    assert await ready(env.client, "w", 3)


async def test_a_crash_the_block_causes_itself_raises_there(env: TestEnv) -> None:
    with pytest.raises(ManagerCrashed):
        async with env.run_manager(setup_with(WidgetReconciler()), crash_after_writes=1) as mgr:
            # The block writes through the controllers' client itself.
            await mgr.client.create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mine"}}
            )
    await env.client.get(CONFIGMAP, "mine", namespace=NAMESPACE)


async def test_a_manager_whose_block_ends_first_is_stopped_gracefully(env: TestEnv) -> None:
    async with env.run_manager(setup_with(WidgetReconciler()), crash_after_writes=100) as mgr:
        await env.client.create(widget("w", 1))
        await eventually(lambda: ready(env.client, "w", 1), timeout=15)
    assert not mgr.killed


async def test_a_crashed_leader_keeps_its_lease_and_the_next_waits_for_it(env: TestEnv) -> None:
    election: dict[str, Any] = {
        "leader_election": True,
        "leader_election_id": "widgets-lock",
        "leader_election_namespace": NAMESPACE,
        "lease_duration": 1.0,
        "renew_deadline": 0.8,
        "retry_period": 0.2,
    }
    await env.client.create(widget("w", 1))
    with pytest.raises(ManagerCrashed):
        async with env.run_manager(
            setup_with(WidgetReconciler()), crash_after_writes=1, **election
        ) as crashed:
            await eventually(lambda: False, timeout=30)
    lease = await env.client.get(LEASE, "widgets-lock")
    assert lease["spec"]["holderIdentity"] == crashed.identity  # not handed back

    async with env.run_manager(setup_with(WidgetReconciler()), **election) as successor:
        await eventually(lambda: ready(env.client, "w", 1), timeout=15)
        lease = await env.client.get(LEASE, "widgets-lock")
        assert lease["spec"]["holderIdentity"] == successor.identity
        assert lease["spec"]["leaseTransitions"] >= 1
    # A graceful stop hands it back.
    lease = await env.client.get(LEASE, "widgets-lock")
    assert not lease["spec"].get("holderIdentity")


async def test_crash_after_writes_counts_from_one(env: TestEnv) -> None:
    with pytest.raises(ValueError, match="from 1"):
        async with env.run_manager(setup_with(WidgetReconciler()), crash_after_writes=0):
            pass
