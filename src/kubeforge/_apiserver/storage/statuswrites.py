"""Status the server writes about its own objects (an APIService's availability, a
FlowSchema's Dangling condition): committed straight to the store and announced to the
observers, without the request pipeline, since nothing a client sent needs decoding,
defaulting or admission."""

from __future__ import annotations

from typing import Any

from kubeforge._apiserver.storage.commits import Commits
from kubeforge._apiserver.storage.store import StoredObject
from kubeforge._apiserver.types.resource import ResourceType

__all__ = ["set_condition"]


def _conditions(obj: Any) -> list[Any]:
    status = obj.get("status") if isinstance(obj, dict) else None
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return conditions if isinstance(conditions, list) else []


def set_condition(
    commits: Commits,
    rt: ResourceType,
    stored: StoredObject,
    condition: dict[str, Any],
    unless_same: tuple[str, ...] = (),
) -> None:
    """Replace the status condition of `condition`'s type on `stored` (others are kept);
    nothing is written when the current one agrees with `condition` on every `unless_same`
    field (the controllers' check that spares a write when nothing changed)."""
    kind = condition["type"]
    if unless_same:
        for current in _conditions(stored.obj):
            if isinstance(current, dict) and current.get("type") == kind:
                if all(current.get(key) == condition[key] for key in unless_same):
                    return
                break
    obj = stored.thaw()
    others = [c for c in _conditions(obj) if not (isinstance(c, dict) and c.get("type") == kind)]
    status = obj.get("status")
    status = dict(status) if isinstance(status, dict) else {}
    status["conditions"] = [*others, condition]
    obj["status"] = status
    commits.update(rt, obj, stored)
