"""A sharded controller across replicas (managers in this process) on one development cluster,
on virtual time: spreading over the replicas that join, handing objects over without two
replicas ever reconciling one object at once, restarts that lose nothing, and a replica that
loses its shard Lease stopping.

The tests share one cluster (conftest.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable

import pytest

from kubeforge._runtime.leaderelection import LeadershipLost
from kubeforge._runtime.manager import Manager
from kubeforge.testing import TestEnv, eventually, metric_sum
from tests.support.sharding import (
    CM,
    LEASE,
    Probe,
    assignments,
    create_configmaps,
    draining,
    quiesce,
    replica,
    ring_of,
    run_clock,
    sharded_setup,
)

pytestmark = pytest.mark.asyncio(loop_scope="package")


def even_within(counts: Counter[str], total: int, shards: int, tolerance: float) -> bool:
    even = total / shards
    return len(counts) == shards and all(abs(n - even) <= tolerance * even for n in counts.values())


async def test_one_replica_then_four_spread_within_15_percent_and_never_overlap(
    env: TestEnv, ns: str
) -> None:
    probe = Probe()
    names = [f"obj-{i}" for i in range(1000)]
    async with contextlib.AsyncExitStack() as stack:
        first = await stack.enter_async_context(replica(env, probe, "a", ns, "spread"))
        await create_configmaps(env.client, ns, names)
        # Every new object is assigned and reconciled without the clock moving.
        await eventually(lambda: probe.by_replica(names) == Counter({"a": 1000}), timeout=60)
        assert set((await assignments(env.client, ns, "spread")).values()) == {
            ring_of(first, "spread").shard
        }

        others = await asyncio.gather(
            *(stack.enter_async_context(replica(env, probe, r, ns, "spread")) for r in "bcd")
        )
        managers = [first, *others]
        shards = {ring_of(m, "spread").shard: m.identity for m in managers}

        async def spread() -> Counter[str]:
            placed = await assignments(env.client, ns, "spread")
            assert not await draining(env.client, ns, "spread")
            counts = Counter(shards.get(s, s) for s in placed.values())
            assert len(counts) == 4 and set(counts) <= set(shards.values()), counts
            return counts

        placed = await eventually(spread, timeout=60)
        assert even_within(placed, 1000, 4, 0.15), placed
        # Each replica reconciled what its shard holds, and holds only that in its cache.
        await eventually(lambda: probe.by_replica(names) == placed, timeout=30)
        for manager in managers:
            held = [o["metadata"]["name"] for o in manager.cache.list(CM, namespace=ns)]
            assert len(held) == placed[manager.identity]
        assert probe.overlaps == []
        moved = 1000 - placed["a"]
        leader = next(m for m in managers if ring_of(m, "spread").leading)
        assert metric_sum(leader, "kubeforge_sharding_drains_total", ring="spread") == moved
        acknowledged = metric_sum(first, "kubeforge_sharding_drains_acknowledged_total")
        assert acknowledged == moved
        for manager in managers:
            objects = metric_sum(manager, "kubeforge_sharding_shard_objects", ring="spread")
            assert objects == placed[manager.identity]


async def test_objects_move_between_reconciles_in_flight_without_overlap(
    env: TestEnv, ns: str
) -> None:
    # Every reconcile takes 200 ms and each object comes back 300 ms later, so reconciles are
    # in flight whenever an object is drained, handed back or taken from a dead shard.
    probe = Probe(work=0.2, requeue_after=0.3)
    names = [f"obj-{i}" for i in range(12)]
    short = {"lease_duration": 3, "renew_deadline": 2, "retry_period": 0.5}

    async def up(name: str) -> Manager:
        return await stack.enter_async_context(replica(env, probe, name, ns, "busy", **short))

    async with contextlib.AsyncExitStack() as stack:
        a = await up("a")
        await create_configmaps(env.client, ns, names)
        await run_clock(env, 0.5)
        b = await up("b")
        await run_clock(env, 0.5)
        c = await up("c")
        await run_clock(env, 0.5)
        placed = Counter((await assignments(env.client, ns, "busy")).values())
        assert len(placed) == 3 and sum(placed.values()) == 12, placed
        assert all(probe.runs[r] for r in "abc")

        b.stop()  # gracefully: its reconciles finish, its Lease is handed back
        await run_clock(env, 0.5)
        placed = Counter((await assignments(env.client, ns, "busy")).values())
        assert ring_of(b, "busy").shard not in placed and sum(placed.values()) == 12

        c.kill()  # as kill -9: its Lease stays until its term is over
        await run_clock(env, 3.5)
        final = await assignments(env.client, ns, "busy")
        assert set(final.values()) == {ring_of(a, "busy").shard}
        runs = probe.runs["a"]
        await run_clock(env, 1)
        assert probe.runs["a"] >= runs + 12  # a reconciles them all now
        await quiesce(env, probe)
    assert probe.overlaps == []


async def test_without_sharding_the_probe_sees_two_replicas_at_once(env: TestEnv, ns: str) -> None:
    # The probe can fail: two replicas running the same controller without sharding or
    # leader election reconcile the same objects at the same time.
    probe = Probe(work=0.05)

    def plain(replica: str) -> Callable[[Manager], None]:
        def setup(manager: Manager) -> None:
            manager.controller().for_(CM).complete(probe.reconciler(replica))

        return setup

    async with contextlib.AsyncExitStack() as stack:
        for name in "ab":
            await stack.enter_async_context(env.run_manager(plain(name), namespace=ns))
        await create_configmaps(env.client, ns, [f"obj-{i}" for i in range(10)])
        await run_clock(env, 0.2)
    assert len(probe.overlaps) >= 10


async def test_a_rolling_restart_loses_no_reconcile(env: TestEnv, ns: str) -> None:
    probe = Probe()
    names = [f"obj-{i}" for i in range(60)]
    await create_configmaps(env.client, ns, names)
    version = 0

    async def change_all() -> None:
        nonlocal version
        version += 1
        for name in names:
            await env.client.patch(CM, name, {"data": {"value": str(version)}}, namespace=ns)

    old: dict[str, contextlib.AsyncExitStack] = {}
    for name in "abc":
        old[name] = contextlib.AsyncExitStack()
        await old[name].enter_async_context(replica(env, probe, name, ns, "roll"))
    await eventually(lambda: len(probe.by_replica(names)) == 3, timeout=30)
    async with contextlib.AsyncExitStack() as new:
        for name in "abc":
            # A new replica up, the objects changed, an old replica down (gracefully), the
            # objects changed again: each change is reconciled wherever the object is.
            await new.enter_async_context(replica(env, probe, f"{name}2", ns, "roll"))
            await change_all()
            await run_clock(env, 0.5)
            await old[name].aclose()
            await change_all()
            await run_clock(env, 0.5)

        def all_seen() -> bool:
            return all(probe.last.get(n, ("", ""))[1] == str(version) for n in names)

        await eventually(all_seen, timeout=30)
        assert set(probe.by_replica(names)) == {"a2", "b2", "c2"}
        assert not await draining(env.client, ns, "roll")
    assert probe.overlaps == []


async def test_a_replica_that_cannot_renew_its_shard_lease_stops(env: TestEnv, ns: str) -> None:
    probe = Probe()
    async with contextlib.AsyncExitStack() as stack:
        a = await stack.enter_async_context(replica(env, probe, "a", ns, "lost"))
        ring = ring_of(a, "lost")
        await eventually(lambda: ring.active, timeout=10)
        # Another writer takes the Lease: a's renewals fail until its deadline passes.
        lease = await env.client.get(LEASE, ring.shard, namespace=ns)
        lease["spec"]["holderIdentity"] = "someone-else"
        await env.client.update(lease)
        await run_clock(env, 20, step=1)  # past a's renew deadline
        with pytest.raises(LeadershipLost):
            await stack.aclose()
    assert not ring.active
    assert ring.controller is not None and not ring.controller.started


async def test_a_ring_needs_a_label_for_a_name_fitting_timings_and_its_kinds_alone() -> None:
    from kubeforge._client.config import ClusterConfig

    manager = Manager(ClusterConfig(server="https://127.0.0.1:1"))
    probe = Probe()
    with pytest.raises(ValueError, match="cannot name a shard ring"):
        manager.controller().for_(CM).sharded(ring="Not_A_Label").complete(probe.reconciler("x"))
    with pytest.raises(ValueError, match="lease_duration must be greater than renew_deadline"):
        # The manager's renew deadline (10 s) does not fit a 3 s lease.
        manager.controller().for_(CM).sharded(lease_duration=3).complete(probe.reconciler("x"))
    manager.controller().for_(CM).complete(probe.reconciler("x"))
    with pytest.raises(ValueError, match="cached already"):
        sharded_setup(probe, "x", "cms")(manager)
