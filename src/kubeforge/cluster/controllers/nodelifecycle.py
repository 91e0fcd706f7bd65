"""The node lifecycle controller: node health from the kubelets' heartbeats, and the taints
that follow it, as kube-controller-manager's node-lifecycle-controller has them
(pkg/controller/nodelifecycle/node_lifecycle_controller.go).

- **Heartbeats.** A node is alive while its kubelet renews its Lease in `kube-node-lease` or
  posts status (a new `lastHeartbeatTime` on its Ready condition). The controller notes, on
  its own clock, when it last saw either; a node silent for the node monitor grace period
  (`ClusterOptions.node_monitor_grace_period`, 50 s as upstream) gets its Ready,
  MemoryPressure, DiskPressure and PIDPressure conditions set Unknown (reason
  `NodeStatusUnknown`, "Kubelet stopped posting node status."). A node that never posted a
  Ready condition has the startup grace period (60 s) from its creation.
- **NoSchedule taints** follow the conditions at once: Ready False `not-ready`, Unknown
  `unreachable`, memory, disk and PID pressure, and `unschedulable` for a cordoned node.
- **NoExecute taints** (`not-ready` for Ready False, `unreachable` for Unknown) go on a node
  seen not ready at the eviction rate (0.1 nodes a second per zone, burst 1), are swapped at
  once when the Ready condition changes between False and Unknown, and come off when it is
  True again. The taint eviction controller (tainteviction.py) evicts the pods they reach.
- **Pods** of a node that stops being Ready, and pods bound to such a node later, are
  marked not ready (their Ready condition False, a NodeNotReady event).
- **Disruption.** Nodes are grouped in zones by their `topology.kubernetes.io/region` and
  `zone` labels. When no node of any zone is Ready the controller blames the control plane
  rather than the nodes: it takes the NoExecute taints off and adds none until a node is
  Ready again (then every node gets a fresh grace period). A zone with more than two not
  ready nodes, 55 % or more of its nodes, is partially disrupted: NoExecute taints are added
  there at 0.01 nodes a second in zones over 50 nodes, not at all in smaller ones.

Unlike upstream, nodes are not polled every --node-monitor-period (5 s): each is looked at
when something about it changes and when its grace period runs out.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from kubeforge import clock
from kubeforge.api.machinery.access import (
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
)
from kubeforge.api.machinery.timestamps import format_time, parse_time_or_none
from kubeforge.client.errors import Conflict, NotFound
from kubeforge.cluster.controllers._podindex import index_pods_by_node, pods_on_node
from kubeforge.cluster.controllers._taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    NODE,
    NOT_READY,
    UNREACHABLE,
    UNSCHEDULABLE,
    swap_taints,
)
from kubeforge.runtime.events import EventRecorder
from kubeforge.runtime.handler import Queue
from kubeforge.runtime.manager import Manager
from kubeforge.runtime.reconcile import Reconciler, Request, Result
from kubeforge.runtime.source import Channel

__all__ = [
    "EVICTION_RATE",
    "STARTUP_GRACE_SECONDS",
    "NodeLifecycleController",
    "setup",
    "zone_state",
]

log = logging.getLogger("kubeforge.nodelifecycle")

Obj = dict[str, Any]
ZoneState = Literal["Initial", "Normal", "PartialDisruption", "FullDisruption"]

POD = "v1/Pod"
LEASE = "coordination.k8s.io/v1/Lease"
LEASE_NAMESPACE = "kube-node-lease"
# The event source upstream's node lifecycle controller records as.
COMPONENT = "node-controller"
# kube-controller-manager's defaults (pkg/controller/nodelifecycle/config/v1alpha1).
STARTUP_GRACE_SECONDS = 60.0
EVICTION_RATE = 0.1  # --node-eviction-rate
SECONDARY_EVICTION_RATE = 0.01  # --secondary-node-eviction-rate
LARGE_CLUSTER_SIZE = 50  # --large-cluster-size-threshold
UNHEALTHY_ZONE_THRESHOLD = 0.55  # --unhealthy-zone-threshold
EVICTION_BURST = 1
# Conditions set Unknown when the kubelet falls silent (NetworkUnavailable is the network
# plugin's, not the kubelet's).
KUBELET_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
# Node condition -> {status: the NoSchedule taint it brings}.
CONDITION_TAINTS: dict[str, dict[str, str]] = {
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
CONDITION_TAINT_KEYS = frozenset(
    key for taints in CONDITION_TAINTS.values() for key in taints.values()
)
NOT_READY_TAINT = {"key": NOT_READY, "effect": NO_EXECUTE}
UNREACHABLE_TAINT = {"key": UNREACHABLE, "effect": NO_EXECUTE}
EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"
RETRY_SECONDS = 1.0


# -- reading nodes ---------------------------------------------------------------------------


def _condition(node: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in status_of(node).get("conditions") or ():
        if condition.get("type") == kind:
            return condition  # type: ignore[no-any-return]
    return None


def _ready_status(node: Mapping[str, Any]) -> str | None:
    ready = _condition(node, "Ready")
    return None if ready is None else str(ready.get("status") or "")


def _zone(node: Mapping[str, Any]) -> str:
    """The node's zone key (component-helpers' GetZoneKey): region and zone, "" for none."""
    labels = labels_of(node)
    region = labels.get("topology.kubernetes.io/region") or labels.get(
        "failure-domain.beta.kubernetes.io/region", ""
    )
    zone = labels.get("topology.kubernetes.io/zone") or labels.get(
        "failure-domain.beta.kubernetes.io/zone", ""
    )
    return f"{region}:\x00:{zone}" if region or zone else ""


def zone_state(ready_statuses: Iterable[str | None]) -> tuple[int, ZoneState]:
    """How many of a zone's nodes are not Ready, and the zone's state (ComputeZoneState)."""
    ready = not_ready = 0
    for status in ready_statuses:
        if status == "True":
            ready += 1
        else:
            not_ready += 1
    if ready == 0 and not_ready > 0:
        return not_ready, "FullDisruption"
    if not_ready > 2 and not_ready / (ready + not_ready) >= UNHEALTHY_ZONE_THRESHOLD:
        return not_ready, "PartialDisruption"
    return not_ready, "Normal"


def _condition_taints(node: Mapping[str, Any]) -> list[dict[str, str]]:
    """The NoSchedule taints the node's conditions and cordon call for."""
    taints = []
    for condition in status_of(node).get("conditions") or ():
        key = CONDITION_TAINTS.get(str(condition.get("type")), {}).get(str(condition.get("status")))
        if key is not None:
            taints.append({"key": key, "effect": NO_SCHEDULE})
    if spec_of(node).get("unschedulable"):
        taints.append({"key": UNSCHEDULABLE, "effect": NO_SCHEDULE})
    return taints


def _has_taint(node: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    return any(
        t.get("key") == taint["key"] and t.get("effect") == taint["effect"]
        for t in spec_of(node).get("taints") or ()
    )


# -- the eviction rate -----------------------------------------------------------------------


class _Limiter:
    """A token bucket on the clock (client-go's flowcontrol token bucket); rate 0 lets
    nothing through."""

    def __init__(self, rate: float, burst: int = EVICTION_BURST) -> None:
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._last = clock.monotonic()

    def swap(self, rate: float) -> None:
        """Run at `rate` from now on, with a full bucket (SwapLimiter); same rate: no change."""
        if rate != self.rate:
            self.__init__(rate, self.burst)  # type: ignore[misc]

    def _refill(self) -> None:
        now = clock.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now

    def try_accept(self) -> bool:
        if self.rate <= 0:
            return False
        self._refill()
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        return False

    def wait(self) -> float | None:
        """Seconds until a token is there (None: never, at rate 0)."""
        if self.rate <= 0:
            return None
        self._refill()
        return max((1 - self._tokens) / self.rate, 0.0)


# -- the controller --------------------------------------------------------------------------


@dataclass
class _Health:
    """What the controller last saw of a node's heartbeats, and when (its own clock)."""

    probe: float
    heartbeat: str | None  # the Ready condition's lastHeartbeatTime (None: no condition)
    renewed: datetime | None = None  # the Lease's renewTime


class _PodBound:
    """Pod events that bind a pod to a node not Ready: reconciled as the pod's own request
    (pods bound to Ready nodes, nearly all, cost nothing more)."""

    def __init__(self, not_ready: set[str]) -> None:
        self.not_ready = not_ready

    def create(self, obj: Mapping[str, Any], queue: Queue, initial: bool) -> None:
        if spec_of(obj).get("nodeName") in self.not_ready:
            queue.add(Request(namespace_of(obj), name_of(obj)))

    def update(self, old: Mapping[str, Any], new: Mapping[str, Any], queue: Queue) -> None:
        node = spec_of(new).get("nodeName")
        if node in self.not_ready and node != spec_of(old).get("nodeName"):
            queue.add(Request(namespace_of(new), name_of(new)))

    def delete(self, obj: Mapping[str, Any], queue: Queue) -> None:
        return None


def _lease_node(lease: Mapping[str, Any]) -> list[Request]:
    if namespace_of(lease) != LEASE_NAMESPACE:
        return []
    return [Request("", name_of(lease))]


class NodeLifecycleController(Reconciler):
    """Reconciles a node (a request without namespace) or a pod just bound to a node (with
    one); see the module's documentation."""

    def __init__(self, events: EventRecorder, grace_period: float, requeue: Channel) -> None:
        self.events = events
        self.grace_period = grace_period
        self.requeue = requeue
        self._health: dict[str, _Health] = {}
        self._known: set[str] = set()
        self._retry: set[str] = set()  # nodes whose pods are still to be marked not ready
        self.not_ready: set[str] = set()  # nodes last seen with Ready other than True
        # Each node's Ready status when the zones' states were last worked out.
        self._counted: dict[str, str | None] = {}
        self._zones: dict[str, ZoneState] = {}
        self._limiters: dict[str, _Limiter] = {}

    async def reconcile(self, request: Request) -> Result | None:
        if request.namespace:
            return await self._pod_bound(request)
        try:
            node: Obj = await self.client.get(NODE, request.name)
        except NotFound:
            self._forget(request.name)
            await self._handle_disruption()
            return None
        try:
            return await self._reconcile(node)
        except Conflict:
            return Result(requeue=True)  # the node changed meanwhile: look again

    def _forget(self, name: str) -> None:
        if name in self._known:
            self._known.discard(name)
            self.events.record(
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}},
                "Normal",
                "RemovingNode",
                f"Node {name} event: Removing Node {name} from Controller",
            )
        self._health.pop(name, None)
        self._retry.discard(name)
        self.not_ready.discard(name)
        self._counted.pop(name, None)

    async def _reconcile(self, node: Obj) -> Result | None:
        name = name_of(node)
        zone = _zone(node)
        if zone not in self._zones:
            self._zones[zone] = "Initial"
            self._limiters[zone] = _Limiter(EVICTION_RATE)
        if name not in self._known:
            self._known.add(name)
            registered = f"Node {name} event: Registered Node {name} in Controller"
            self.events.record(node, "Normal", "RegisteredNode", registered)
            node = await self._mark_reachable(node)
        observed = _ready_status(node)
        node, deadline = await self._update_health(node)
        current = _ready_status(node)
        if current == "True":
            self.not_ready.discard(name)
        else:
            self.not_ready.add(name)
        node = await swap_taints(self.client, node, *self._no_schedule_changes(node))
        if name not in self._counted or self._counted[name] != current:
            # Zones change state only when a node's readiness does.
            self._counted[name] = current
            await self._handle_disruption()
        waits: list[float] = []
        if deadline is not None:
            waits.append(deadline)
        if current is not None:
            wait = await self._taint_based_eviction(node, observed or "Unknown")
            if wait is not None:
                waits.append(wait)
            retry = name in self._retry and observed != "True"
            if current != "True" and observed == "True":
                self.events.record(
                    node, "Normal", "NodeNotReady", f"Node {name} status is now: NodeNotReady"
                )
                retry = True
            if retry:
                pods = await pods_on_node(self.client, name)
                if await self._mark_pods_not_ready(pods, name):
                    self._retry.discard(name)
                else:
                    self._retry.add(name)
                    waits.append(RETRY_SECONDS)
            else:
                self._retry.discard(name)
        return Result(requeue_after=min(waits)) if waits else None

    # heartbeats ---------------------------------------------------------------------------------

    async def _update_health(self, node: Obj) -> tuple[Obj, float | None]:
        """tryUpdateNodeHealth: note a new heartbeat, or set the kubelet's conditions Unknown
        when none came for the grace period. The node as it is now, and the seconds until
        its grace period runs out (None: it has, and the node is Unknown)."""
        name = name_of(node)
        now = clock.monotonic()
        ready = _condition(node, "Ready")
        heartbeat = None if ready is None else str(ready.get("lastHeartbeatTime") or "")
        grace = self.grace_period if ready is not None else STARTUP_GRACE_SECONDS
        saved = self._health.get(name)
        if saved is None:
            probe = now
            if ready is None:
                # Never posted: the startup grace counts from the node's creation.
                created = parse_time_or_none(meta_of(node).get("creationTimestamp"))
                if created is not None:
                    probe = now - max((clock.now() - created).total_seconds(), 0.0)
            saved = self._health[name] = _Health(probe, heartbeat)
        elif saved.heartbeat != heartbeat:  # a new heartbeat, or a Ready condition come or gone
            saved.probe, saved.heartbeat = now, heartbeat
        renewed = await self._lease_renewed(name)
        if renewed is not None and (saved.renewed is None or saved.renewed < renewed):
            saved.renewed, saved.probe = renewed, now
        remaining = saved.probe + grace - now
        if remaining > 0:
            return node, remaining
        changed = copy.deepcopy(node)
        conditions = changed.setdefault("status", {}).setdefault("conditions", [])
        stamp = format_time(clock.now())
        for kind in KUBELET_CONDITIONS:
            condition = next((c for c in conditions if c.get("type") == kind), None)
            if condition is None:
                conditions.append(
                    {
                        "type": kind,
                        "status": "Unknown",
                        "reason": "NodeStatusNeverUpdated",
                        "message": "Kubelet never posted node status.",
                        "lastHeartbeatTime": meta_of(node).get("creationTimestamp"),
                        "lastTransitionTime": stamp,
                    }
                )
            elif condition.get("status") != "Unknown":
                condition.update(
                    status="Unknown",
                    reason="NodeStatusUnknown",
                    message="Kubelet stopped posting node status.",
                    lastTransitionTime=stamp,
                )
        if _condition(changed, "Ready") != ready:
            log.info("node %s: no heartbeat for %.0f s; its status is now Unknown", name, grace)
            written: Obj = await self.client.update_status(changed)
            saved.heartbeat = str((_condition(written, "Ready") or {}).get("lastHeartbeatTime"))
            return written, None
        return node, None

    async def _lease_renewed(self, name: str) -> datetime | None:
        try:
            lease = await self.client.get(LEASE, name, namespace=LEASE_NAMESPACE)
        except NotFound:
            return None
        return parse_time_or_none(spec_of(lease).get("renewTime"))

    # taints -------------------------------------------------------------------------------------

    @staticmethod
    def _no_schedule_changes(
        node: Mapping[str, Any],
    ) -> tuple[list[dict[str, str]], list[Mapping[str, Any]]]:
        """doNoScheduleTaintingPass: the condition and cordon NoSchedule taints to add, and
        those of them no longer called for to remove."""
        wanted = _condition_taints(node)
        present = [
            t
            for t in spec_of(node).get("taints") or ()
            if t.get("effect") == NO_SCHEDULE
            and (t.get("key") == UNSCHEDULABLE or t.get("key") in CONDITION_TAINT_KEYS)
        ]
        add = [w for w in wanted if not any(t.get("key") == w["key"] for t in present)]
        remove = [t for t in present if not any(w["key"] == t.get("key") for w in wanted)]
        return add, remove

    async def _taint_based_eviction(self, node: Obj, observed: str) -> float | None:
        """processTaintBaseEviction and the NoExecute tainting pass for one node; the seconds
        until the eviction rate lets its taint on (None: nothing waits)."""
        if observed == "True":
            await self._mark_reachable(node)
            return None
        wanted, opposite = (
            (NOT_READY_TAINT, UNREACHABLE_TAINT)
            if observed == "False"
            else (UNREACHABLE_TAINT, NOT_READY_TAINT)
        )
        if _has_taint(node, wanted) and not _has_taint(node, opposite):
            return None
        if _has_taint(node, opposite):
            # Ready moved between False and Unknown: the taint follows at once.
            await swap_taints(self.client, node, [wanted], [opposite])
            return None
        limiter = self._limiters[_zone(node)]
        if not limiter.try_accept():
            return limiter.wait()
        log.info("node %s: tainted %s:%s", name_of(node), wanted["key"], NO_EXECUTE)
        await swap_taints(self.client, node, [wanted], [opposite])
        return None

    async def _mark_reachable(self, node: Obj) -> Obj:
        """Take the not-ready and unreachable NoExecute taints off the node."""
        return await swap_taints(self.client, node, (), [UNREACHABLE_TAINT, NOT_READY_TAINT])

    # disruption ---------------------------------------------------------------------------------

    async def _handle_disruption(self) -> None:
        """handleDisruption: each zone's state from its nodes' Ready conditions, and what a
        change of states does to the eviction rates."""
        # Every node of the cache, looked at yet or not, as upstream's monitor pass counts
        # them all at once.
        nodes: list[Obj] = await self.client.list(NODE)
        by_zone: dict[str, list[str | None]] = {}
        for node in nodes:
            if EXCLUDE_DISRUPTION not in labels_of(node):
                by_zone.setdefault(_zone(node), []).append(_ready_status(node))
        sizes = {zone: len(statuses) for zone, statuses in by_zone.items()}
        new = {zone: zone_state(statuses)[1] for zone, statuses in by_zone.items()}
        for zone in list(self._zones):
            if zone not in new:
                del self._zones[zone]
        for zone in new:
            if zone not in self._zones:
                self._zones[zone] = "Initial"
                self._limiters.setdefault(zone, _Limiter(EVICTION_RATE))
        all_now = bool(new) and all(s == "FullDisruption" for s in new.values())
        all_before = bool(self._zones) and all(s == "FullDisruption" for s in self._zones.values())
        if all_now and all_before:
            return
        if all_now:
            log.warning("no node is Ready: evictions stop until one is")
            for node in nodes:
                await self._mark_reachable(node)
            for zone in self._zones:
                self._limiters[zone].swap(0)
                self._zones[zone] = "FullDisruption"
            return
        if all_before:
            log.info("a node is Ready again: evictions resume")
            now = clock.monotonic()
            for health in self._health.values():
                health.probe = now
            for zone in self._zones:
                self._set_rate(zone, sizes.get(zone, 0), new[zone])
            self._requeue(nodes)
            return
        changed = [zone for zone, state in self._zones.items() if new[zone] != state]
        for zone in changed:
            self._set_rate(zone, sizes.get(zone, 0), new[zone])
        if changed:
            self._requeue(n for n in nodes if _zone(n) in changed)

    def _set_rate(self, zone: str, size: int, state: ZoneState) -> None:
        if state == "Normal":
            rate = EVICTION_RATE
        elif state == "PartialDisruption":
            rate = SECONDARY_EVICTION_RATE if size > LARGE_CLUSTER_SIZE else 0.0
        elif state == "FullDisruption":
            rate = EVICTION_RATE
        else:
            return
        self._limiters[zone].swap(rate)
        self._zones[zone] = state

    def _requeue(self, nodes: Iterable[Mapping[str, Any]]) -> None:
        """Look at these nodes again (their eviction rate changed)."""
        for node in nodes:
            self.requeue.send(Request("", name_of(node)))

    # pods ---------------------------------------------------------------------------------------

    async def _pod_bound(self, request: Request) -> Result | None:
        """processPod: a pod bound to a node that is not Ready is marked not ready."""
        try:
            pod: Obj = await self.client.get(POD, request.name, namespace=request.namespace)
        except NotFound:
            return None
        name = str(spec_of(pod).get("nodeName") or "")
        if name not in self._health:
            return None  # the node is not looked at yet; its reconcile marks the pod
        try:
            node = await self.client.get(NODE, name)
        except NotFound:
            return None
        status = _ready_status(node)
        if status in (None, "True") or await self._mark_pods_not_ready([pod], name):
            return None
        return Result(requeue_after=RETRY_SECONDS)

    async def _mark_pods_not_ready(self, pods: Iterable[Obj], node: str) -> bool:
        """MarkPodsNotReady: the pods' Ready condition False, with a NodeNotReady event each;
        whether all were written."""
        done = True
        for pod in pods:
            if spec_of(pod).get("nodeName") != node:
                continue
            conditions = status_of(pod).get("conditions") or ()
            ready = next((c for c in conditions if c.get("type") == "Ready"), None)
            if ready is None or ready.get("status") == "False":
                continue
            changed = copy.deepcopy(pod)
            for condition in changed["status"]["conditions"]:
                if condition.get("type") == "Ready":
                    condition["status"] = "False"
                    condition["lastTransitionTime"] = format_time(clock.now())
            try:
                await self.client.update_status(changed)
            except NotFound:
                continue
            except Conflict:
                done = False
                continue
            self.events.record(pod, "Warning", "NodeNotReady", "Node is not ready")
        return done


def setup(manager: Manager, *, grace_period: float = 50.0) -> None:
    """Register the node lifecycle controller with `manager`; `grace_period` is
    --node-monitor-grace-period."""
    index_pods_by_node(manager)
    requeue = Channel()
    controller = NodeLifecycleController(manager.event_recorder(COMPONENT), grace_period, requeue)
    (
        manager.controller()
        .named("node-lifecycle-controller")
        .for_(NODE)
        .watches(LEASE, _lease_node)
        .watches(POD, _PodBound(controller.not_ready))
        .watches_source(requeue)
        # One node at a time, as upstream's monitor pass: the zones' states and eviction
        # rates are shared.
        .with_options(max_concurrent_reconciles=1)
        .complete(controller)
    )
