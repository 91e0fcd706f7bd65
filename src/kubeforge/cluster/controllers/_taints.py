"""Node taints as the node controllers write and read them: the well-known keys, a node's
NoExecute taints, and swapping taints in one write guarded by the node's resourceVersion
(pkg/util/taints/taints.go, pkg/controller/controller_utils.go's AddOrUpdateTaintOnNode)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubeforge import clock
from kubeforge.api.machinery.access import meta_of, name_of, spec_of
from kubeforge.api.machinery.timestamps import format_time
from kubeforge.runtime.cached_client import CachedClient

__all__ = [
    "NODE",
    "NOT_READY",
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "UNREACHABLE",
    "UNSCHEDULABLE",
    "no_execute_taints",
    "same_taint",
    "swap_taints",
]

Obj = dict[str, Any]

NODE = "v1/Node"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"


def same_taint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two taints are the same slot: one key and effect (upstream's MatchTaint)."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def no_execute_taints(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The node's NoExecute taints."""
    return [t for t in spec_of(node).get("taints") or () if t.get("effect") == NO_EXECUTE]


def _swapped(
    taints: Sequence[Mapping[str, Any]],
    add: Sequence[Mapping[str, Any]],
    remove: Sequence[Mapping[str, Any]],
) -> list[Obj] | None:
    """`taints` with `remove` gone and `add` present; None when that changes nothing. A taint
    already there with the same value keeps its timeAdded."""
    result = [dict(t) for t in taints if not any(same_taint(t, r) for r in remove)]
    changed = len(result) != len(taints)
    stamp = format_time(clock.now())
    for new in add:
        existing = next((t for t in result if same_taint(t, new)), None)
        if existing is not None:
            if (existing.get("value") or "") == (new.get("value") or ""):
                continue
            result.remove(existing)
        result.append({**new, "timeAdded": stamp})
        changed = True
    return result if changed else None


async def swap_taints(
    client: CachedClient,
    node: Obj,
    add: Sequence[Mapping[str, Any]] = (),
    remove: Sequence[Mapping[str, Any]] = (),
) -> Obj:
    """Add and remove taints of `node` in one write, conditional on its resourceVersion
    (Conflict when the node changed since); the node as it is afterwards."""
    taints = _swapped(spec_of(node).get("taints") or (), add, remove)
    if taints is None:
        return node
    patch = {
        "metadata": {"resourceVersion": meta_of(node).get("resourceVersion")},
        "spec": {"taints": taints or None},
    }
    written: Obj = await client.patch(NODE, name_of(node), patch)
    return written
