"""Status the server writes about its own objects (an APIService's availability, a
FlowSchema's Dangling condition): committed straight to the store and announced to the
observers, without the request pipeline, since nothing a client sent needs decoding,
defaulting or admission."""

from __future__ import annotations

from typing import Any

from kubeforge.apiserver.storage.commits import Commits
from kubeforge.apiserver.storage.store import StoredObject
from kubeforge.apiserver.types.resource import ResourceType

__all__ = ["set_condition"]


def set_condition(
    commits: Commits, rt: ResourceType, stored: StoredObject, condition: dict[str, Any]
) -> None:
    """Replace the status condition of `condition`'s type on `stored` (others are kept)."""
    obj = stored.thaw()
    status = obj.get("status")
    status = dict(status) if isinstance(status, dict) else {}
    conditions = status.get("conditions")
    others = [
        c
        for c in (conditions if isinstance(conditions, list) else [])
        if not (isinstance(c, dict) and c.get("type") == condition["type"])
    ]
    status["conditions"] = [*others, condition]
    obj["status"] = status
    commits.update(rt, obj, stored)
