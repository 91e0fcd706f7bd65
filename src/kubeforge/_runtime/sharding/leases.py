"""What a shard Lease says about its shard, at a given moment.

The states are kubernetes-controller-sharding's (pkg/sharding/leases/state.go, times.go), with
one difference: that sharder waits a further lease duration after expiry ("uncertain") before
it takes a Lease over, while ours takes it over as soon as the term has passed, as a leader
election candidate takes over a leader's Lease. A shard stops reconciling when it cannot renew
within its renew deadline, which is shorter than the term (decision 60).

- ready: held by the shard (holder identity = the Lease's name) within its term;
- expired: still naming the shard, but not renewed within its term: the sharder takes it over
  (writing its own identity as holder), which makes the shard
- dead: no longer held by the shard (released on shutdown, or taken over): its objects move
  without a drain, as nobody reconciles them;
- orphaned: dead for a minute past its term: the sharder deletes the Lease;
- unknown: a Lease missing the fields to judge it.

Only ready and expired shards are available for objects: an expired one until the sharder has
taken its Lease over, so that an object never moves while its shard might still renew.
Expiry compares the holder's `renewTime` with the sharder's clock (as the upstream sharder
does), so the replicas' clocks must agree to well within the lease duration.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubeforge._api.machinery.timestamps import parse_time_or_none

__all__ = ["ORPHAN_AFTER", "Shard", "ShardState", "shard_of", "shards_of"]

ORPHAN_AFTER: Final = 60.0
"""Seconds past its term after which a dead shard's Lease is deleted."""


class ShardState(enum.Enum):
    """A shard's state (the upstream names)."""

    UNKNOWN = "unknown"
    ORPHANED = "orphaned"
    DEAD = "dead"
    EXPIRED = "expired"
    READY = "ready"

    @property
    def available(self) -> bool:
        """Whether objects may be assigned to (and stay on) the shard."""
        return self in (ShardState.READY, ShardState.EXPIRED)


@dataclass(frozen=True, slots=True)
class Shard:
    """One shard as its Lease shows it: `expires` is the end of its term (epoch seconds,
    of the process's clock), `duration` the term's length."""

    name: str
    state: ShardState
    expires: float
    duration: float

    def next_change(self) -> float | None:
        """When the state changes with time alone (None: only a write changes it)."""
        if self.state is ShardState.READY:
            return self.expires
        if self.state is ShardState.DEAD:
            return self.expires + ORPHAN_AFTER
        return None


def shard_of(lease: Mapping[str, Any], now: float) -> Shard:
    """The shard `lease` stands for, judged at `now` (epoch seconds)."""
    name = str((lease.get("metadata") or {}).get("name") or "")
    spec = lease.get("spec") or {}
    renewed = parse_time_or_none(spec.get("renewTime"))
    duration = spec.get("leaseDurationSeconds")
    if renewed is None or not isinstance(duration, int) or duration <= 0:
        return Shard(name, ShardState.UNKNOWN, now, 0.0)
    expires = renewed.timestamp() + duration
    if spec.get("holderIdentity") != name:
        state = ShardState.ORPHANED if now >= expires + ORPHAN_AFTER else ShardState.DEAD
    elif now >= expires:
        state = ShardState.EXPIRED
    else:
        state = ShardState.READY
    return Shard(name, state, expires, float(duration))


def shards_of(leases: Iterable[Mapping[str, Any]], now: float) -> dict[str, Shard]:
    """The shards of a ring's Leases, by name."""
    shards = (shard_of(lease, now) for lease in leases)
    return {shard.name: shard for shard in shards}
