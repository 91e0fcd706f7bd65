"""A simulated node: what the kubelet does, without containers.

`SimulatedNode` registers its Node (capacity, conditions, addresses, node info), renews
its Lease in `kube-node-lease` every 10 s, and runs the pods bound to it: each pod gets a
worker that moves it from Pending through Running to Succeeded or Failed, with the status
a kubelet reports (conditions, IPs, container states, restart counts), runs init
containers first, restarts containers as the restart policy says (with a short
CrashLoopBackOff), writes their output to `PodLogs`, and on deletion stops the containers
and removes the pod with a zero grace period. What a container does comes from
`commands.py`: simulated by default, a local process with `ClusterOptions.exec_pods`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import ipaddress
import logging
import platform
import secrets
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from kubeforge.client.client import Client
from kubeforge.client.errors import AlreadyExists, ApiError, Conflict, NotFound
from kubeforge.cluster.commands import (
    ContainerProcess,
    StartError,
    Timing,
    container_argv,
    expand_references,
)
from kubeforge.cluster.options import (
    RUN_SECONDS_ANNOTATION,
    START_SECONDS_ANNOTATION,
    ClusterOptions,
)
from kubeforge.cluster.podlogs import PodLogs
from kubeforge.runtime.events import EventRecorder
from kubeforge.runtime.informer import HandlerFuncs, Informer

__all__ = ["SimulatedNode"]

log = logging.getLogger("kubeforge.kubelet")

LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40
LEASE_RENEW_SECONDS = 10.0
NODE_STATUS_SECONDS = 300.0  # the kubelet's node status report frequency
KUBELET_PORT = 10250
RUNTIME_VERSION = "kubeforge://simulated"
# Nodes' InternalIPs: the n-th node gets NODE_ADDRESS_BASE + n.
NODE_ADDRESS_BASE = ipaddress.ip_address("10.0.0.2")
# Restarting a crashed container waits 0, 1, 2, 4 ... up to this many seconds; a run
# longer than BACKOFF_RESET_SECONDS starts the series again.
BACKOFF_MAX_SECONDS = 10.0
BACKOFF_RESET_SECONDS = 60.0
TERMINAL = ("Succeeded", "Failed")
KUBELET_CONDITIONS = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
)
FIELD_MANAGER = "kubelet"
# The Lease nodes hold while they choose their pod subnet.
ALLOCATION_LOCK = "kubeforge-pod-cidr-allocation"
LOCK_SECONDS = 15.0


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _go_duration(seconds: float) -> str:
    """A duration as Go prints it (`500ms`, `10s`, `1m20s`)."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    text = f"{rest:g}s"
    return f"{int(minutes)}m{text}" if minutes else text


def _full_image(image: str) -> str:
    """An image reference as the container runtime reports it: `docker.io/library/nginx:latest`."""
    name, _, digest = image.partition("@")
    parts = name.split("/")
    if len(parts) == 1 or not ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = ["docker.io", *(["library"] if len(parts) == 1 else []), *parts]
    full = "/".join(parts)
    if digest:
        return f"{full}@{digest}"
    if ":" not in parts[-1]:
        full += ":latest"
    return full


def _image_id(image: str) -> str:
    full = _full_image(image)
    repository = full.split("@")[0].rsplit(":", 1)[0] if "@" not in full else full.split("@")[0]
    return f"{repository}@sha256:{hashlib.sha256(full.encode()).hexdigest()}"


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


def _seconds(annotations: Mapping[str, Any], key: str, default: float | None) -> float | None:
    text = annotations.get(key)
    if text is None:
        return default
    try:
        return max(float(text), 0.0)
    except (TypeError, ValueError):
        return default


class _ConfigError(Exception):
    """A container's environment refers to something missing (CreateContainerConfigError)."""


# -- containers ------------------------------------------------------------------------------


class _Slot:
    """What the node knows of one container of a pod."""

    __slots__ = (
        "backoff",
        "container_id",
        "finished",
        "kind",
        "last_state",
        "name",
        "process",
        "ready",
        "restarts",
        "spec",
        "started",
        "started_event",
        "state",
    )

    def __init__(self, spec: Mapping[str, Any], kind: str, waiting: str) -> None:
        self.spec = spec
        self.name = str(spec.get("name") or "")
        self.kind = kind  # "init", "sidecar" (a restartable init container) or "main"
        self.restarts = 0
        self.backoff = 0
        self.state: dict[str, Any] = {"waiting": {"reason": waiting}}
        self.last_state: dict[str, Any] = {}
        self.ready = False
        self.started = False
        self.started_event = asyncio.Event()
        self.container_id = ""
        self.process: ContainerProcess | None = None
        self.finished = False  # terminated for good: no restart follows

    def status(self) -> dict[str, Any]:
        image = str(self.spec.get("image") or "")
        status: dict[str, Any] = {
            "name": self.name,
            "image": _full_image(image),
            "imageID": _image_id(image) if self.container_id else "",
            "ready": self.ready,
            "restartCount": self.restarts,
            "started": self.started,
            "state": self.state,
            "lastState": self.last_state,
        }
        if self.container_id:
            status["containerID"] = self.container_id
        return status

    def exit_code(self) -> int | None:
        terminated = self.state.get("terminated")
        return None if terminated is None else int(terminated.get("exitCode", 0))


# -- pods ------------------------------------------------------------------------------------


class _PodWorker:
    """Runs one pod bound to the node, from its first sight to its removal."""

    def __init__(self, node: SimulatedNode, pod: dict[str, Any]) -> None:
        self.node = node
        self.pod = pod
        meta = pod["metadata"]
        self.namespace = str(meta.get("namespace") or "")
        self.name = str(meta["name"])
        self.uid = str(meta.get("uid") or "")
        spec = pod.get("spec") or {}
        self.spec = spec
        self.restart_policy = str(spec.get("restartPolicy") or "Always")
        inits = spec.get("initContainers") or []
        main_waiting = "PodInitializing" if inits else "ContainerCreating"
        self.inits = [
            _Slot(c, "sidecar" if c.get("restartPolicy") == "Always" else "init", "PodInitializing")
            for c in inits
        ]
        self.mains = [_Slot(c, "main", main_waiting) for c in spec.get("containers") or []]
        annotations = meta.get("annotations") or {}
        options = node.options
        run_override = _seconds(annotations, RUN_SECONDS_ANNOTATION, None)
        self.timing = Timing(
            run_seconds=options.command_run_seconds if run_override is None else run_override,
            sleep_seconds=run_override,
        )
        start = _seconds(annotations, START_SECONDS_ANNOTATION, options.pod_start_seconds)
        self.start_delay = start or 0.0
        self.deleting = asyncio.Event()
        self.phase = "Pending"
        self.initialized = not self.inits
        self.sandbox_ready = False
        self.pod_ip = ""
        self.start_time = ""
        self.transitions: dict[str, tuple[str, str]] = {}
        self.closed = False
        self.done = False
        # Projected volumes' files as the kubelet would write them: volume -> path -> bytes.
        self.volumes: dict[str, dict[str, bytes]] = {}
        self._lock = asyncio.Lock()
        self._sent: bytes | None = None
        self._task: asyncio.Task[None] | None = None
        self._children: set[asyncio.Task[Any]] = set()
        self._adopt(pod.get("status") or {})
        self.observe(pod)

    # bookkeeping ------------------------------------------------------------------------------

    def _adopt(self, status: Mapping[str, Any]) -> None:
        """Pick up what an earlier run of this node reported (after a restart)."""
        for cond in status.get("conditions") or []:
            if cond.get("type") in KUBELET_CONDITIONS and cond.get("lastTransitionTime"):
                self.transitions[cond["type"]] = (cond.get("status"), cond["lastTransitionTime"])
        self.start_time = str(status.get("startTime") or "")
        ip = status.get("podIP")
        if ip and not self.spec.get("hostNetwork") and self.node._reserve_ip(self.uid, ip):
            self.pod_ip = ip
        restarts = {
            cs.get("name"): int(cs.get("restartCount") or 0)
            for cs in (status.get("containerStatuses") or [])
            + (status.get("initContainerStatuses") or [])
        }
        for slot in self.inits + self.mains:
            slot.restarts = restarts.get(slot.name, 0)

    def observe(self, pod: dict[str, Any]) -> None:
        """A newer version of the pod was seen."""
        self.pod = pod
        if pod["metadata"].get("deletionTimestamp"):
            self.deleting.set()
        elif (self.spec.get("readinessGates") or []) and not self.done and self._task is not None:
            # A readiness gate's condition may have changed: Ready follows it.
            self._spawn(self._publish())

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"pod {self.namespace}/{self.name}")

    async def close(self) -> None:
        """The pod is gone: stop everything at once."""
        self.closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.node._release_ip(self.uid)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._children.add(task)
        task.add_done_callback(self._children.discard)

    def _output(self, container: str) -> Callable[[bytes], None]:
        logs = self.node.logs

        def write(data: bytes) -> None:
            if not self.closed:
                logs.write(self.namespace, self.name, container, data)

        return write

    def _event(self, kind: Literal["Normal", "Warning"], reason: str, note: str) -> None:
        pod = self.pod
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        self.node.events.record(pod, kind, reason, note)

    # the lifecycle ----------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._lifecycle()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("pod %s/%s: the simulation failed", self.namespace, self.name)
        finally:
            await self._stop_containers(0.0)
            children = list(self._children)
            for task in children:
                task.cancel()
            await asyncio.gather(*children, return_exceptions=True)

    async def _lifecycle(self) -> None:
        status = self.pod.get("status") or {}
        if status.get("phase") in TERMINAL:
            self.phase = str(status["phase"])
            self.done = True
            await self.deleting.wait()
            await self._remove()
            return
        if not self.deleting.is_set():
            work = asyncio.ensure_future(self._work())
            self._children.add(work)
            deleting = asyncio.ensure_future(self.deleting.wait())
            try:
                await asyncio.wait({work, deleting}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                deleting.cancel()
            if work.done() and not work.cancelled() and work.exception() is not None:
                # Keep serving the pod (its deletion above all) after a failure.
                log.error(
                    "pod %s/%s: the simulation failed",
                    self.namespace,
                    self.name,
                    exc_info=work.exception(),
                )
            await self.deleting.wait()
            await self._terminate(work)
        self.done = True
        await self._remove()

    async def _work(self) -> None:
        """From scheduled to finished (or running until deleted)."""
        self.start_time = self.start_time or _now()
        if not self.pod_ip:
            if self.spec.get("hostNetwork"):
                self.pod_ip = self.node.address
            else:
                self.pod_ip = self.node._allocate_ip(self.uid)
        await self._publish()
        await asyncio.sleep(self.start_delay)
        await self._mount_or_wait()
        self.sandbox_ready = True
        if not await self._initialize():
            self.phase = "Failed"
            await self._publish()
            return
        tasks = [asyncio.ensure_future(self._keep_running(slot)) for slot in self.mains]
        self._children.update(tasks)
        await asyncio.gather(*tasks)
        # Every container has finished for good; sidecars stop with them.
        sidecars = [s for s in self.inits if s.kind == "sidecar"]
        await self._stop_slots(sidecars, 0.0)
        self.phase = self._phase()
        await self._publish()

    async def _mount_or_wait(self) -> None:
        """Fill the projected volumes, trying again while what they need is missing (the
        namespace's kube-root-ca.crt, say), as the kubelet retries a pod's mounts."""
        delay = 0.1
        while True:
            try:
                self.volumes = await self._projected_volumes()
                return
            except (_ConfigError, ApiError) as exc:
                log.debug("pod %s/%s: volumes not ready: %s", self.namespace, self.name, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def _projected_volumes(self) -> dict[str, dict[str, bytes]]:
        """A token bound to this pod from TokenRequest, ConfigMap items and downward API
        fields, for each projected volume (the service account's kube-api-access-*)."""
        client = self.node.client
        meta = self.pod["metadata"]
        volumes: dict[str, dict[str, bytes]] = {}
        for volume in self.spec.get("volumes") or []:
            projected = volume.get("projected") if isinstance(volume, dict) else None
            if not isinstance(projected, dict):
                continue
            files: dict[str, bytes] = {}
            for source in projected.get("sources") or []:
                token_source = source.get("serviceAccountToken")
                if isinstance(token_source, dict):
                    spec: dict[str, Any] = {
                        "expirationSeconds": int(token_source.get("expirationSeconds") or 3600),
                        "boundObjectRef": {
                            "kind": "Pod",
                            "apiVersion": "v1",
                            "name": self.name,
                            "uid": self.uid,
                        },
                    }
                    if token_source.get("audience"):
                        spec["audiences"] = [token_source["audience"]]
                    account = str(self.spec.get("serviceAccountName") or "default")
                    reply = await client.create_subresource(
                        "v1/ServiceAccount",
                        account,
                        "token",
                        {
                            "apiVersion": "authentication.k8s.io/v1",
                            "kind": "TokenRequest",
                            "spec": spec,
                        },
                        namespace=self.namespace,
                    )
                    path = str(token_source.get("path") or "token")
                    files[path] = str((reply.get("status") or {}).get("token") or "").encode()
                config_map = source.get("configMap")
                if isinstance(config_map, dict):
                    data = await self._data(client, "ConfigMap", config_map) or {}
                    items = config_map.get("items") or [{"key": k, "path": k} for k in data]
                    for item in items:
                        if item.get("key") in data:
                            files[str(item.get("path"))] = data[item["key"]].encode()
                downward = source.get("downwardAPI")
                if isinstance(downward, dict):
                    for item in downward.get("items") or []:
                        ref = item.get("fieldRef") or {}
                        value = self._field(str(ref.get("fieldPath") or ""), meta)
                        files[str(item.get("path"))] = value.encode()
            volumes[str(volume.get("name"))] = files
        return volumes

    async def _initialize(self) -> bool:
        """Run init containers in order; False when one failed and will not be retried."""
        for slot in self.inits:
            if slot.kind == "sidecar":
                self._spawn(self._keep_running(slot))
                await slot.started_event.wait()
                continue
            while True:
                code = await self._run_once(slot)
                if self.deleting.is_set():
                    await asyncio.Event().wait()  # termination takes over
                if code == 0:
                    slot.finished = True
                    break
                if not self._restarts(slot, code):
                    slot.finished = True
                    return False
                await self._back_off(slot)
        self.initialized = True
        return True

    async def _keep_running(self, slot: _Slot) -> None:
        """Run a container, restarting it as its restart policy says."""
        while True:
            code = await self._run_once(slot)
            if self.deleting.is_set() or slot.finished:
                return  # stopped by the node, not ended by itself
            if not self._restarts(slot, code):
                slot.finished = True
                await self._publish()
                return
            await self._back_off(slot)

    def _restarts(self, slot: _Slot, code: int) -> bool:
        policy = "Always" if slot.kind == "sidecar" else self.restart_policy
        if slot.kind == "init" and policy == "Always":
            policy = "OnFailure"  # an init container must succeed once, no more
        return policy == "Always" or (policy == "OnFailure" and code != 0)

    async def _back_off(self, slot: _Slot) -> None:
        terminated = slot.state.get("terminated") or {}
        slot.last_state = {"terminated": terminated}
        ran = _elapsed(terminated.get("startedAt"), terminated.get("finishedAt"))
        if ran >= BACKOFF_RESET_SECONDS:
            slot.backoff = 0
        delay = 0.0 if slot.backoff == 0 else min(2.0 ** (slot.backoff - 1), BACKOFF_MAX_SECONDS)
        slot.backoff += 1
        if delay > 0:
            pod = f"{self.name}_{self.namespace}({self.uid})"
            slot.state = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {_go_duration(delay)} restarting failed "
                    f"container={slot.name} pod={pod}",
                }
            }
            self._event(
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {slot.name} in pod {pod}",
            )
            await self._publish()
            await asyncio.sleep(delay)
        slot.restarts += 1

    async def _run_once(self, slot: _Slot) -> int:
        """One run of a container: its exit code (128 when it could not start)."""
        env = await self._environment_or_wait(slot)
        argv = container_argv(slot.spec, env)
        slot.container_id = f"kubeforge://{secrets.token_hex(32)}"
        process = ContainerProcess(
            argv,
            env,
            self.timing,
            self._output(slot.name),
            local=self.node.options.exec_pods,
            workdir_prefix=f"kubeforge-{self.name}-",
            image=str(slot.spec.get("image") or ""),
        )
        slot.process = process
        self.node.logs.start(self.namespace, self.name, slot.name)
        started = _now()
        slot.state = {"running": {"startedAt": started}}
        slot.started = True
        slot.ready = slot.kind != "init"
        slot.started_event.set()
        image = slot.spec.get("image") or ""
        if slot.restarts == 0:
            self._event("Normal", "Pulled", f'Container image "{image}" already present on machine')
        self._event("Normal", "Created", f"Created container: {slot.name}")
        self._event("Normal", "Started", f"Started container {slot.name}")
        await self._publish()
        message = ""
        try:
            code = await process.wait()
            reason = "Completed" if code == 0 else "Error"
        except StartError as exc:
            code, reason, message = 128, "StartError", str(exc)
            self._output(slot.name)(f"{message}\n".encode())
        except Exception as exc:
            # A failure of the simulation itself ends the container, not the whole node.
            log.exception("pod %s/%s: container %s failed", self.namespace, self.name, slot.name)
            code, reason, message = 1, "Error", f"the simulation failed: {exc}"
        self.node.logs.end(self.namespace, self.name, slot.name)
        slot.state = {"terminated": self._terminated(slot, code, reason, started, message)}
        slot.ready = slot.started = False
        slot.process = None
        await self._publish()
        return code

    @staticmethod
    def _terminated(
        slot: _Slot, code: int, reason: str, started: str, message: str = ""
    ) -> dict[str, Any]:
        terminated: dict[str, Any] = {
            "exitCode": code,
            "reason": reason,
            "startedAt": started,
            "finishedAt": _now(),
            "containerID": slot.container_id,
        }
        if message:
            terminated["message"] = message
        return terminated

    async def _environment_or_wait(self, slot: _Slot) -> dict[str, str]:
        """The container's environment, waiting while what it refers to is missing."""
        delay = 0.5
        while True:
            try:
                return await self._environment(slot.spec)
            except _ConfigError as exc:
                message = str(exc)
                if slot.state.get("waiting", {}).get("message") != message:
                    self._event("Warning", "Failed", f"Error: {message}")
                slot.state = {
                    "waiting": {"reason": "CreateContainerConfigError", "message": message}
                }
                await self._publish()
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _environment(self, spec: Mapping[str, Any]) -> dict[str, str]:
        meta = self.pod["metadata"]
        env: dict[str, str] = {"HOSTNAME": str(self.spec.get("hostname") or self.name)}
        client = self.node.client
        for source in spec.get("envFrom") or []:
            prefix = str(source.get("prefix") or "")
            for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                ref = source.get(key)
                if ref is not None:
                    data = await self._data(client, kind, ref)
                    env.update({prefix + k: v for k, v in (data or {}).items()})
        for item in spec.get("env") or []:
            name = str(item.get("name") or "")
            if "value" in item or "valueFrom" not in item:
                env[name] = expand_references(str(item.get("value") or ""), env)
                continue
            source = item.get("valueFrom") or {}
            value: str | None = None
            if "fieldRef" in source:
                value = self._field(str(source["fieldRef"].get("fieldPath") or ""), meta)
            elif "resourceFieldRef" in source:
                value = self._resource(spec, source["resourceFieldRef"])
            else:
                for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                    ref = source.get(key)
                    if ref is None:
                        continue
                    data = await self._data(client, kind, ref)
                    if data is None:
                        break
                    wanted = str(ref.get("key") or "")
                    if wanted not in data:
                        if ref.get("optional"):
                            break
                        raise _ConfigError(
                            f"couldn't find key {wanted} in {kind} "
                            f"{self.namespace}/{ref.get('name')}"
                        )
                    value = data[wanted]
            if value is not None:
                env[name] = value
        return env

    async def _data(
        self, client: Client, kind: str, ref: Mapping[str, Any]
    ) -> dict[str, str] | None:
        name = str(ref.get("name") or "")
        try:
            obj = await client.get(f"v1/{kind}", name, namespace=self.namespace)
        except NotFound:
            if ref.get("optional"):
                return None
            raise _ConfigError(f'{kind.lower()} "{name}" not found') from None
        data = obj.get("data") or {}
        if kind == "Secret":
            return {k: base64.b64decode(v).decode(errors="replace") for k, v in data.items()}
        values = {k: str(v) for k, v in data.items()}
        for key, value in (obj.get("binaryData") or {}).items():
            values[key] = base64.b64decode(value).decode(errors="replace")
        return values

    def _field(self, path: str, meta: Mapping[str, Any]) -> str:
        for prefix, source in (
            ("metadata.labels", "labels"),
            ("metadata.annotations", "annotations"),
        ):
            if path.startswith(prefix + "["):
                key = path[len(prefix) + 1 : -1].strip("'\"")
                return str((meta.get(source) or {}).get(key, ""))
        values = {
            "metadata.name": self.name,
            "metadata.namespace": self.namespace,
            "metadata.uid": self.uid,
            "spec.nodeName": self.node.name,
            "spec.serviceAccountName": str(self.spec.get("serviceAccountName") or ""),
            "status.hostIP": self.node.address,
            "status.hostIPs": self.node.address,
            "status.podIP": self.pod_ip,
            "status.podIPs": self.pod_ip,
        }
        return values.get(path, "")

    def _resource(self, spec: Mapping[str, Any], ref: Mapping[str, Any]) -> str:
        # The container's own value when set, else what the node offers.
        kind, _, resource = str(ref.get("resource") or "").partition(".")
        resources = spec.get("resources") or {}
        value = (resources.get(kind) or {}).get(resource)
        if value is None and kind == "requests":
            value = (resources.get("limits") or {}).get(resource)
        if value is None:
            value = {"cpu": self.node.options.node_cpu, "memory": self.node.options.node_memory}
            value = value.get(resource, "0")
        return str(value)

    # termination ------------------------------------------------------------------------------

    async def _terminate(self, work: asyncio.Future[None]) -> None:
        """The pod is being deleted: stop its containers within the grace period."""
        meta = self.pod["metadata"]
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = self.spec.get("terminationGracePeriodSeconds", 30)
        await self._stop_containers(float(grace or 0))
        children = [t for t in self._children if not t.done()]
        work.cancel()
        for task in children:
            task.cancel()
        await asyncio.gather(work, *children, return_exceptions=True)
        if self.phase not in TERMINAL:
            codes = [slot.exit_code() for slot in self.mains]
            self.phase = "Succeeded" if codes and all(c == 0 for c in codes) else "Failed"
        await self._publish()

    async def _stop_containers(self, grace: float) -> None:
        await self._stop_slots([*self.mains, *reversed(self.inits)], grace)

    async def _stop_slots(self, slots: list[_Slot], grace: float) -> None:
        running = [s for s in slots if s.process is not None and "running" in s.state]
        if not running:
            return
        processes = [s.process for s in running if s.process is not None]
        for slot in running:
            slot.finished = True  # so that its run loop does not restart it
            if not self.closed:
                self._event("Normal", "Killing", f"Stopping container {slot.name}")
        codes = await asyncio.gather(*(p.stop(grace) for p in processes), return_exceptions=True)
        for slot, code in zip(running, codes, strict=True):
            if "running" in slot.state:
                started = slot.state["running"].get("startedAt", "")
                exit_code = code if isinstance(code, int) else 137
                reason = "Completed" if exit_code == 0 else "Error"
                slot.state = {"terminated": self._terminated(slot, exit_code, reason, started)}
                slot.ready = slot.started = False
                slot.process = None
                self.node.logs.end(self.namespace, self.name, slot.name)

    async def _remove(self) -> None:
        """Delete the pod for good (grace period 0): the node has let it go."""
        delay = 0.1
        while True:
            try:
                await self.node.client.delete(
                    "v1/Pod",
                    self.name,
                    namespace=self.namespace,
                    grace_period_seconds=0,
                    preconditions={"uid": self.uid},
                )
                return
            except (NotFound, Conflict):
                return  # gone already, or the name now belongs to another pod
            except (ApiError, OSError, TimeoutError) as exc:
                log.warning("pod %s/%s: not deleted yet: %s", self.namespace, self.name, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    # status -----------------------------------------------------------------------------------

    def _phase(self) -> str:
        if self.phase in TERMINAL:
            return self.phase
        if not self.initialized:
            return "Pending"
        running = waiting = 0
        for slot in self.mains:
            if "running" in slot.state:
                running += 1
            elif "terminated" not in slot.state and not slot.last_state:
                waiting += 1
        if waiting:
            return "Pending"
        if running or not all(slot.finished for slot in self.mains):
            return "Running"
        codes = [slot.exit_code() for slot in self.mains]
        return "Succeeded" if all(c == 0 for c in codes) else "Failed"

    def _condition(
        self, kind: str, ok: bool, reason: str = "", message: str = ""
    ) -> dict[str, Any]:
        status = "True" if ok else "False"
        previous = self.transitions.get(kind)
        when = previous[1] if previous is not None and previous[0] == status else _now()
        self.transitions[kind] = (status, when)
        condition: dict[str, Any] = {
            "type": kind,
            "status": status,
            "lastProbeTime": None,
            "lastTransitionTime": when,
        }
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        return condition

    def _conditions(self, phase: str) -> list[dict[str, Any]]:
        terminal = phase in TERMINAL
        completed = "PodCompleted" if terminal else ""
        pending_init = [
            s.name
            for s in self.inits
            if (s.kind == "init" and not (s.finished and s.exit_code() == 0))
            or (s.kind == "sidecar" and not s.started_event.is_set())
        ]
        initialized = self.initialized and not pending_init
        unready = [s.name for s in self.mains + self.inits if s.kind != "init" and not s.ready]
        containers_ready = not unready and not terminal
        existing = (self.pod.get("status") or {}).get("conditions") or []
        gates_problem = ""
        for gate in self.spec.get("readinessGates") or []:
            kind = gate.get("conditionType")
            found = next((c for c in existing if c.get("type") == kind), None)
            if found is None:
                gates_problem = (
                    f'corresponding condition of pod readiness gate "{kind}" does not exist.'
                )
            elif found.get("status") != "True":
                gates_problem = (
                    f'the status of pod readiness gate "{kind}" is not "True", '
                    f"but {found.get('status')}"
                )
            if gates_problem:
                break
        if terminal:
            ready_reason = containers_reason = completed
            ready_message = containers_message = ""
        else:
            names = " ".join(unready)
            containers_reason = "ContainersNotReady" if unready else ""
            containers_message = f"containers with unready status: [{names}]" if unready else ""
            ready_reason, ready_message = containers_reason, containers_message
            if not unready and gates_problem:
                ready_reason, ready_message = "ReadinessGatesNotReady", gates_problem
        init_names = " ".join(pending_init)
        conditions = [
            self._condition("PodReadyToStartContainers", self.sandbox_ready and not terminal),
            self._condition(
                "Initialized",
                initialized,
                completed if initialized else "ContainersNotInitialized",
                "" if initialized else f"containers with incomplete status: [{init_names}]",
            ),
            self._condition(
                "Ready", containers_ready and not gates_problem, ready_reason, ready_message
            ),
            self._condition(
                "ContainersReady", containers_ready, containers_reason, containers_message
            ),
            self._condition("PodScheduled", True),
        ]
        conditions.extend(c for c in existing if c.get("type") not in KUBELET_CONDITIONS)
        return conditions

    def _status(self) -> dict[str, Any]:
        phase = self._phase()
        status: dict[str, Any] = {
            "phase": phase,
            "conditions": self._conditions(phase),
            "hostIP": self.node.address,
            "hostIPs": [{"ip": self.node.address}],
            "startTime": self.start_time,
            "containerStatuses": [slot.status() for slot in self.mains],
        }
        if self.sandbox_ready and self.pod_ip:
            status["podIP"] = self.pod_ip
            status["podIPs"] = [{"ip": self.pod_ip}]
        if self.inits:
            status["initContainerStatuses"] = [slot.status() for slot in self.inits]
        return status

    async def _publish(self) -> None:
        """Write the pod's status (when it changed since the last write)."""
        async with self._lock:
            if self.closed:
                return
            body = orjson.dumps({"status": self._status()})
            if body == self._sent:
                return
            delay = 0.1
            for attempt in range(6):
                try:
                    await self.node.client.patch_status(
                        "v1/Pod",
                        self.name,
                        body,
                        namespace=self.namespace,
                        field_manager=FIELD_MANAGER,
                    )
                    self._sent = body
                    return
                except NotFound:
                    return  # gone: the informer's delete event cleans up
                except (ApiError, OSError, TimeoutError) as exc:
                    if attempt == 5:
                        log.warning(
                            "pod %s/%s: status not written: %s", self.namespace, self.name, exc
                        )
                        return
                    await asyncio.sleep(delay)
                    delay *= 2


def _age(micro_time: str) -> float:
    """Seconds since a MicroTime (`2024-01-01T00:00:00.000000Z`); large when unreadable."""
    try:
        then = datetime.strptime(micro_time, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return float("inf")
    return (datetime.now(UTC) - then).total_seconds()


def _elapsed(start: Any, end: Any) -> float:
    try:
        a = datetime.strptime(str(start), "%Y-%m-%dT%H:%M:%SZ")
        b = datetime.strptime(str(end), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return 0.0
    return (b - a).total_seconds()


# -- the node --------------------------------------------------------------------------------


class SimulatedNode:
    """A node of the development cluster: registers itself and runs the pods bound to it.

    `run()` works until cancelled or `stop()`; `registered` is set once the Node exists.
    `index` picks the node's pod subnet and address (default: the first one free).
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
    ) -> None:
        self.client = client
        self.name = name
        self.options = options
        self.logs = logs
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
        self._workers: dict[str, _PodWorker] = {}
        self._informer: Informer | None = None
        self._stopping = asyncio.Event()
        self._finished = asyncio.Event()
        self._running = False
        self._node_uid = ""
        self._started_at = _now()
        self._closing: set[asyncio.Task[None]] = set()

    # running ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """Register the node, then keep its lease and its pods until cancelled or stopped."""
        self._running = True
        self._stopping.clear()
        self._finished.clear()
        background: list[asyncio.Task[None]] = []
        try:
            await self._register()
            self.registered.set()
            informer = Informer(
                self.client,
                "v1/Pod",
                field_selector=f"spec.nodeName={self.name}",
                resync_period=None,
            )
            informer.add_handler(
                HandlerFuncs(
                    add=lambda pod, _initial: self._on_pod(pod),
                    update=lambda _old, pod: self._on_pod(pod),
                    delete=self._on_delete,
                )
            )
            self._informer = informer
            informer.start()
            background.append(asyncio.create_task(self._lease_loop()))
            background.append(asyncio.create_task(self._status_loop()))
            await self._stopping.wait()
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            if self._informer is not None:
                await self._informer.stop()
                self._informer = None
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

    def _on_pod(self, pod: dict[str, Any]) -> None:
        uid = str(pod["metadata"].get("uid") or "")
        worker = self._workers.get(uid)
        if worker is None:
            worker = _PodWorker(self, pod)
            self._workers[uid] = worker
            worker.start()
        elif not worker.done:
            worker.observe(pod)

    def volume_files(self, namespace: str, name: str) -> dict[str, dict[str, bytes]]:
        """The projected volumes of a pod running here: volume -> file path -> content."""
        for worker in self._workers.values():
            if worker.namespace == namespace and worker.name == name:
                return worker.volumes
        return {}

    def _on_delete(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        worker = self._workers.pop(str(meta.get("uid") or ""), None)
        if worker is not None:
            worker.closed = True  # from now on its output goes nowhere
            task = asyncio.ensure_future(worker.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        self.logs.drop(str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    def _allocate_ip(self, uid: str) -> str:
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

    def _reserve_ip(self, uid: str, ip: str) -> bool:
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

    def _release_ip(self, uid: str) -> None:
        ip = self._ips.pop(uid, None)
        if ip is not None:
            self._used.discard(ip)

    # the Node object --------------------------------------------------------------------------

    async def _register(self) -> None:
        delay = 0.2
        while True:
            try:
                await self._register_once()
                return
            except (ApiError, OSError, TimeoutError) as exc:
                log.warning("node %s: registration failed (%s); retrying", self.name, exc)
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
            now = _micro_now()
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
        if existing is None:
            node: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": self.name, **metadata},
                "spec": {
                    "podCIDR": cidr,
                    "podCIDRs": [cidr],
                    "providerID": f"kubeforge://{self.name}",
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
        await self._write_node_status()
        node_ref = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "uid": self._node_uid},
        }
        self.events.record(node_ref, "Normal", "Starting", "Starting kubelet.")

    def _node_status(self) -> dict[str, Any]:
        now = _now()
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
            return {
                "type": kind,
                "status": status,
                "lastHeartbeatTime": now,
                "lastTransitionTime": self._started_at,
                "reason": reason,
                "message": message,
            }

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
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
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
            await asyncio.sleep(NODE_STATUS_SECONDS)
            try:
                await self._write_node_status()
            except (ApiError, OSError, TimeoutError) as exc:
                log.warning("node %s: status not written: %s", self.name, exc)

    # the Lease --------------------------------------------------------------------------------

    async def _lease_loop(self) -> None:
        while True:
            try:
                await self._renew_lease()
            except (ApiError, OSError, TimeoutError) as exc:
                log.warning("node %s: lease not renewed: %s", self.name, exc)
            await asyncio.sleep(LEASE_RENEW_SECONDS)

    async def _renew_lease(self) -> None:
        spec = {
            "holderIdentity": self.name,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": _micro_now(),
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
