"""Sharding a controller across the manager's replicas (decision 60), as
kubernetes-controller-sharding does it: labels.py (the protocol's names), hashing.py (which
shard an object belongs to), leases.py (what a shard Lease says), sharder.py (assigning and
moving objects), shard.py (a shard's side: its reconciler's checks and the drain
acknowledgement), ring.py (a sharded controller in one replica), metrics.py."""
