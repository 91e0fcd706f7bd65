"""The names sharding writes into the cluster: the labels of shard Leases and of sharded
objects, and the names of shards.

They are kubernetes-controller-sharding's (github.com/timebertt/kubernetes-controller-sharding,
pkg/apis/sharding/v1alpha1/constants.go), so the shards of a kubeforge ring speak the same
protocol as that project's sharder and its other shard implementations:

- a shard Lease carries `alpha.sharding.timebertt.dev/controllerring: <ring>`, and its name
  equals its holder identity (the shard's name);
- an object assigned to a shard carries `shard.alpha.sharding.timebertt.dev/<ring>: <shard>`;
- an object the sharder wants moved off a live shard also carries
  `drain.alpha.sharding.timebertt.dev/<ring>`; the shard acknowledges by removing both.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from kubeforge._api.machinery.names import is_dns1123_label

__all__ = [
    "RING_LABEL",
    "SHARDER_IDENTITY",
    "drain_label",
    "ring_name_problems",
    "shard_label",
    "shard_name",
    "sharder_lease_name",
]

_PREFIX: Final = "alpha.sharding.timebertt.dev/"

RING_LABEL: Final = _PREFIX + "controllerring"
"""On a shard Lease: the ring it belongs to."""

SHARDER_IDENTITY: Final = "shardlease-controller"
"""The holder the sharder writes into a Lease it takes over from an expired shard (the
upstream sharder's identity, so either sharder recognises the other's takeovers)."""

_MAX_LABEL_VALUE = 63
_HASH_CHARS = 5


def shard_label(ring: str) -> str:
    """The label whose value names the shard an object of `ring` is assigned to."""
    return f"shard.{_PREFIX}{ring}"


def drain_label(ring: str) -> str:
    """The label asking an object's shard in `ring` to let it go."""
    return f"drain.{_PREFIX}{ring}"


def ring_name_problems(ring: str) -> tuple[str, ...]:
    """Why `ring` cannot name a ring: it is the name part of two label keys, and a Lease
    label value, so it must be an RFC 1123 label (63 characters at most)."""
    return is_dns1123_label(ring)


def _short_hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()[:_HASH_CHARS]


def shard_name(ring: str, identity: str) -> str:
    """The name of this process's shard in `ring`: its Lease's name, its holder identity and
    the value of the shard label on its objects.

    `<ring>-<host>-<hash>`: the ring (a process may be a shard of several rings, each with a
    Lease of its own in one namespace), the host part of the manager's identity (the pod's
    name), and five characters of a hash of both (unique per process and ring, so two
    processes on one host, or a restarted container, never share a shard). Cut to the 63
    characters a label value allows, the hash always kept.
    """
    host = re.sub(r"[^a-z0-9-]+", "-", identity.split("_", 1)[0].lower())
    suffix = _short_hash(f"{ring}/{identity}")
    name = "-".join(part for part in (ring, host.strip("-")) if part)
    name = name[: _MAX_LABEL_VALUE - _HASH_CHARS - 1].strip("-")
    return f"{name}-{suffix}" if name else suffix


def sharder_lease_name(ring: str) -> str:
    """The Lease the ring's sharder candidates elect their leader on (it carries no ring
    label: it is no shard)."""
    return f"{ring}-sharder"
