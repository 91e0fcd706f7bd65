"""The hashes workload controllers name their children with: a pod template's hash
(controller.ComputeHash: a Deployment's `pod-template-hash`, a DaemonSet's revisions) and a
ControllerRevision's (history.HashControllerRevision: a StatefulSet's revisions), spelled
with the safe alphabet of apimachinery's rand.SafeEncodeString."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["fnv1_32", "fnv1a_32", "safe_encode", "template_hash"]

_OFFSET = 0x811C9DC5
_PRIME = 0x01000193
# No vowels (no words) and no look-alikes.
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def fnv1_32(data: bytes, value: int = _OFFSET) -> int:
    """32-bit FNV-1 (Go's hash/fnv New32) of `data`, continuing from `value`."""
    for byte in data:
        value = ((value * _PRIME) & 0xFFFFFFFF) ^ byte
    return value


def fnv1a_32(data: bytes, value: int = _OFFSET) -> int:
    """32-bit FNV-1a (Go's hash/fnv New32a) of `data`, continuing from `value`."""
    for byte in data:
        value = ((value ^ byte) * _PRIME) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """Each byte of `text` as a letter of the safe alphabet (rand.SafeEncodeString)."""
    return "".join(_SAFE_ALPHABET[b % len(_SAFE_ALPHABET)] for b in text.encode())


def template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """The hash of a pod template: FNV-1a of its canonical JSON (and of the collision count,
    when there is one), spelled with safe characters as controller.ComputeHash does. Upstream
    hashes Go's printout of the typed template, which no other program reproduces, so the
    value differs from kube-controller-manager's; it is as stable and as sensitive."""
    value = fnv1a_32(orjson.dumps(template, option=orjson.OPT_SORT_KEYS))
    if collision_count is not None:
        value = fnv1a_32(int(collision_count).to_bytes(4, "little"), value)
    return safe_encode(str(value))
