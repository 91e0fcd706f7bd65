"""The sharder on a development cluster (virtual time): new objects assigned on first sight,
owned objects with their owner, a dead replica's objects moved once its Lease's term is over,
its Lease deleted a minute later, and the resync putting stray objects right."""

from __future__ import annotations

import contextlib
from collections import Counter

import pytest

from kubeforge._runtime.sharding.labels import shard_label
from kubeforge._runtime.sharding.leases import ORPHAN_AFTER
from kubeforge.testing import TestEnv, eventually, metric_sum
from tests.support.sharding import (
    CM,
    LEASE,
    SECRET,
    Probe,
    assignments,
    create_configmaps,
    replica,
    ring_of,
    run_clock,
)

pytestmark = pytest.mark.asyncio(loop_scope="package")

LEASE_DURATION = 15.0  # the manager's default


async def test_new_objects_are_assigned_on_first_sight_without_time_passing(
    env: TestEnv, ns: str
) -> None:
    probe = Probe()
    async with contextlib.AsyncExitStack() as stack:
        a = await stack.enter_async_context(replica(env, probe, "a", ns, "new"))
        b = await stack.enter_async_context(replica(env, probe, "b", ns, "new"))
        start = env.clock.now()
        names = [f"obj-{i}" for i in range(40)]
        await create_configmaps(env.client, ns, names)

        async def all_reconciled() -> bool:
            return len(probe.by_replica(names)) == 2 and len(probe.last) >= 40

        await eventually(all_reconciled, timeout=30)
        assert env.clock.now() == start  # no resync, no timer: the first sight did it
        shards = {ring_of(a, "new").shard: "a", ring_of(b, "new").shard: "b"}
        placed = await assignments(env.client, ns, "new")
        assert {n: shards[s] for n, s in placed.items()} == {n: probe.last[n][0] for n in names}
        leader = a if ring_of(a, "new").leading else b
        assert metric_sum(leader, "kubeforge_sharding_assignments_total", ring="new") >= 40


async def test_objects_made_while_no_shard_runs_are_assigned_when_one_starts(
    env: TestEnv, ns: str
) -> None:
    probe = Probe()
    names = [f"obj-{i}" for i in range(10)]
    await create_configmaps(env.client, ns, names)
    # One labelled for a shard that does not exist: not available, so it is moved.
    await env.client.patch(
        CM, "obj-0", {"metadata": {"labels": {shard_label("late"): "gone"}}}, namespace=ns
    )
    async with replica(env, probe, "a", ns, "late") as a:
        await eventually(lambda: len(probe.last) == 10, timeout=30)
        assert set((await assignments(env.client, ns, "late")).values()) == {
            ring_of(a, "late").shard
        }
        assert metric_sum(a, "kubeforge_sharding_movements_total", shard="gone") == 1


async def test_owned_objects_go_where_their_owner_is(env: TestEnv, ns: str) -> None:
    probe = Probe()
    async with contextlib.AsyncExitStack() as stack:
        a = await stack.enter_async_context(replica(env, probe, "a", ns, "own", owns=True))
        b = await stack.enter_async_context(replica(env, probe, "b", ns, "own", owns=True))
        names = [f"obj-{i}" for i in range(20)]
        await create_configmaps(env.client, ns, names)
        await eventually(lambda: len(probe.owners) == 20, timeout=30)
        # The shard that reconciled an owner made its Secret labelled for itself.
        secrets = await assignments(env.client, ns, "own", kind=SECRET)
        configmaps = await assignments(env.client, ns, "own")
        assert secrets == configmaps and len(set(secrets.values())) == 2

        # A Secret someone else makes for an owner is assigned to the owner's shard; one
        # without a controller is nobody's.
        owner = await env.client.get(CM, "obj-3", namespace=ns)
        ref = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "obj-3",
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
        for name, refs in (("obj-extra", [ref]), ("obj-orphan", [])):
            await env.client.create(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": name, "namespace": ns, "ownerReferences": refs},
                }
            )

        async def extra_assigned() -> str:
            return (await assignments(env.client, ns, "own", kind=SECRET)).get("obj-extra", "")

        assert await eventually(extra_assigned) == configmaps["obj-3"]
        assert (await assignments(env.client, ns, "own", kind=SECRET))["obj-orphan"] == ""
        holder = a if configmaps["obj-3"] == ring_of(a, "own").shard else b
        assert holder.cache.get(SECRET, "obj-extra", namespace=ns)


async def test_a_killed_replicas_objects_move_within_one_lease_duration(
    env: TestEnv, ns: str
) -> None:
    probe = Probe()
    names = [f"obj-{i}" for i in range(30)]
    async with contextlib.AsyncExitStack() as stack:
        a = await stack.enter_async_context(replica(env, probe, "a", ns, "kill"))
        await eventually(lambda: ring_of(a, "kill").leading, timeout=10)  # a runs the sharder
        await stack.enter_async_context(replica(env, probe, "b", ns, "kill"))
        c = await stack.enter_async_context(replica(env, probe, "c", ns, "kill"))
        await create_configmaps(env.client, ns, names)
        await eventually(lambda: len(probe.by_replica(names)) == 3, timeout=30)
        on_c = [n for n in names if probe.last[n][0] == "c"]
        await run_clock(env, 1.3, step=0.1)  # somewhere between two renewals

        c.kill()  # as kill -9: nothing more from c, its Lease stays as it was
        killed = env.clock.now()
        lease = await env.client.get(LEASE, ring_of(c, "kill").shard, namespace=ns)
        assert lease["spec"]["holderIdentity"] == ring_of(c, "kill").shard
        # Before its term is over, nothing moves (c might be alive and reconciling).
        await run_clock(env, LEASE_DURATION - 2.5, step=0.5)
        placed = await assignments(env.client, ns, "kill")
        assert {n for n, s in placed.items() if s == ring_of(c, "kill").shard} == set(on_c)
        # Within one lease duration of the kill, c's objects are on a and b and reconciled.
        await run_clock(env, 2.5, step=0.5)
        assert (env.clock.now() - killed).total_seconds() == pytest.approx(LEASE_DURATION)
        placed = await assignments(env.client, ns, "kill")
        assert ring_of(c, "kill").shard not in placed.values()
        assert set(probe.by_replica(on_c)) <= {"a", "b"} and len(probe.by_replica(on_c)) > 0
        assert sum(probe.by_replica(on_c).values()) == len(on_c)
        taken = await env.client.get(LEASE, ring_of(c, "kill").shard, namespace=ns)
        assert taken["spec"]["holderIdentity"] == "shardlease-controller"
        moved = metric_sum(a, "kubeforge_sharding_movements_total", shard=ring_of(c, "kill").shard)
        assert moved == len(on_c)

        # A minute past its term, the dead shard's Lease is deleted.
        await run_clock(env, ORPHAN_AFTER + LEASE_DURATION, step=5)
        leases = await env.client.list(LEASE, namespace=ns)
        assert ring_of(c, "kill").shard not in {item["metadata"]["name"] for item in leases}
        assert probe.overlaps == []


async def test_when_the_sharders_replica_is_killed_another_takes_over_and_moves(
    env: TestEnv, ns: str
) -> None:
    probe = Probe()
    names = [f"obj-{i}" for i in range(20)]
    async with contextlib.AsyncExitStack() as stack:
        a = await stack.enter_async_context(replica(env, probe, "a", ns, "lead"))
        await eventually(lambda: ring_of(a, "lead").leading, timeout=10)
        b = await stack.enter_async_context(replica(env, probe, "b", ns, "lead"))
        await create_configmaps(env.client, ns, names)
        await eventually(lambda: len(probe.by_replica(names)) == 2, timeout=30)
        a.kill()
        # b takes the sharder Lease once its term is over (b counts it from when it saw it
        # change, and tries every 2 s with up to 120% jitter), then takes a's shard over.
        await run_clock(env, LEASE_DURATION + 2 * 2.2 + 0.5, step=0.5)
        assert ring_of(b, "lead").leading
        assert set((await assignments(env.client, ns, "lead")).values()) == {
            ring_of(b, "lead").shard
        }
        assert probe.by_replica(names) == Counter({"b": 20})
