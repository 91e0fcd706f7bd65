"""The scheduler: binds each pending pod to a node, as kube-scheduler's default profile does
for the common cases.

A pod is considered when it has no `spec.nodeName`, asks for `default-scheduler` (or no
scheduler), is not being deleted and has no scheduling gates. A node fits when it is
schedulable (or the pod tolerates that), is Ready, has no NoSchedule/NoExecute taint the
pod does not tolerate, matches the pod's node selector and required node affinity, and
has room: fewer pods than its allocatable `pods`, and enough allocatable cpu and memory
for the pod's requests. Among the nodes that fit, the one running the fewest pods wins
(ties go round; the control plane's mirror pods are not counted). The pod is bound
through `pods/binding`; a pod no node fits gets the PodScheduled=False condition (reason
Unschedulable) with upstream's message, e.g.
`0/2 nodes are available: 2 node(s) were unschedulable. preemption: 0/2 nodes are
available: 2 Preemption is not helpful for scheduling.`, and a FailedScheduling event; it
is tried again when nodes change, when a bound pod finishes or goes, and every 30 s.

A pod's PersistentVolumeClaims are considered as kube-scheduler's VolumeBinding plugin does
(volumebinding.py): claims must exist and Immediate ones be bound, bound volumes' node
affinity must admit the node, and WaitForFirstConsumer claims must find a volume or be
provisionable there; the pod is bound once the claims bound for the chosen node are.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from kubeforge import clock
from kubeforge._api.machinery.access import is_deleting, spec_of, status_of
from kubeforge._api.machinery.quantity import decode_quantity
from kubeforge._api.machinery.selectors import label_set_matches
from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._client.errors import Conflict, NotFound
from kubeforge._cluster.controllers._facts import Facts
from kubeforge._cluster.controllers._nodeaffinity import node_selector_matches
from kubeforge._cluster.controllers._volumes import PV, PVC, index_pods_by_claim, pods_using
from kubeforge._cluster.controllers.volumebinding import (
    BIND_TIMEOUT_SECONDS,
    BindingPlan,
    VolumeBinding,
)
from kubeforge._cluster.staticpods import is_mirror_pod
from kubeforge._runtime.handler import Queue
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result
from kubeforge._runtime.store import Store

__all__ = ["SCHEDULER_NAME", "Scheduler", "resource_amount", "setup"]

log = logging.getLogger("kubeforge.scheduler")

POD = "v1/Pod"
NODE = "v1/Node"
SCHEDULER_NAME = "default-scheduler"
# Cache indexes: the node a pod occupies (bound and not finished), and pods to schedule.
NODE_INDEX = "kubeforge.dev/occupied-node"
MIRROR_INDEX = "kubeforge.dev/mirror-pod-node"
PENDING_INDEX = "kubeforge.dev/unscheduled"
RETRY_SECONDS = 30.0
# How often a pod whose node is chosen looks again at its claims' binding (PreBind's poll).
VOLUME_POLL_SECONDS = 2.0
TERMINAL = ("Succeeded", "Failed")
RESOURCES = ("cpu", "memory")

UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NO_NODES = "no nodes available to schedule pods"


def resource_amount(value: Any) -> Decimal:
    """A resource quantity (`100m`, `1.5Gi`, `2`) as the scheduler counts it; 0 when it is
    not one."""
    parsed = decode_quantity(value)
    return parsed if parsed is not None else Decimal(0)


# -- reading pods and nodes ------------------------------------------------------------------


def wants_scheduling(pod: Mapping[str, Any]) -> bool:
    """Whether this scheduler should place the pod now."""
    spec = spec_of(pod)
    if spec.get("nodeName") or spec.get("schedulingGates"):
        return False
    if (spec.get("schedulerName") or SCHEDULER_NAME) != SCHEDULER_NAME:
        return False
    if is_deleting(pod):
        return False
    return status_of(pod).get("phase") not in TERMINAL


def _occupied_node(pod: Mapping[str, Any]) -> Iterable[str]:
    node = spec_of(pod).get("nodeName")
    if node and status_of(pod).get("phase") not in TERMINAL:
        return (str(node),)
    return ()


def _mirror_on_node(pod: Mapping[str, Any]) -> Iterable[str]:
    return _occupied_node(pod) if is_mirror_pod(pod) else ()


def _pending(pod: Mapping[str, Any]) -> Iterable[str]:
    return ("true",) if wants_scheduling(pod) else ()


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """The cpu and memory a pod needs on a node: its containers' (and sidecars') requests,
    at least the largest init container's, plus its overhead."""
    spec = spec_of(pod)

    def requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
        resources = container.get("resources") or {}
        wanted = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        return {r: resource_amount(wanted.get(r, limits.get(r, 0))) for r in RESOURCES}

    total = dict.fromkeys(RESOURCES, Decimal(0))
    inits = spec.get("initContainers") or []
    sidecars = [c for c in inits if c.get("restartPolicy") == "Always"]
    for container in [*(spec.get("containers") or []), *sidecars]:
        for resource, amount in requests(container).items():
            total[resource] += amount
    for container in inits:
        if container.get("restartPolicy") != "Always":
            for resource, amount in requests(container).items():
                total[resource] = max(total[resource], amount)
    for resource, amount in (spec.get("overhead") or {}).items():
        if resource in total:
            total[resource] += resource_amount(amount)
    return total


def tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """Whether one of the tolerations covers the taint (upstream's ToleratesTaint)."""
    for toleration in tolerations:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        if key and key != taint.get("key"):
            continue
        operator = toleration.get("operator") or "Equal"
        if operator == "Exists":
            return True
        if operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def matches_node_affinity(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """The pod's nodeSelector and required node affinity against the node."""
    meta = node.get("metadata") or {}
    labels: Mapping[str, str] = meta.get("labels") or {}
    spec = spec_of(pod)
    if not label_set_matches(spec.get("nodeSelector") or {}, labels):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or None
    if required is None:
        return True
    return node_selector_matches(required, node)


def _readiness_taint(node: Mapping[str, Any]) -> dict[str, str] | None:
    """The taint the node lifecycle controller puts on a node that is not Ready."""
    for condition in status_of(node).get("conditions") or []:
        if condition.get("type") == "Ready":
            status = condition.get("status")
            if status == "True":
                return None
            key = "not-ready" if status == "False" else "unreachable"
            return {"key": f"node.kubernetes.io/{key}", "effect": "NoSchedule"}
    return {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def _allocatable(node: Mapping[str, Any], resource: str) -> Decimal:
    status = status_of(node)
    value = (status.get("allocatable") or {}).get(resource)
    if value is None:
        value = (status.get("capacity") or {}).get(resource)
    return resource_amount(value) if value is not None else Decimal(-1)


_UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class _NodeFacts:
    """What the scheduler reads of a Node for every pod, worked out once per change of it."""

    __slots__ = ("allocatable", "deleting", "max_pods", "name", "node", "taints", "unschedulable")

    def __init__(self, node: dict[str, Any]) -> None:
        self.node = node
        self.name = str(node["metadata"]["name"])
        self.deleting = is_deleting(node)
        spec = spec_of(node)
        self.unschedulable = bool(spec.get("unschedulable"))
        # The taints that keep pods off: the node's own, and the one the node lifecycle
        # controller would put on a node that is not Ready.
        taints = [
            t for t in spec.get("taints") or () if t.get("effect") in ("NoSchedule", "NoExecute")
        ]
        readiness = _readiness_taint(node)
        if readiness is not None:
            taints.append(readiness)
        self.taints = taints
        self.max_pods = _allocatable(node, "pods")
        self.allocatable = {resource: _allocatable(node, resource) for resource in RESOURCES}


def fit_message(total: int, reasons: Counter[str], preemption: str) -> str:
    """Upstream's FitError text: reasons counted over nodes, sorted, and what preemption
    could do."""
    parts = ", ".join(sorted(f"{count} {reason}" for reason, count in reasons.items()))
    return f"0/{total} nodes are available: {parts}. preemption: {preemption}"


def _loads(
    store: Store,
    nodes: Iterable[_NodeFacts],
    assumed: Mapping[str, Sequence[tuple[str, dict[str, Decimal]]]],
) -> dict[str, tuple[int, int]]:
    """For each node, how many pods it runs (with the pods bound to it that the cache has not
    seen bound yet, `assumed`), and its rank: the same without the control plane's mirror
    pods, which take room but do not count against the node in the ranking (which stands for
    kube-scheduler's scoring by requested resources). Counted from the indexes at once:
    this is asked of every node for every pod."""
    occupied = store.counts_under(NODE_INDEX)
    mirrors = store.counts_under(MIRROR_INDEX)
    loads: dict[str, tuple[int, int]] = {}
    for node in nodes:
        name = node.name
        load = occupied.get(name, 0)
        here = assumed.get(name)
        if here:
            load += sum(1 for key, _ in here if not store.is_under(NODE_INDEX, name, key))
        loads[name] = (load, load - mirrors.get(name, 0))
    return loads


# -- the controller --------------------------------------------------------------------------


class _RoomFreed:
    """Pod events that free room on a node (a bound pod finishing, being deleted or gone)
    send every pending pod back to the scheduler."""

    def __init__(self, pending: Callable[[], list[Request]]) -> None:
        self.pending = pending

    def _requeue(self, queue: Queue) -> None:
        for request in self.pending():
            queue.add(request)

    def create(self, obj: Mapping[str, Any], queue: Queue, initial: bool) -> None:
        return None

    def update(self, old: Mapping[str, Any], new: Mapping[str, Any], queue: Queue) -> None:
        if not spec_of(new).get("nodeName"):
            return
        was_active = bool(_occupied_node(old)) and not is_deleting(old)
        if was_active and (not _occupied_node(new) or is_deleting(new)):
            self._requeue(queue)

    def delete(self, obj: Mapping[str, Any], queue: Queue) -> None:
        if _occupied_node(obj):
            self._requeue(queue)


class Scheduler(Reconciler):
    """Binds pending pods to the nodes that fit them best."""

    def __init__(self, manager: Manager) -> None:
        self.cache = manager.cache
        # A binding is a subresource only the live client creates.
        self.api = manager.api_reader
        # kube-scheduler records through the events.k8s.io recorder, which has no correlator.
        self.events = manager.event_recorder(SCHEDULER_NAME, correlate=False)
        # Pods bound but not yet seen bound in the cache: key -> (node, requests).
        self._assumed: dict[str, tuple[str, dict[str, Decimal]]] = {}
        # Pods whose node is chosen while their claims bind: key -> (node, since, plan).
        self._volume_wait: dict[str, tuple[str, float, BindingPlan]] = {}
        self.volumes = VolumeBinding(manager.client)
        self._manager = manager
        self._turn = 0
        # What the scheduler reads of each Node for every pod, once per change of the Node.
        self._node_facts = Facts(self.cache, NODE, _NodeFacts)

    # mapping events to pods -------------------------------------------------------------------

    def pending_requests(self, _obj: Any = None) -> list[Request]:
        """Every pod waiting to be scheduled (something that may let them fit changed)."""
        store = self.cache.informer_for(POD).store
        requests = []
        for key in store.by_index(PENDING_INDEX, "true"):
            namespace, _, name = key.rpartition("/")
            requests.append(Request(namespace, name))
        return requests

    def claim_users(self, claim: Mapping[str, Any]) -> list[Request]:
        """The pods waiting to be scheduled that use a claim (it may now let them fit)."""
        meta = claim.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        return [
            Request(namespace, str(pod["metadata"]["name"]))
            for pod in pods_using(self._manager, namespace, name)
            if wants_scheduling(pod)
        ]

    # scheduling -------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result | None:
        key = str(request)
        try:
            pod = await self.client.get(POD, request.name, namespace=request.namespace)
        except NotFound:
            self._forget(key)
            return None
        if not wants_scheduling(pod):
            self._forget(key)
            return None
        waiting = self._volume_wait.get(key)
        if waiting is not None:
            return await self._finish_volume_binding(pod, request, waiting)
        if key in self._assumed:
            return None  # bound already; the cache has not caught up yet
        nodes = [n for n in self._node_facts.all() if not n.deleting]
        if not nodes:
            await self._unschedulable(pod, NO_NODES)
            return Result(requeue_after=RETRY_SECONDS)
        claims, problem = await self.volumes.prefilter(pod)
        if problem:
            # As upstream's PreFilter: the same reason on every node, preemption no help.
            preempt = self._preemption(pod, len(nodes), Counter({NOT_HELPFUL: len(nodes)}))
            message = f"0/{len(nodes)} nodes are available: {problem}. preemption: {preempt}"
            await self._unschedulable(pod, message)
            return Result(requeue_after=RETRY_SECONDS)
        volumes = list(await self.client.list(PV)) if claims.delayed else []
        requests = pod_requests(pod)
        reasons: Counter[str] = Counter()
        preemption: Counter[str] = Counter()
        fits: list[tuple[int, str]] = []
        plans: dict[str, BindingPlan] = {}
        assumed = self._assumed_by_node()
        spec = spec_of(pod)
        tolerations = spec.get("tolerations") or []
        affinity = bool(spec.get("nodeSelector") or spec.get("affinity"))
        # The least loaded nodes first: once one fits, only nodes as loaded can win, so the
        # more loaded ones need no checking (every node is checked when none fits).
        store = self.cache.informer_for(POD).store
        loads = _loads(store, nodes, assumed)
        for node in sorted(nodes, key=lambda n: (loads[n.name][1], n.name)):
            name = node.name
            load, rank = loads[name]
            if fits and rank > fits[0][0]:
                break
            problems, resolvable = self._check(
                pod, node, requests, load, assumed.get(name, ()), tolerations, affinity
            )
            if not problems and not claims.empty:
                problems, plans[name] = await self.volumes.filter(claims, node.node, volumes)
                resolvable = not problems
            if problems:
                reasons.update(problems)
                preemption[NO_VICTIMS if resolvable else NOT_HELPFUL] += 1
            else:
                fits.append((rank, name))
        if not fits:
            preempt = self._preemption(pod, len(nodes), preemption)
            await self._unschedulable(pod, fit_message(len(nodes), reasons, preempt))
            return Result(requeue_after=RETRY_SECONDS)
        node_name = self._choose(fits)
        plan = plans.get(node_name)
        if plan is not None and not plan.empty:
            try:
                await self.volumes.bind(plan, node_name)
            except (Conflict, NotFound):
                return Result(requeue=True)  # a claim or volume changed: choose again
            self._assumed[key] = (node_name, requests)
            self._volume_wait[key] = (node_name, clock.monotonic(), plan)
            return Result(requeue_after=VOLUME_POLL_SECONDS)
        return await self._bind(pod, request, node_name, requests)

    def _forget(self, key: str) -> None:
        self._assumed.pop(key, None)
        self._volume_wait.pop(key, None)

    @staticmethod
    def _preemption(pod: Mapping[str, Any], total: int, preemption: Counter[str]) -> str:
        """What preemption could do, in upstream's words."""
        if spec_of(pod).get("preemptionPolicy") == "Never":
            return "not eligible due to preemptionPolicy=Never."
        counted = ", ".join(sorted(f"{n} {r}" for r, n in preemption.items()))
        return f"0/{total} nodes are available: {counted}."

    async def _finish_volume_binding(
        self, pod: Mapping[str, Any], request: Request, waiting: tuple[str, float, BindingPlan]
    ) -> Result | None:
        """PreBind's wait: bind the pod once its claims are bound, or start over."""
        key = str(request)
        node_name, since, plan = waiting
        try:
            node = await self.client.get(NODE, node_name)
            outcome = await self.volumes.check(pod, plan, node)
        except NotFound:
            outcome = f'node "{node_name}" not found'
        if outcome is None and clock.monotonic() - since < BIND_TIMEOUT_SECONDS:
            return Result(requeue_after=VOLUME_POLL_SECONDS)
        requests = self._assumed.get(key, (node_name, pod_requests(pod)))[1]
        self._forget(key)
        if outcome == "":
            return await self._bind(pod, request, node_name, requests)
        why = outcome or "timed out waiting for the condition"
        message = f'running PreBind plugin "VolumeBinding": binding volumes: {why}'
        await self._unschedulable(pod, message, reason="SchedulerError")
        return Result(requeue_after=VOLUME_POLL_SECONDS)

    async def _bind(
        self,
        pod: Mapping[str, Any],
        request: Request,
        node_name: str,
        requests: dict[str, Decimal],
    ) -> Result | None:
        """Bind the pod to the node through `pods/binding`."""
        try:
            await self.api.create_subresource(
                POD,
                request.name,
                "binding",
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": request.name, "namespace": request.namespace},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
                },
                namespace=request.namespace,
            )
        except (Conflict, NotFound):
            return None  # bound by someone else, being deleted, or gone
        self._assumed[str(request)] = (node_name, requests)
        # As schedule_one.go logs each binding (at verbosity 2).
        log.info("Successfully bound pod to node", extra={"pod": str(request), "node": node_name})
        self.events.record(
            pod,
            "Normal",
            "Scheduled",
            f"Successfully assigned {request.namespace}/{request.name} to {node_name}",
        )
        return None

    def _assumed_by_node(self) -> dict[str, list[tuple[str, dict[str, Decimal]]]]:
        """Pods bound but not yet seen bound, by node: (key, requests). Those the cache now
        shows on their node, or no longer has, are forgotten here, so the list holds only
        the bindings in flight however many pods were scheduled."""
        store = self.cache.informer_for(POD).store
        by_node: dict[str, list[tuple[str, dict[str, Decimal]]]] = {}
        for key, (target, wanted) in list(self._assumed.items()):
            if key not in self._volume_wait and (
                key not in store or store.is_under(NODE_INDEX, target, key)
            ):
                del self._assumed[key]
                continue
            by_node.setdefault(target, []).append((key, wanted))
        return by_node

    def _check(
        self,
        pod: Mapping[str, Any],
        node: _NodeFacts,
        requests: Mapping[str, Decimal],
        load: int,
        assumed_here: Sequence[tuple[str, dict[str, Decimal]]],
        tolerations: Sequence[Mapping[str, Any]],
        affinity: bool,
    ) -> tuple[list[str], bool]:
        """Why the pod does not fit the node (empty: it fits), and whether removing other
        pods could help. `load`: the pods the node runs (see _loads, and `assumed_here`);
        `tolerations` are the pod's; `affinity`: whether it has a node selector or affinity
        to check."""
        if node.unschedulable and not tolerates(tolerations, _UNSCHEDULABLE_TAINT):
            return [UNSCHEDULABLE], False
        for taint in node.taints:
            if not tolerates(tolerations, taint):
                text = f"{{{taint.get('key', '')}: {taint.get('value') or ''}}}"
                return [f"node(s) had untolerated taint {text}"], False
        if affinity and not matches_node_affinity(pod, node.node):
            return [AFFINITY], False
        problems = []
        if node.max_pods >= 0 and load + 1 > node.max_pods:
            problems.append(TOO_MANY_PODS)
        if any(requests.values()):
            name = node.name
            store = self.cache.informer_for(POD).store
            used = dict.fromkeys(RESOURCES, Decimal(0))
            for key in store.keys_under(NODE_INDEX, name):
                other = store.get(key)
                if other is not None:
                    for resource, amount in pod_requests(other).items():
                        used[resource] += amount
            for key, wanted in assumed_here:
                if not store.is_under(NODE_INDEX, name, key):
                    for resource, amount in wanted.items():
                        used[resource] += amount
            for resource in RESOURCES:
                free = node.allocatable[resource]
                if requests[resource] and free >= 0 and used[resource] + requests[resource] > free:
                    problems.append(f"Insufficient {resource}")
        return problems, True

    def _choose(self, fits: list[tuple[int, str]]) -> str:
        """The least loaded node; equally loaded ones take turns."""
        fewest = min(load for load, _ in fits)
        candidates = sorted(name for load, name in fits if load == fewest)
        choice = candidates[self._turn % len(candidates)]
        self._turn += 1
        return choice

    async def _unschedulable(
        self, pod: Mapping[str, Any], message: str, reason: str = "Unschedulable"
    ) -> None:
        meta = pod["metadata"]
        conditions = list(status_of(pod).get("conditions") or [])
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        self.events.record(pod, "Warning", "FailedScheduling", message)
        if (
            current is not None
            and current.get("status") == "False"
            and current.get("reason") == reason
            and current.get("message") == message
        ):
            return
        since = now_rfc3339()
        if current is not None and current.get("status") == "False":
            since = current.get("lastTransitionTime") or since
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": since,
            "reason": reason,
            "message": message,
        }
        conditions = [c for c in conditions if c.get("type") != "PodScheduled"] + [condition]
        try:
            await self.client.patch_status(
                POD,
                meta["name"],
                {"status": {"conditions": conditions}},
                namespace=meta.get("namespace"),
            )
        except NotFound:
            pass


def setup(manager: Manager) -> None:
    """Register the scheduler with `manager`."""
    manager.cache.index_field(POD, NODE_INDEX, _occupied_node)
    manager.cache.index_field(POD, MIRROR_INDEX, _mirror_on_node)
    manager.cache.index_field(POD, PENDING_INDEX, _pending)
    index_pods_by_claim(manager)
    scheduler = Scheduler(manager)
    (
        manager.controller()
        .named("scheduler")
        .for_(POD)
        .watches(NODE, scheduler.pending_requests)
        .watches(POD, _RoomFreed(scheduler.pending_requests))
        # Claims binding (or appearing), and volumes appearing, may let pods fit.
        .watches(PVC, scheduler.claim_users)
        .watches(PV, scheduler.pending_requests)
        # One pod at a time, as kube-scheduler binds them: each placement sees the last.
        .with_options(max_concurrent_reconciles=1)
        .complete(scheduler)
    )
