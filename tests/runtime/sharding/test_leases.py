"""What a shard Lease says about its shard at a given moment."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubeforge._api.machinery.timestamps import format_micro_time
from kubeforge._runtime.sharding.leases import ORPHAN_AFTER, ShardState, shard_of, shards_of

RENEWED = datetime(2030, 1, 1, tzinfo=UTC)
T = RENEWED.timestamp()


def lease(name: str = "s", holder: str | None = "s", duration: Any = 15) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "holderIdentity": holder,
        "leaseDurationSeconds": duration,
        "renewTime": format_micro_time(RENEWED),
        "acquireTime": format_micro_time(RENEWED),
    }
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def test_a_held_lease_is_ready_until_its_term_then_expired() -> None:
    assert shard_of(lease(), T + 14.9).state is ShardState.READY
    expired = shard_of(lease(), T + 15)
    assert expired.state is ShardState.EXPIRED
    assert expired.expires == T + 15 and expired.duration == 15
    assert ShardState.READY.available and ShardState.EXPIRED.available


def test_a_lease_not_held_by_its_shard_is_dead_then_orphaned() -> None:
    for holder in ("", None, "shardlease-controller", "other"):
        dead = shard_of(lease(holder=holder), T + 1)
        assert dead.state is ShardState.DEAD and not dead.state.available
    assert shard_of(lease(holder=""), T + 15 + ORPHAN_AFTER).state is ShardState.ORPHANED


def test_a_lease_without_its_times_is_unknown() -> None:
    broken = lease(duration=None)
    assert shard_of(broken, T).state is ShardState.UNKNOWN
    del broken["spec"]["renewTime"]
    assert shard_of(broken, T).state is ShardState.UNKNOWN
    assert not ShardState.UNKNOWN.available


def test_the_next_change_is_the_end_of_the_term_or_the_orphaning() -> None:
    assert shard_of(lease(), T).next_change() == T + 15
    assert shard_of(lease(holder=""), T).next_change() == T + 15 + ORPHAN_AFTER
    assert shard_of(lease(), T + 20).next_change() is None  # expired: a write changes it


def test_shards_by_name() -> None:
    shards = shards_of([lease("a", "a"), lease("b", "")], T)
    assert {n: s.state for n, s in shards.items()} == {
        "a": ShardState.READY,
        "b": ShardState.DEAD,
    }
