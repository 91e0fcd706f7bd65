"""The sharding metrics, in the manager's registry (`/metrics`).

The sharder's counters are kubernetes-controller-sharding's (pkg/metrics/operations.go:
assignments, movements, drains, ring calculations) with the shard each concerns as a label;
they count in the replica that leads the ring's sharder. Each replica also reports its own
shard: the objects its cache holds of each kind of the ring, and the drains it acknowledged.
The shard and sharder Leases are reported as any lease is, in
`leader_election_master_status{name=<lease>}`.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge

from kubeforge._runtime.sharding.leases import ShardState

__all__ = ["ShardingMetrics"]

_NAMESPACE = "kubeforge_sharding"


class ShardingMetrics:
    """The sharding series of one manager (created with its first sharded controller)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ("ring", "shard", "kind")
        self.assignments_total = Counter(
            f"{_NAMESPACE}_assignments_total",
            "Objects the sharder assigned to a shard (new, drained or moved objects)",
            labels,
            registry=registry,
        )
        self.movements_total = Counter(
            f"{_NAMESPACE}_movements_total",
            "Objects the sharder moved off a shard without a drain (the shard was gone, or "
            "the object is owned and follows its owner)",
            labels,
            registry=registry,
        )
        self.drains_total = Counter(
            f"{_NAMESPACE}_drains_total",
            "Objects the sharder asked a live shard to let go of",
            labels,
            registry=registry,
        )
        self.ring_calculations_total = Counter(
            f"{_NAMESPACE}_ring_calculations_total",
            "Times the sharder computed the ring's available shards anew",
            ("ring",),
            registry=registry,
        )
        self.shards = Gauge(
            f"{_NAMESPACE}_shards",
            "The ring's shards by state, as the leading sharder sees them",
            ("ring", "state"),
            registry=registry,
        )
        self.shard_objects = Gauge(
            f"{_NAMESPACE}_shard_objects",
            "Objects of each kind of the ring assigned to this replica's shard (its cache)",
            labels,
            registry=registry,
        )
        self.drains_acknowledged_total = Counter(
            f"{_NAMESPACE}_drains_acknowledged_total",
            "Drains this replica's shard acknowledged by letting the object go",
            ("ring", "shard"),
            registry=registry,
        )

    def count_shards(self, ring: str, states: list[ShardState]) -> None:
        """Publish how many shards of `ring` are in each state."""
        for state in ShardState:
            self.shards.labels(ring, state.value).set(states.count(state))

    def watch_objects(self, ring: str, shard: str, kind: str, count: Callable[[], int]) -> None:
        """Report `count()` as this shard's objects of `kind` whenever metrics are read."""
        self.shard_objects.labels(ring, shard, kind).set_function(count)
