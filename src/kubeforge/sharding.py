"""Sharding a controller across the manager's replicas, as kubernetes-controller-sharding does
it (decision 60): `manager.controller().for_(Kind).sharded()` is the way in, with
`ShardingOptions`' fields as its keywords; `ShardRing` is a sharded controller in one replica
(`controller.started_by`: its shard name, whether it holds its shard Lease, whether it runs
the ring's sharder). `shard_label(ring)` and `drain_label(ring)` are the labels the sharder
writes on the ring's objects, `RING_LABEL` the one on its shard Leases; `ShardState` what a
shard Lease says of its shard.
"""

from __future__ import annotations

from kubeforge._runtime.sharding.labels import RING_LABEL, drain_label, shard_label
from kubeforge._runtime.sharding.leases import ShardState
from kubeforge._runtime.sharding.ring import ShardingOptions, ShardRing

__all__ = [
    "RING_LABEL",
    "ShardRing",
    "ShardState",
    "ShardingOptions",
    "drain_label",
    "shard_label",
]
