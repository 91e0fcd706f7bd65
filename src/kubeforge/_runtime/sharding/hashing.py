"""Which shard an object belongs to: a hash key per object, and consistent hashing of the keys
over the ring's available shards.

An object's key is `<group>/<kind>/<namespace>/<name>`; an object of a controlled kind takes
the key of its controller owner instead, so owner and owned land on the same shard (as
kubernetes-controller-sharding's pkg/sharding/key/key.go forms them). Neither the uid nor
`generateName` is in the key: the sharder must be able to compute an owned object's key from
its owner reference alone.

The keys are spread by rendezvous (highest random weight) hashing: an object goes to the shard
whose hash combined with the object's scores highest. Like the token ring the upstream sharder
uses (pkg/sharding/consistenthash/ring.go), it moves only the objects that must move when a
shard joins or leaves (those that now score highest on the new shard, or were on the one that
left); unlike a ring with a hundred tokens per shard it has no imbalance of its own, so each
shard's share is exactly what chance over the objects gives (a standard deviation of
sqrt(n·p·(1-p)) objects), which the scale-out of a few replicas depends on (decision 60). It
costs one 64-bit mix per shard and object, nothing for a handful of shards.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubeforge._api.machinery.access import controller_ref, meta_of
from kubeforge._api.meta import GroupVersionKind

__all__ = ["HashRing", "controller_key", "object_key"]

_MASK: Final = (1 << 64) - 1


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


# SplitMix64's finaliser, which makes every bit of a score depend on every bit of its input.
_GOLDEN: Final = 0x9E3779B97F4A7C15
_MIX1: Final = 0xBF58476D1CE4E5B9
_MIX2: Final = 0x94D049BB133111EB


def object_key(gvk: GroupVersionKind, namespace: str, name: str) -> str:
    """The hash key of an object of a ring's own kind."""
    return f"{gvk.group}/{gvk.kind}/{namespace}/{name}"


def controller_key(obj: Mapping[str, Any]) -> str | None:
    """The hash key of an owned object: its controller owner's. None when it has no
    controller (the sharder leaves it unassigned: no shard's controller would act on it)."""
    ref = controller_ref(obj)
    if ref is None or not ref.get("kind") or not ref.get("name"):
        return None
    group = str(ref.get("apiVersion") or "").rpartition("/")[0]
    namespace = str(meta_of(obj).get("namespace") or "")
    return f"{group}/{ref['kind']}/{namespace}/{ref['name']}"


class HashRing:
    """The available shards of a ring, hashing keys onto them."""

    __slots__ = ("_scored", "shards")

    def __init__(self, shards: Iterable[str]) -> None:
        self.shards: frozenset[str] = frozenset(shards)
        # Sorted, so that two sharders given the same shards break a tie the same way.
        self._scored = tuple((_hash(shard), shard) for shard in sorted(self.shards))

    def __bool__(self) -> bool:
        return bool(self._scored)

    def shard_for(self, key: str) -> str | None:
        """The shard `key` belongs to; None when no shard is available."""
        if not self._scored:
            return None
        point = _hash(key)
        best, best_score = "", -1
        for seed, shard in self._scored:
            score = ((point ^ seed) + _GOLDEN) & _MASK  # inlined: this runs per object and shard
            score = ((score ^ (score >> 30)) * _MIX1) & _MASK
            score = ((score ^ (score >> 27)) * _MIX2) & _MASK
            score ^= score >> 31
            if score > best_score:
                best, best_score = shard, score
        return best
