"""A pod on a simulated node, from the moment it is bound there to its removal.

Each pod gets a `PodWorker` that moves it from Pending through Running to Succeeded or
Failed with the status a kubelet reports (conditions, IPs, container states, restart
counts): it sets up the pod's volumes, runs init containers first, then the containers,
restarts them as the restart policy says (with a short CrashLoopBackOff), decides their
readiness, writes their output to `PodLogs`, and on deletion stops them within the grace
period and removes the pod. What a container does: simulation.py's rules, or a local
process (containers.py) for an image mapped to a project directory or with
`ClusterOptions.exec_pods`, probed as probes.py says.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol

import orjson

from kubeforge import clock
from kubeforge._api.machinery.timestamps import now_rfc3339, parse_time_or_none
from kubeforge._client.client import Client
from kubeforge._client.errors import ApiError, Conflict, NotFound
from kubeforge._cluster.commandline import container_argv, full_image
from kubeforge._cluster.containers import (
    ContainerProcess,
    LocalLaunch,
    LocalRuntime,
    PodSandbox,
    StartError,
    UnsafePath,
    local_launch,
)
from kubeforge._cluster.mountview import mounted_files
from kubeforge._cluster.options import START_SECONDS_ANNOTATION, ClusterOptions
from kubeforge._cluster.podconfig import ConfigError, MountError, PodSources, token_lifetimes
from kubeforge._cluster.podlogs import PodLogs
from kubeforge._cluster.probes import ProbeHooks, ProbeTarget, run_probes
from kubeforge._cluster.simulation import Behaviour, container_behaviour
from kubeforge._runtime.events import EventRecorder

__all__ = ["FIELD_MANAGER", "TERMINAL", "Node", "PodWorker"]

log = logging.getLogger("kubeforge.kubelet")

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
PROBES = ("startupProbe", "livenessProbe", "readinessProbe")


def _go_duration(seconds: float) -> str:
    """A duration as Go prints it (`500ms`, `10s`, `1m20s`)."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    text = f"{rest:g}s"
    return f"{int(minutes)}m{text}" if minutes else text


def _image_id(image: str) -> str:
    full = full_image(image)
    repository = full.split("@")[0].rsplit(":", 1)[0] if "@" not in full else full.split("@")[0]
    return f"{repository}@sha256:{hashlib.sha256(full.encode()).hexdigest()}"


def _seconds(annotations: Mapping[str, Any], key: str, default: float | None) -> float | None:
    text = annotations.get(key)
    if text is None:
        return default
    try:
        return max(float(text), 0.0)
    except (TypeError, ValueError):
        return default


class _Flag:
    """A flag that is set once and waited on, as asyncio.Event, but holding nothing until a
    wait needs a future: every pod and container of thousands has some, few are waited on."""

    __slots__ = ("_future", "_set")

    def __init__(self) -> None:
        self._set = False
        self._future: asyncio.Future[None] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        if self._future is not None and not self._future.done():
            self._future.set_result(None)

    def future(self) -> asyncio.Future[None]:
        """A future done once the flag is set (for asyncio.wait)."""
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
            if self._set:
                self._future.set_result(None)
        return self._future

    async def wait(self) -> None:
        if not self._set:
            await asyncio.shield(self.future())


async def _until_cancelled() -> None:
    await asyncio.get_running_loop().create_future()


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
        self.started_event = _Flag()
        self.container_id = ""
        self.process: ContainerProcess | None = None
        self.finished = False  # terminated for good: no restart follows

    def status(self) -> dict[str, Any]:
        image = str(self.spec.get("image") or "")
        status: dict[str, Any] = {
            "name": self.name,
            "image": full_image(image),
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


class Node(Protocol):
    """What a PodWorker needs of the node its pod is bound to (kubelet.py's SimulatedNode):
    its client, name, address and settings, where logs and events go, what local processes
    need, the objects its caches hold, the pod IPs of its subnet, and whether it can reach
    the API server."""

    @property
    def client(self) -> Client: ...
    @property
    def name(self) -> str: ...
    @property
    def address(self) -> str: ...
    @property
    def options(self) -> ClusterOptions: ...
    @property
    def logs(self) -> PodLogs: ...
    @property
    def events(self) -> EventRecorder: ...
    @property
    def local(self) -> LocalRuntime: ...
    def cached(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None: ...
    def allocate_ip(self, uid: str) -> str: ...
    def reserve_ip(self, uid: str, ip: str) -> bool: ...
    def release_ip(self, uid: str) -> None: ...
    async def online(self) -> None: ...


class PodWorker:
    """Runs one pod bound to the node, from its first sight to its removal."""

    def __init__(self, node: Node, pod: dict[str, Any]) -> None:
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
        self.sources = PodSources(
            node.client, pod, node.name, node.address, options, cached=node.cached
        )
        start = _seconds(annotations, START_SECONDS_ANNOTATION, options.pod_start_seconds)
        self.start_delay = start or 0.0
        self.deleting = _Flag()
        self.phase = "Pending"
        self.initialized = not self.inits
        self.sandbox_ready = False
        self.pod_ip = ""
        self.start_time = ""
        self.transitions: dict[str, tuple[str, str]] = {}
        self.closed = False
        self.done = False
        # Volumes' files as the kubelet would write them: volume -> path -> bytes.
        self.volumes: dict[str, dict[str, bytes]] = {}
        # The files of the pod's containers that run as local processes (made on demand).
        self.sandbox: PodSandbox | None = None
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
        if ip and not self.spec.get("hostNetwork") and self.node.reserve_ip(self.uid, ip):
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
        self.pod = self._retained(pod)
        # The downward API reads the newest labels and annotations.
        self.sources.meta = pod["metadata"]
        if pod["metadata"].get("deletionTimestamp"):
            self.deleting.set()
        elif (self.spec.get("readinessGates") or []) and not self.done and self._task is not None:
            # A readiness gate's condition may have changed: Ready follows it.
            self._spawn(self._publish())

    def _retained(self, pod: dict[str, Any]) -> dict[str, Any]:
        """What the worker keeps of a version of its pod: its metadata, the spec it started
        with, its phase and the conditions others own (readiness gates read them); not the
        status the node itself reported, nor a copy of the spec for every version."""
        status = pod.get("status") or {}
        kept: dict[str, Any] = {"phase": status.get("phase")}
        conditions = [
            c for c in status.get("conditions") or () if c.get("type") not in KUBELET_CONDITIONS
        ]
        if conditions:
            kept["conditions"] = conditions
        return {
            "apiVersion": pod.get("apiVersion") or "v1",
            "kind": pod.get("kind") or "Pod",
            "metadata": pod["metadata"],
            "spec": self.spec,
            "status": kept,
        }

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"pod {self.namespace}/{self.name}")

    def running(self, container: str) -> ContainerProcess | None:
        """The current run of a container while it runs (what exec and attach reach)."""
        for slot in (*self.mains, *self.inits):
            if slot.name == container and slot.process is not None and "running" in slot.state:
                return slot.process
        return None

    def mounted(self, container: Mapping[str, Any]) -> dict[str, bytes]:
        """The files of the pod's volumes as `container` (its spec) sees them."""
        return mounted_files(self.volumes, container.get("volumeMounts") or ())

    def republish(self) -> None:
        """Write the pod's status again even if unchanged: someone else changed it."""
        self._sent = None
        if not self.closed and self._task is not None:
            self._spawn(self._publish())

    async def close(self) -> None:
        """The pod is gone: stop everything at once."""
        self.closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.node.release_ip(self.uid)

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
            self._release_local()

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
            await asyncio.wait({work, self.deleting.future()}, return_when=asyncio.FIRST_COMPLETED)
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
        self.start_time = self.start_time or now_rfc3339()
        if not self.pod_ip:
            if self.spec.get("hostNetwork"):
                self.pod_ip = self.node.address
            else:
                self.pod_ip = self.node.allocate_ip(self.uid)
        self.sources.pod_ip = self.pod_ip
        await self._publish()
        await clock.sleep(self.start_delay)
        await self._mount_or_wait()
        self.sandbox_ready = True
        if not await self._initialize():
            self.phase = "Failed"
            await self._publish()
            return
        if len(self.mains) == 1:
            await self._keep_running(self.mains[0])  # the common pod: no task of its own
        else:
            tasks = [asyncio.ensure_future(self._keep_running(slot)) for slot in self.mains]
            self._children.update(tasks)
            await asyncio.gather(*tasks)
        # Every container has finished for good; sidecars stop with them.
        sidecars = [s for s in self.inits if s.kind == "sidecar"]
        await self._stop_slots(sidecars, 0.0)
        self.phase = self._phase()
        await self._publish()

    async def _mount_or_wait(self) -> None:
        """Set up the volumes' files, trying again while what they need is missing (the
        namespace's kube-root-ca.crt, a Secret cert-manager has yet to write), as the kubelet
        retries a pod's mounts, with a FailedMount event."""
        delay = 0.1
        reported = ""
        while True:
            try:
                self.volumes = await self.sources.volumes()
                return
            except MountError as exc:
                if str(exc) != reported:
                    reported = str(exc)
                    self._event("Warning", "FailedMount", reported)
            except ApiError as exc:
                log.debug("pod %s/%s: volumes not ready: %s", self.namespace, self.name, exc)
            await clock.sleep(delay)
            delay = min(delay * 2, 2.0)

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
                    await _until_cancelled()  # termination takes over
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
            await clock.sleep(delay)
        slot.restarts += 1

    async def _run_once(self, slot: _Slot) -> int:
        """One run of a container: its exit code (128 when it could not start)."""
        env = await self._environment_or_wait(slot)
        behaviour = container_behaviour(self.pod, slot.name, slot.kind, self.node.options)
        image = str(slot.spec.get("image") or "")
        slot.container_id = f"kubeforge://{secrets.token_hex(32)}"
        self.node.logs.start(self.namespace, self.name, slot.name)
        started = now_rfc3339()
        slot.state = {"running": {"startedAt": started}}
        slot.started = True
        slot.ready = False
        slot.started_event.set()
        if slot.restarts == 0:
            self._event("Normal", "Pulled", f'Container image "{image}" already present on machine')
        self._event("Normal", "Created", f"Created container: {slot.name}")
        self._event("Normal", "Started", f"Started container {slot.name}")
        message = ""
        watching: asyncio.Task[None] | None = None
        try:
            local = self._local_launch(slot, env)
            argv = local.argv if local is not None else container_argv(slot.spec, env)
            process = ContainerProcess(
                argv,
                env,
                behaviour,
                self._output(slot.name),
                image=image,
                local=local,
                workdir_prefix=f"kubeforge-{self.name}-",
                files=self.mounted(slot.spec),
                stdin=bool(slot.spec.get("stdin")),
            )
            slot.process = process
            watching = self._watch_readiness(slot, process, behaviour, local)
            await self._publish()
            code = await process.wait()
            reason = "Completed" if code == 0 else "Error"
        except StartError as exc:
            code, reason, message = 128, "StartError", str(exc)
            self._output(slot.name)(f"{message}\n".encode())
        except Exception as exc:
            # A failure of the simulation itself ends the container, not the whole node.
            log.exception("pod %s/%s: container %s failed", self.namespace, self.name, slot.name)
            code, reason, message = 1, "Error", f"the simulation failed: {exc}"
        finally:
            if watching is not None:
                watching.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watching
        self.node.logs.end(self.namespace, self.name, slot.name)
        slot.state = {"terminated": self._terminated(slot, code, reason, started, message)}
        slot.ready = slot.started = False
        slot.process = None
        await self._publish()
        return code

    # readiness and probes -----------------------------------------------------------------------

    def _watch_readiness(
        self,
        slot: _Slot,
        process: ContainerProcess,
        behaviour: Behaviour,
        local: LocalLaunch | None,
    ) -> asyncio.Task[None] | None:
        """Decide the container's readiness: its probes for a local process, the pod's
        annotations for a simulated one (ready at once by default). Init containers are
        never ready. Returns the task to cancel when the run ends, if any."""
        if slot.kind == "init":
            return None
        if local is None:
            if not behaviour.ready:
                return None
            if behaviour.ready_seconds <= 0:
                slot.ready = True
                return None
            return asyncio.create_task(self._ready_after(slot, process, behaviour.ready_seconds))
        spec = slot.spec
        if not any(isinstance(spec.get(p), dict) for p in PROBES):
            slot.ready = True
            return None
        slot.started = not isinstance(spec.get("startupProbe"), dict)
        return asyncio.create_task(self._probe(slot, process, local))

    async def _ready_after(self, slot: _Slot, process: ContainerProcess, seconds: float) -> None:
        await clock.sleep(seconds)
        if slot.process is process:
            slot.ready = True
            await self._publish()

    async def _probe(self, slot: _Slot, process: ContainerProcess, local: LocalLaunch) -> None:
        ports = self.node.local.ports
        pod_ip = self.pod_ip

        def host_port(port: int) -> int:
            mapped = ports.lookup(pod_ip, port)
            return port if mapped is None else mapped

        named = {
            str(p.get("name")): int(p["containerPort"])
            for p in slot.spec.get("ports") or ()
            if p.get("name") and isinstance(p.get("containerPort"), int)
        }

        async def started() -> None:
            if slot.process is process and not slot.started:
                slot.started = True
                await self._publish()

        async def ready(flag: bool) -> None:
            if slot.process is process and slot.ready != flag:
                slot.ready = flag
                await self._publish()

        async def kill(why: str) -> None:
            self._event("Normal", "Killing", f"Container {slot.name} {why}")
            grace = self.spec.get("terminationGracePeriodSeconds")
            self._spawn(process.stop(float(30 if grace is None else grace)))

        def unhealthy(message: str) -> None:
            self._event("Warning", "Unhealthy", message)

        target = ProbeTarget(pod_ip, host_port, named, local)
        await run_probes(slot.spec, target, ProbeHooks(started, ready, kill, unhealthy))

    # local processes ----------------------------------------------------------------------------

    def _local_launch(self, slot: _Slot, env: Mapping[str, str]) -> LocalLaunch | None:
        """How the container runs as a process of this machine, or None when simulated."""
        return local_launch(
            slot.spec,
            env,
            self.node.local,
            exec_pods=self.node.options.exec_pods,
            sandbox=self._sandbox_now,
            pod_uid=self.uid,
            pod_ip=self.pod_ip,
        )

    def _sandbox_now(self) -> PodSandbox:
        """The pod's private directory, made (with its volumes' files) on first use; its
        tokens are renewed as the kubelet renews them."""
        if self.sandbox is None:
            sandbox = PodSandbox(f"kubeforge-{self.namespace}-{self.name}-")
            directories = self.node.local.volumes
            try:
                sandbox.write_volumes(self.volumes)
                if directories is not None:
                    sandbox.persistent = {
                        name: directories.of_volume(volume)
                        for name, volume in self.sources.persistent.items()
                    }
            except UnsafePath as exc:
                # Nothing half-written is kept: the next run of a container tries again.
                sandbox.close()
                raise StartError(f"MountVolume.SetUp failed: {exc}") from None
            self.sandbox = sandbox
            lifetimes = token_lifetimes(self.spec)
            if lifetimes:
                self._spawn(self._renew_tokens(min(lifetimes)))
        return self.sandbox

    async def _renew_tokens(self, lifetime: int) -> None:
        """Fetch the volumes again once 80% of the tokens' lifetime has passed."""
        while True:
            await clock.sleep(lifetime * 0.8)
            try:
                # A claim being deleted while the pod runs keeps serving it.
                volumes = await self.sources.volumes(claims=False)
            except (MountError, ApiError, OSError) as exc:
                log.warning("pod %s/%s: tokens not renewed: %s", self.namespace, self.name, exc)
                continue
            self.volumes = volumes
            if self.sandbox is not None:
                try:
                    self.sandbox.write_volumes(volumes)
                except OSError as exc:  # UnsafePath among them
                    log.warning("pod %s/%s: tokens not renewed: %s", self.namespace, self.name, exc)

    def _release_local(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None
        self.node.local.ports.release(self.uid)

    @staticmethod
    def _terminated(
        slot: _Slot, code: int, reason: str, started: str, message: str = ""
    ) -> dict[str, Any]:
        terminated: dict[str, Any] = {
            "exitCode": code,
            "reason": reason,
            "startedAt": started,
            "finishedAt": now_rfc3339(),
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
                return await self.sources.environment(slot.spec)
            except ConfigError as exc:
                message = str(exc)
                if slot.state.get("waiting", {}).get("message") != message:
                    self._event("Warning", "Failed", f"Error: {message}")
                slot.state = {
                    "waiting": {"reason": "CreateContainerConfigError", "message": message}
                }
                await self._publish()
                await clock.sleep(delay)
                delay = min(delay * 2, 5.0)

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
            await self.node.online()
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
                await clock.sleep(delay)
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
        when = previous[1] if previous is not None and previous[0] == status else now_rfc3339()
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
            # A node cut off from the API server writes once it is back, what is true then.
            await self.node.online()
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
                    await clock.sleep(delay)
                    delay *= 2


def _elapsed(start: Any, end: Any) -> float:
    a, b = parse_time_or_none(start), parse_time_or_none(end)
    if a is None or b is None:
        return 0.0
    return (b - a).total_seconds()
