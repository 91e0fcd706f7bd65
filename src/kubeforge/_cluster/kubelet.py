"""A simulated node: what the kubelet does, without a container runtime.

`SimulatedNode` registers its Node (capacity, conditions, addresses, node info), renews
its Lease in `kube-node-lease` every 10 s (five times per node monitor grace period when
that is shorter than 50 s), gives each pod bound to it an IP of its pod
subnet, and runs those pods, each with a `PodWorker` (podworker.py) from its first sight
to its removal. It watches its own Node, as a kubelet does, for the health it is asked to
simulate (nodehealth.py): reporting NotReady, or losing contact with the API server. The
control-plane node also keeps the mirror pods of its static pods (staticpods.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import logging
import platform
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from kubeforge import clock
from kubeforge._api.machinery.timestamps import now_micro_time, now_rfc3339, parse_time_or_none
from kubeforge._client.client import Client
from kubeforge._client.errors import AlreadyExists, ApiError, Conflict, NotFound
from kubeforge._cluster.containers import (
    LocalRuntime,
)
from kubeforge._cluster.kubeletwatches import KubeletWatches
from kubeforge._cluster.nodehealth import PROVIDER_PREFIX, NodeHealth, health_of
from kubeforge._cluster.options import ClusterOptions
from kubeforge._cluster.podlogs import PodLogs
from kubeforge._cluster.podworker import FIELD_MANAGER, PodWorker
from kubeforge._cluster.projects import ImageMap
from kubeforge._cluster.staticpods import MirrorPods, is_mirror_pod
from kubeforge._runtime.events import EventRecorder
from kubeforge._runtime.informer import HandlerFuncs

__all__ = ["SimulatedNode"]

log = logging.getLogger("kubeforge.kubelet")

LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40
LEASE_RENEW_SECONDS = 10.0
NODE_STATUS_SECONDS = 300.0  # the kubelet's node status report frequency
# Lease renewals within the node monitor grace period (upstream: 10 s renewals, 50 s grace).
RENEWALS_PER_GRACE_PERIOD = 5
# What a kubelet whose container runtime stopped answering reports (pkg/kubelet/runtime.go).
NOT_READY_REASON = "KubeletNotReady"
NOT_READY_MESSAGE = "container runtime is down"
KUBELET_PORT = 10250
RUNTIME_VERSION = "kubeforge://simulated"
# Nodes' InternalIPs: the n-th node gets NODE_ADDRESS_BASE + n.
NODE_ADDRESS_BASE = ipaddress.ip_address("10.0.0.2")
# The Lease nodes hold while they choose their pod subnet.
ALLOCATION_LOCK = "kubeforge-pod-cidr-allocation"
LOCK_SECONDS = 15.0


def _architecture() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}.get(machine, machine or "amd64")


def _node_subnet(pod_cidr: str, index: int) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """The index-th node's share of the pod CIDR: a /24 (IPv4) or /64 (IPv6)."""
    network = ipaddress.ip_network(pod_cidr, strict=False)
    prefix = max(network.prefixlen, 24 if network.version == 4 else 64)
    count = 2 ** (prefix - network.prefixlen)
    size = 2 ** (network.max_prefixlen - prefix)
    start = int(network.network_address) + (index % count) * size
    return ipaddress.ip_network((start, prefix))


def _age(micro_time: str) -> float:
    """Seconds since a MicroTime (`2024-01-01T00:00:00.000000Z`); large when unreadable."""
    then = parse_time_or_none(micro_time)
    if then is None:
        return float("inf")
    return (clock.now() - then).total_seconds()


# -- the node --------------------------------------------------------------------------------


class SimulatedNode:
    """A node of the development cluster: registers itself and runs the pods bound to it.

    `run()` works until cancelled or `stop()`; `registered` is set once the Node exists.
    `index` picks the node's pod subnet and address (default: the first one free);
    `local` is what running containers as local processes needs (default: the API server
    of `client`, the images of `options.images`). `health` is the health the node simulates
    (nodehealth.py), taken from its Node's annotation. `static_pods` are the manifests of
    the pods it runs by itself, shown as mirror pods (staticpods.py). `watches`: informers
    shared with other nodes (kubeletwatches.py; default: the node's own).
    """

    def __init__(
        self,
        client: Client,
        name: str,
        options: ClusterOptions,
        logs: PodLogs,
        *,
        index: int | None = None,
        labels: Mapping[str, str] | None = None,
        local: LocalRuntime | None = None,
        static_pods: Sequence[Mapping[str, Any]] = (),
        watches: KubeletWatches | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self.options = options
        self.logs = logs
        if local is None:
            server = urlsplit(client.config.server)
            local = LocalRuntime(
                server.hostname or "127.0.0.1", server.port or 443, ImageMap(options.images)
            )
        # Shared by the nodes of a cluster: what local processes need (containers.py).
        self.local = local
        self.index = index
        self.labels = dict(labels or {})
        self.address = ""
        self.registered = asyncio.Event()
        self.events = EventRecorder(client, controller="kubelet", instance=name)
        self.boot_id = str(uuid.uuid4())
        self._subnet: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
        self._ips: dict[str, str] = {}  # pod uid -> IP
        self._used: set[str] = set()
        self._next_host = 2
        self._workers: dict[str, PodWorker] = {}
        # Its own watches unless the cluster's nodes share theirs (kubeletwatches.py).
        self._own_watches = watches is None
        self._watches = watches if watches is not None else KubeletWatches.of_node(client, name)
        self._stopping = asyncio.Event()
        self._finished = asyncio.Event()
        self._running = False
        self._node_uid = ""
        self._closing: set[asyncio.Task[None]] = set()
        self._spawned: set[asyncio.Future[None]] = set()
        self.health: NodeHealth = "ready"
        # Cleared while the node is cut off from the API server: its writes wait for it.
        self._reachable = asyncio.Event()
        self._reachable.set()
        self._wanted: NodeHealth = "ready"
        self._applied: NodeHealth = "ready"
        self._health_lock = asyncio.Lock()
        self._health_applied = asyncio.Condition()
        # Node condition type -> (status, lastTransitionTime) as last posted.
        self._transitions: dict[str, tuple[str, str]] = {}
        self._renew_seconds = min(
            LEASE_RENEW_SECONDS, options.node_monitor_grace_period / RENEWALS_PER_GRACE_PERIOD
        )
        self.mirror_pods = MirrorPods(self, static_pods) if static_pods else None

    # running ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """Register the node, then keep its lease and its pods until cancelled or stopped."""
        self._running = True
        self._stopping.clear()
        self._finished.clear()
        background: list[asyncio.Task[None]] = []
        subscribed = False
        try:
            await self._register()
            self.registered.set()
            if self.mirror_pods is not None:
                self.spawn(self.mirror_pods.sync())
            # The kubelet's informers: its pods, and its own Node.
            self._watches.subscribe(
                self.name,
                HandlerFuncs(
                    add=lambda pod, _initial: self._on_pod(pod),
                    update=lambda _old, pod: self._on_pod(pod),
                    delete=self._on_delete,
                ),
                HandlerFuncs(
                    add=lambda node, _initial: self._on_node(node),
                    update=lambda _old, node: self._on_node(node),
                ),
            )
            subscribed = True
            background.append(asyncio.create_task(self._lease_loop()))
            background.append(asyncio.create_task(self._status_loop()))
            await self._stopping.wait()
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            if subscribed:
                self._watches.unsubscribe(self.name)
            if self._own_watches:
                await self._watches.stop()
            for spawned in list(self._spawned):
                spawned.cancel()
            await asyncio.gather(*self._spawned, return_exceptions=True)
            workers = list(self._workers.values())
            self._workers.clear()
            await asyncio.gather(
                *(w.close() for w in workers), *self._closing, return_exceptions=True
            )
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.events.flush(), 2.0)
            self._running = False
            self._finished.set()

    async def stop(self) -> None:
        """End `run()`: stop every container (the pods stay as they are on the server)."""
        if not self._running:
            return
        self._stopping.set()
        await self._finished.wait()

    # pods -------------------------------------------------------------------------------------

    @property
    def node_uid(self) -> str:
        """The uid of the node's Node (once registered)."""
        return self._node_uid

    def spawn(self, work: Awaitable[None]) -> None:
        """Run `work` alongside the node (until it stops), logging a failure."""
        task = asyncio.ensure_future(work)
        self._spawned.add(task)
        task.add_done_callback(self._work_done)

    def _work_done(self, task: asyncio.Future[None]) -> None:
        self._spawned.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("node %s: %r", self.name, task.exception())

    def _on_pod(self, pod: dict[str, Any]) -> None:
        if not self._reachable.is_set():
            return  # unseen while cut off; caught up on when back (_catch_up)
        if is_mirror_pod(pod):
            # The kubelet's pod manager keeps mirror pods apart: they stand for static pods.
            if self.mirror_pods is not None:
                self.mirror_pods.observe(pod)
            else:
                self.spawn(self._delete_orphan(pod))
            return
        uid = str(pod["metadata"].get("uid") or "")
        worker = self._workers.get(uid)
        if worker is None:
            worker = PodWorker(self, pod)
            self._workers[uid] = worker
            worker.start()
        elif not worker.done:
            worker.observe(pod)

    def cached(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """An object pods refer to (a ConfigMap, a Secret) from the node's watch-based
        caches, when they have it; None: read it from the API server."""
        return self._watches.cached(kind, namespace, name)

    def worker(self, uid: str) -> PodWorker | None:
        """The worker of a pod running here (None once it is gone)."""
        worker = self._workers.get(uid)
        return None if worker is None or worker.closed else worker

    def volume_files(self, namespace: str, name: str) -> dict[str, dict[str, bytes]]:
        """The projected volumes of a pod running here: volume -> file path -> content."""
        for worker in self._workers.values():
            if worker.namespace == namespace and worker.name == name:
                return worker.volumes
        return {}

    async def _delete_orphan(self, pod: dict[str, Any]) -> None:
        """Delete a mirror pod of no static pod here (the kubelet's HandlePodCleanups)."""
        meta = pod["metadata"]
        with contextlib.suppress(NotFound, Conflict):
            await self.client.delete(
                "v1/Pod",
                meta["name"],
                namespace=meta.get("namespace") or "",
                grace_period_seconds=0,
                preconditions={"uid": meta.get("uid")},
            )

    def _on_delete(self, pod: dict[str, Any]) -> None:
        if not self._reachable.is_set():
            return
        if is_mirror_pod(pod):
            # The static pod runs on: its containers and log stay.
            if self.mirror_pods is not None:
                self.mirror_pods.deleted(pod)
            return
        meta = pod["metadata"]
        worker = self._workers.pop(str(meta.get("uid") or ""), None)
        if worker is not None:
            worker.closed = True  # from now on its output goes nowhere
            task = asyncio.ensure_future(worker.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        self.logs.drop(str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    def allocate_ip(self, uid: str) -> str:
        subnet = self._subnet
        assert subnet is not None
        hosts = subnet.num_addresses - 2
        for _ in range(hosts):
            host = self._next_host
            self._next_host = 2 + (self._next_host - 1) % hosts
            ip = str(subnet.network_address + host)
            if ip not in self._used:
                self._used.add(ip)
                self._ips[uid] = ip
                return ip
        raise RuntimeError(f"node {self.name} has no pod IP left")

    def reserve_ip(self, uid: str, ip: str) -> bool:
        subnet = self._subnet
        try:
            inside = subnet is not None and ipaddress.ip_address(ip) in subnet
        except ValueError:
            return False
        if not inside or ip in self._used:
            return False
        self._used.add(ip)
        self._ips[uid] = ip
        return True

    def release_ip(self, uid: str) -> None:
        ip = self._ips.pop(uid, None)
        if ip is not None:
            self._used.discard(ip)

    # simulated health (nodehealth.py) ------------------------------------------------------

    async def online(self) -> None:
        """Return once the node can reach the API server (at once unless it is cut off)."""
        await self._reachable.wait()

    async def wait_for_health(self, health: NodeHealth) -> None:
        """Return once the node simulates `health`: its status posted (ready, not-ready), or
        its contact with the API server cut (unreachable)."""
        async with self._health_applied:
            await self._health_applied.wait_for(lambda: self._applied == health)

    def _adopt_health(self, health: NodeHealth) -> None:
        """Start as the Node's annotation says (a node restarted while taken down)."""
        self.health = self._wanted = self._applied = health
        if health == "unreachable":
            self._reachable.clear()

    def _on_node(self, node: dict[str, Any]) -> None:
        wanted = health_of(node)
        if wanted == self._wanted:
            return
        self._wanted = wanted
        task = asyncio.ensure_future(self._apply_health())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _apply_health(self) -> None:
        async with self._health_lock:
            health, previous = self._wanted, self.health
            if health == previous:
                return
            self.health = health
            node_ref = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": self.name, "uid": self._node_uid},
            }
            if health == "unreachable":
                self._reachable.clear()
                log.info("node %s: cut off from the API server", self.name)
            else:
                if previous == "unreachable":
                    # The API server saw no status meanwhile (the node lifecycle controller
                    # set it Unknown): every condition moves anew.
                    self._transitions.clear()
                    self._reachable.set()
                    self._catch_up()
                await self._post_status()
                # As pkg/kubelet/nodestatus/setters.go's ReadyCondition records them.
                status = "NodeNotReady" if health == "not-ready" else "NodeReady"
                self.events.record(
                    node_ref, "Normal", status, f"Node {self.name} status is now: {status}"
                )
                if health == "ready" or previous == "unreachable":
                    # The node lifecycle controller marked the pods not ready meanwhile: the
                    # status manager puts back what the kubelet knows of them.
                    for worker in self._workers.values():
                        worker.republish()
                    if self.mirror_pods is not None:
                        self.mirror_pods.republish()
            self._applied = health
        async with self._health_applied:
            self._health_applied.notify_all()

    def _catch_up(self) -> None:
        """Act on what happened to the node's pods while it was cut off: pods bound to it
        start, deleted ones stop, and the others are seen as they are now."""
        present = set()
        for pod in self._watches.pods_of(self.name):
            present.add(str(pod["metadata"].get("uid") or ""))
            self._on_pod(pod)
        for uid, worker in list(self._workers.items()):
            if uid not in present:
                self._on_delete(worker.pod)
        if self.mirror_pods is not None:
            self.spawn(self.mirror_pods.sync())

    async def _post_status(self) -> None:
        """Write the node's status now, retrying a failure a few times."""
        delay = 0.1
        for attempt in range(5):
            try:
                await self._write_node_status()
                return
            except (ApiError, OSError, TimeoutError) as exc:
                if attempt == 4:
                    log.warning("node %s: status not written: %s", self.name, exc)
                    return
                await clock.sleep(delay)
                delay *= 2

    # the Node object --------------------------------------------------------------------------

    async def _register(self) -> None:
        delay = 0.2
        while True:
            try:
                await self._register_once()
                return
            except (ApiError, OSError, TimeoutError) as exc:
                log.warning("node %s: registration failed (%s); retrying", self.name, exc)
                # The machine's time: a cluster starting waits for this, clock or not.
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _choose_index(self, existing: Mapping[str, Any] | None) -> int:
        """The node's own subnet when it has one, else the first no other node uses."""
        nodes = await self.client.list("v1/Node")
        taken = {
            (n.get("spec") or {}).get("podCIDR")
            for n in nodes
            if n["metadata"]["name"] != self.name
        }
        own = ((existing or {}).get("spec") or {}).get("podCIDR")
        network = ipaddress.ip_network(self.options.pod_cidr, strict=False)
        prefix = max(network.prefixlen, 24 if network.version == 4 else 64)
        for index in range(min(2 ** (prefix - network.prefixlen), 65536)):
            cidr = str(_node_subnet(self.options.pod_cidr, index))
            if cidr == own or (own is None and cidr not in taken):
                return index
        return 0

    async def _register_once(self) -> None:
        if self.index is not None:
            await self._register_as(self.index)
            return
        # Nodes starting together must not pick the same subnet: choosing and claiming
        # it (in the Node's spec.podCIDR) happens under a lock.
        await self._locked(ALLOCATION_LOCK, self._register_as)

    async def _locked(self, name: str, action: Callable[[int | None], Awaitable[None]]) -> None:
        """Run `action` while holding a Lease named `name` as a mutex."""
        kind = "coordination.k8s.io/v1/Lease"
        while True:
            now = now_micro_time()
            lease = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
                "spec": {
                    "holderIdentity": self.name,
                    "leaseDurationSeconds": int(LOCK_SECONDS),
                    "acquireTime": now,
                    "renewTime": now,
                },
            }
            try:
                await self.client.create(lease)
                break
            except AlreadyExists:
                pass
            with contextlib.suppress(NotFound, Conflict):
                held = await self.client.get(kind, name, namespace=LEASE_NAMESPACE)
                renewed = str((held.get("spec") or {}).get("renewTime") or "")
                if _age(renewed) > LOCK_SECONDS:
                    # Its holder died holding it.
                    await self.client.delete(
                        kind,
                        name,
                        namespace=LEASE_NAMESPACE,
                        preconditions={"resourceVersion": held["metadata"]["resourceVersion"]},
                    )
                    continue
            # The machine's time: waiting for another node to finish, not for time to pass.
            await asyncio.sleep(0.05)
        try:
            await action(None)
        finally:
            with contextlib.suppress(NotFound):
                await self.client.delete(kind, name, namespace=LEASE_NAMESPACE)

    async def _register_as(self, index: int | None) -> None:
        existing: dict[str, Any] | None = None
        with contextlib.suppress(NotFound):
            existing = await self.client.get("v1/Node", self.name)
        if index is None:
            index = await self._choose_index(existing)
        self._subnet = _node_subnet(self.options.pod_cidr, index)
        self.address = str(NODE_ADDRESS_BASE + index)
        cidr = str(self._subnet)
        labels = {
            "beta.kubernetes.io/arch": _architecture(),
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": _architecture(),
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            **self.labels,
        }
        metadata: dict[str, Any] = {
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        }
        if existing is not None:
            self._adopt_health(health_of(existing))
        if existing is None:
            node: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": self.name, **metadata},
                "spec": {
                    "podCIDR": cidr,
                    "podCIDRs": [cidr],
                    "providerID": f"{PROVIDER_PREFIX}{self.name}",
                },
            }
            try:
                stored = await self.client.create(node)
            except AlreadyExists:
                stored = await self.client.get("v1/Node", self.name)
        else:
            patch: dict[str, Any] = {"metadata": metadata}
            if not (existing.get("spec") or {}).get("podCIDR"):
                patch["spec"] = {"podCIDR": cidr, "podCIDRs": [cidr]}
            stored = await self.client.patch("v1/Node", self.name, patch)
        self._node_uid = str(stored["metadata"].get("uid") or "")
        if self._reachable.is_set():
            await self._write_node_status()
        node_ref = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "uid": self._node_uid},
        }
        self.events.record(node_ref, "Normal", "Starting", "Starting kubelet.")

    def _node_status(self) -> dict[str, Any]:
        now = now_rfc3339()
        options = self.options
        resources = {
            "cpu": options.node_cpu,
            "memory": options.node_memory,
            "pods": str(options.node_max_pods),
            "ephemeral-storage": "100Gi",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
        }

        def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
            previous = self._transitions.get(kind)
            since = previous[1] if previous is not None and previous[0] == status else now
            self._transitions[kind] = (status, since)
            return {
                "type": kind,
                "status": status,
                "lastHeartbeatTime": now,
                "lastTransitionTime": since,
                "reason": reason,
                "message": message,
            }

        if self.health == "not-ready":
            ready = condition("Ready", "False", NOT_READY_REASON, NOT_READY_MESSAGE)
        else:
            ready = condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")

        machine = hashlib.sha256(self.name.encode()).hexdigest()[:32]
        return {
            "capacity": resources,
            "allocatable": dict(resources),
            "conditions": [
                condition(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                condition(
                    "DiskPressure",
                    "False",
                    "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure",
                ),
                condition(
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                ),
                ready,
            ],
            "addresses": [
                {"type": "InternalIP", "address": self.address},
                {"type": "Hostname", "address": self.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": KUBELET_PORT}},
            "nodeInfo": {
                "machineID": machine,
                "systemUUID": str(uuid.UUID(machine)),
                "bootID": self.boot_id,
                "kernelVersion": platform.release(),
                "osImage": "kubeforge simulated node",
                "containerRuntimeVersion": RUNTIME_VERSION,
                "kubeletVersion": options.kubelet_version,
                "kubeProxyVersion": options.kubelet_version,
                "operatingSystem": "linux",
                "architecture": _architecture(),
            },
        }

    async def _write_node_status(self) -> None:
        await self.client.patch_status(
            "v1/Node", self.name, {"status": self._node_status()}, field_manager=FIELD_MANAGER
        )

    async def _status_loop(self) -> None:
        while True:
            await clock.sleep(NODE_STATUS_SECONDS)
            await self._reachable.wait()
            try:
                await self._write_node_status()
            except (ApiError, OSError, TimeoutError) as exc:
                log.warning("node %s: status not written: %s", self.name, exc)

    # the Lease --------------------------------------------------------------------------------

    async def _lease_loop(self) -> None:
        while True:
            await self._reachable.wait()
            try:
                await self._renew_lease()
            except (ApiError, OSError, TimeoutError) as exc:
                log.warning("node %s: lease not renewed: %s", self.name, exc)
            await clock.sleep(self._renew_seconds)

    async def _renew_lease(self) -> None:
        spec = {
            "holderIdentity": self.name,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": now_micro_time(),
        }
        kind = "coordination.k8s.io/v1/Lease"
        try:
            await self.client.patch(kind, self.name, {"spec": spec}, namespace=LEASE_NAMESPACE)
        except NotFound:
            lease = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": self.name,
                    "namespace": LEASE_NAMESPACE,
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Node",
                            "name": self.name,
                            "uid": self._node_uid,
                        }
                    ],
                },
                "spec": spec,
            }
            with contextlib.suppress(AlreadyExists):
                await self.client.create(lease)
