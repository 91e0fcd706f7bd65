"""The names sharding writes: the upstream protocol's labels, and shard names that fit them."""

from __future__ import annotations

import uuid

from kubeforge._api.machinery.names import is_dns1123_label, is_valid_label_value
from kubeforge._runtime.sharding.labels import (
    RING_LABEL,
    drain_label,
    ring_name_problems,
    shard_label,
    shard_name,
)


def test_the_labels_are_kubernetes_controller_shardings() -> None:
    assert RING_LABEL == "alpha.sharding.timebertt.dev/controllerring"
    assert shard_label("web") == "shard.alpha.sharding.timebertt.dev/web"
    assert drain_label("web") == "drain.alpha.sharding.timebertt.dev/web"


def test_a_ring_name_is_an_rfc_1123_label() -> None:
    assert ring_name_problems("widgets") == ()
    assert ring_name_problems("Widgets_1")
    assert ring_name_problems("w" * 64)


def test_a_shard_name_is_the_ring_the_pod_and_a_hash_within_63_characters() -> None:
    pod = "fleet-controller-manager-5d8c7b9f4-x7k2p"
    name = shard_name("frigate", f"{pod}_{uuid.uuid4()}")
    assert name.startswith(f"frigate-{pod}-") and len(name) == len(f"frigate-{pod}-") + 5
    # Two processes of one pod (a restarted container), two rings of one process: distinct.
    assert shard_name("frigate", f"{pod}_{uuid.uuid4()}") != name
    assert shard_name("other", f"{pod}_1") != shard_name("frigat", f"e-{pod}_1")
    for ring, identity in [
        ("r" * 63, f"{pod}_1"),
        ("frigate", "H" * 300),
        ("frigate", "Weird_Host.Name_1"),
        ("a", "-_-"),
    ]:
        made = shard_name(ring, identity)
        assert is_dns1123_label(made) == () and is_valid_label_value(made) == (), made
