"""System-owned metadata: what the server sets on create and keeps on update."""

from __future__ import annotations

import os
import secrets
from typing import Any

from kubeforge._api.machinery.timestamps import now_rfc3339

__all__ = [
    "SYSTEM_FIELDS",
    "carry_system_fields",
    "fill_system_fields",
    "generate_name",
    "new_uid",
    "spec_changed",
]

# Fields a client may not set on create: the server owns them.
SYSTEM_FIELDS = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "generation",
)

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def generate_name(base: str) -> str:
    """A name from generateName: the base cut to 58 characters and 5 random characters."""
    suffix = "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
    return base[:58] + suffix


class _RandomPool:
    """Random (version 4) UUIDs made in bulk: one os.urandom call and one pass of formatting
    per 256 of them instead of per uid."""

    def __init__(self) -> None:
        self.uids: list[str] = []
        os.register_at_fork(after_in_child=self.clear)  # a child must not reuse our values

    def clear(self) -> None:
        self.uids = []

    def take(self) -> str:
        # list.pop is atomic, so threads never get the same uid; two that find the list
        # empty both refill it, each with fresh random bytes.
        try:
            return self.uids.pop()
        except IndexError:
            pass
        h = os.urandom(16 * 256).hex()
        variant = _VARIANT
        self.uids.extend(
            # Version nibble 4; variant bits 10xx.
            f"{h[i : i + 8]}-{h[i + 8 : i + 12]}-4{h[i + 13 : i + 16]}-"
            f"{variant[h[i + 16]]}{h[i + 17 : i + 20]}-{h[i + 20 : i + 32]}"
            for i in range(0, len(h), 32)
        )
        return self.uids.pop()


_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}
_pool = _RandomPool()


def new_uid() -> str:
    """A random (version 4) UUID in its usual text form."""
    return _pool.take()


def fill_system_fields(meta: dict[str, Any], tracks_generation: bool) -> None:
    """Wipe client-supplied system fields and set uid, creationTimestamp and generation."""
    for key in SYSTEM_FIELDS:
        meta.pop(key, None)
    meta["uid"] = new_uid()
    meta["creationTimestamp"] = now_rfc3339()
    if tracks_generation:
        meta["generation"] = 1


def carry_system_fields(meta: dict[str, Any], old_meta: dict[str, Any]) -> None:
    """What an update (a client's, or what a mutating webhook made of it) may not change,
    taken from the stored object as rest.BeforeUpdate does (k8s.io/apiserver
    pkg/registry/rest/update.go): generation, creationTimestamp, a deletion already under
    way, and a missing uid. A different uid, or a deletion timestamp or grace period the
    stored object does not have, is left for validate_object_meta_update to refuse."""
    if not meta.get("uid"):
        meta["uid"] = old_meta.get("uid")
    if "generation" in old_meta:
        meta["generation"] = old_meta["generation"]
    else:
        meta.pop("generation", None)
    for key in ("creationTimestamp", "deletionTimestamp"):
        if old_meta.get(key):
            meta[key] = old_meta[key]
    if old_meta.get("deletionGracePeriodSeconds") is not None and (
        meta.get("deletionGracePeriodSeconds") is None
    ):
        meta["deletionGracePeriodSeconds"] = old_meta["deletionGracePeriodSeconds"]
    meta.pop("selfLink", None)


def spec_changed(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether anything besides metadata (and status, already reset by the caller) changed."""
    keys = (set(new) | set(old)) - {"metadata", "apiVersion", "kind"}
    return any(new.get(k) != old.get(k) for k in keys)
