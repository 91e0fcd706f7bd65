"""Which shard an object belongs to: the keys, the spread, and how little moves when a shard
joins or leaves."""

from __future__ import annotations

import random
import string
from collections import Counter

from kubeforge._api.meta import GroupVersionKind
from kubeforge._runtime.sharding.hashing import HashRing, controller_key, object_key

WIDGET = GroupVersionKind("example.com", "v1", "Widget")


def random_shards(rng: random.Random, count: int) -> list[str]:
    """Shard names as replicas get them: ring, pod name, a hash."""
    letters = string.ascii_lowercase + string.digits

    def word() -> str:
        return "".join(rng.choices(letters, k=5))

    return [f"widgets-operator-{word()}-{word()}" for _ in range(count)]


def keys(count: int) -> list[str]:
    return [object_key(WIDGET, "default", f"widget-{i}") for i in range(count)]


def test_an_objects_key_is_its_group_kind_namespace_and_name() -> None:
    assert object_key(WIDGET, "ns", "w") == "example.com/Widget/ns/w"
    core = GroupVersionKind("", "v1", "ConfigMap")
    assert object_key(core, "", "c") == "/ConfigMap//c"


def test_an_owned_objects_key_is_its_controller_owners() -> None:
    owned = {
        "metadata": {
            "name": "child-x7k2p",
            "namespace": "ns",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "1"},
                {
                    "apiVersion": "example.com/v1",
                    "kind": "Widget",
                    "name": "w",
                    "uid": "2",
                    "controller": True,
                },
            ],
        }
    }
    assert controller_key(owned) == object_key(WIDGET, "ns", "w")
    # Same as its owner's own key, whatever the child's name (generateName is fine here).
    assert HashRing(["a", "b", "c"]).shard_for(controller_key(owned) or "") == HashRing(
        ["c", "b", "a"]
    ).shard_for(object_key(WIDGET, "ns", "w"))
    owned["metadata"]["ownerReferences"][1]["controller"] = False
    assert controller_key(owned) is None  # no controller: no shard reconciles it


def test_no_shard_means_no_assignment() -> None:
    assert not HashRing([])
    assert HashRing([]).shard_for("anything") is None


def test_four_shards_each_get_within_15_percent_of_an_even_share() -> None:
    # For any names the shards get: 200 rings of four random shard names, 2,000 objects.
    rng = random.Random(60)
    objects = keys(2000)
    worst = 0.0
    for _ in range(200):
        ring = HashRing(random_shards(rng, 4))
        counts = Counter(ring.shard_for(k) for k in objects)
        assert len(counts) == 4
        worst = max(worst, *(abs(n - 500) / 500 for n in counts.values()))
    assert worst <= 0.15, worst


def test_a_joining_shard_takes_only_what_it_gets_and_a_leaving_one_gives_only_its_own() -> None:
    rng = random.Random(7)
    objects = keys(3000)
    three = random_shards(rng, 3)
    before = HashRing(three)
    fourth = random_shards(rng, 1)[0]
    after = HashRing([*three, fourth])
    moved = [k for k in objects if before.shard_for(k) != after.shard_for(k)]
    assert all(after.shard_for(k) == fourth for k in moved)
    assert abs(len(moved) - 750) < 0.15 * 750  # about a quarter: the new shard's share

    fewer = HashRing(three[1:])
    left = [k for k in objects if before.shard_for(k) != fewer.shard_for(k)]
    assert all(before.shard_for(k) == three[0] for k in left)
    assert len(left) == sum(1 for k in objects if before.shard_for(k) == three[0])


def test_the_same_shards_hash_the_same_in_every_replica() -> None:
    objects = keys(100)
    one, other = HashRing(["x", "y", "z"]), HashRing(["z", "x", "y"])
    assert [one.shard_for(k) for k in objects] == [other.shard_for(k) for k in objects]
