"""The pod garbage collector: pods bound to a node that no longer exists are deleted.

As gcOrphaned in pkg/controller/podgc/gc_controller.go: a node missing from the cache is
given a quarantine (40 s upstream) to show up again, then asked for once more from the API
server; when it is really gone, each pod bound to it is marked Failed with the
DisruptionTarget condition (reason DeletionByPodGC) and deleted at once (grace period 0), as
no kubelet is left to stop it. So the pods of a node taken out of the cluster are replaced by
their controllers elsewhere, and a DaemonSet's pod on it disappears.

Not done: deleting terminated pods beyond `--terminated-pod-gc-threshold` (12500) and
terminating pods on out-of-service nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeforge import clock
from kubeforge._api.machinery.access import meta_of, name_of, namespace_of, spec_of, status_of
from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._client.errors import Conflict, NotFound
from kubeforge._client.protocols import Reader
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["QUARANTINE_SECONDS", "PodGC", "setup"]

POD = "v1/Pod"
NODE = "v1/Node"
# How long a node may be missing from the cache before its pods are collected.
QUARANTINE_SECONDS = 40.0
BOUND_INDEX = "kubeforge.dev/bound-node"


def _bound_node(pod: Mapping[str, Any]) -> Iterable[str]:
    node = spec_of(pod).get("nodeName")
    return (str(node),) if node else ()


class PodGC(Reconciler):
    """Per node name: when the node is gone for good, its pods are failed and deleted."""

    def __init__(self, quarantine: float, *, live: Reader) -> None:
        self.quarantine = quarantine
        # The last word on a node's absence is the server's, not the cache's.
        self.live = live
        self._missing_since: dict[str, float] = {}

    async def reconcile(self, request: Request) -> Result | None:
        node = request.name
        try:
            await self.client.get(NODE, node)
        except NotFound:
            pass
        else:
            self._missing_since.pop(node, None)
            return None
        since = self._missing_since.setdefault(node, clock.monotonic())
        remaining = since + self.quarantine - clock.monotonic()
        if remaining > 0:
            return Result(requeue_after=remaining)
        try:
            await self.live.get(NODE, node)
        except NotFound:
            pass
        else:
            self._missing_since.pop(node, None)  # the cache was behind
            return None
        for pod in await self.client.list(POD, matching_fields={BOUND_INDEX: node}):
            await self._fail_and_delete(pod)
        self._missing_since.pop(node, None)
        return None

    async def _fail_and_delete(self, pod: Mapping[str, Any]) -> None:
        """Mark the pod Failed (no kubelet will) with the DisruptionTarget condition, then
        delete it at once (markFailedAndDeletePodWithCondition)."""
        name, namespace = name_of(pod), namespace_of(pod)
        status = status_of(pod)
        try:
            if status.get("phase") not in ("Succeeded", "Failed"):
                condition = {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "lastTransitionTime": now_rfc3339(),
                    "reason": "DeletionByPodGC",
                    "message": "PodGC: node no longer exists",
                }
                conditions = [
                    c for c in status.get("conditions") or () if c.get("type") != "DisruptionTarget"
                ]
                await self.client.patch_status(
                    POD,
                    name,
                    {
                        "metadata": {"uid": meta_of(pod).get("uid")},
                        "status": {"phase": "Failed", "conditions": [*conditions, condition]},
                    },
                    patch_type="merge",
                    namespace=namespace,
                )
            await self.client.delete(POD, name, namespace=namespace, grace_period_seconds=0)
        except (NotFound, Conflict):
            pass  # gone already, or a namesake


def setup(manager: Manager, *, quarantine: float = QUARANTINE_SECONDS) -> None:
    """Register the pod garbage collector with `manager` (`quarantine`: seconds a node must
    be gone before its pods are collected)."""
    cache = manager.cache
    try:
        cache.index_field(POD, BOUND_INDEX, _bound_node)
    except ValueError:
        pass  # registered by another controller of this manager

    nodes = cache.informer_for(NODE)

    def unknown_node(pod: Mapping[str, Any]) -> list[Request]:
        # Asked of every pod event: a membership test, no copy of the node.
        node = spec_of(pod).get("nodeName")
        return [Request("", str(node))] if node and str(node) not in nodes.store else []

    (
        manager.controller()
        .named("podgc")
        .for_(NODE)
        .watches(POD, unknown_node)
        .complete(PodGC(quarantine, live=manager.api_reader))
    )
