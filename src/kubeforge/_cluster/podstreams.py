"""exec, attach and port-forward for the pods of a development cluster's nodes: the
streaming runtime the API server is given (apiserver/streaming/runtime.py), as a kubelet
and its container runtime serve them.

- **exec** runs a command in the container (containerexec.py).
- **attach** streams the container's output from the moment of attaching (what its run
  writes to its log, for a simulated container as for a local process) until the run ends;
  what the client types reaches a local process's input when its container asks for one
  (`stdin: true`; `stdinOnce` closes it when the first attach ends) and is dropped
  otherwise, as a container without `stdin` drops it.
- A control-plane component's mirror pod (staticpods.py) refuses all three, clearly: the
  component runs inside the kubeforge process.
- **port-forward** connects to the port of this machine that stands for the pod's container
  port (hostports.py): only a local process listens there. A port no process listens on,
  which is every port of a simulated pod, is refused as a pod's closed port is, and the
  client is told on the port's error stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from kubeforge._apiserver.handlers.pods import LogRequest
from kubeforge._apiserver.streaming.runtime import (
    ContainerRef,
    ProcessStreams,
    StreamFailed,
    StreamRefused,
)
from kubeforge._cluster.containerexec import exec_local, exec_simulated
from kubeforge._cluster.containers import ContainerProcess
from kubeforge._cluster.kubelet import SimulatedNode
from kubeforge._cluster.podlogs import PodLogs
from kubeforge._cluster.podworker import PodWorker

__all__ = ["ClusterStreams"]


class ClusterStreams:
    """The streaming runtime of the nodes `nodes()` gives."""

    def __init__(self, nodes: Callable[[], Iterable[SimulatedNode]], logs: PodLogs) -> None:
        self._nodes = nodes
        self._logs = logs

    def _node(self, target: ContainerRef) -> SimulatedNode | None:
        return next((n for n in self._nodes() if n.name == target.node), None)

    def _worker(self, target: ContainerRef) -> PodWorker:
        node = self._node(target)
        mirrors = node.mirror_pods if node is not None else None
        if mirrors is not None and mirrors.static_pod_of(target.uid) is not None:
            # A control-plane component: part of the kubeforge process, not a container
            # that could run a command, take input or listen on a port of its own.
            raise StreamRefused(
                400,
                "BadRequest",
                f'container "{target.container}" of static pod {target.namespace}/'
                f"{target.pod} runs inside the kubeforge process: it has no processes to "
                "exec into, attach to or forward ports of",
            )
        worker = node.worker(target.uid) if node is not None else None
        if worker is None:
            # The kubelet's answer for a pod it does not run (pkg/kubelet/server/server.go).
            raise StreamRefused(404, "NotFound", "pod does not exist")
        return worker

    def _running(self, target: ContainerRef) -> tuple[PodWorker, ContainerProcess]:
        worker = self._worker(target)
        process = worker.running(target.container)
        if process is None:
            raise StreamRefused(404, "NotFound", f'container not found ("{target.container}")')
        return worker, process

    def check(self, target: ContainerRef, subresource: str) -> None:
        if subresource == "portforward":
            self._worker(target)
        else:
            self._running(target)

    async def exec(self, target: ContainerRef, command: list[str], streams: ProcessStreams) -> int:
        try:
            worker, process = self._running(target)
        except StreamRefused as exc:
            raise StreamFailed(exc.message) from None
        if process.is_local:
            return await exec_local(process, command, streams)
        spec = _container_spec(worker, target.container)
        return await exec_simulated(process, worker.mounted(spec), command, streams)

    async def attach(self, target: ContainerRef, streams: ProcessStreams) -> None:
        try:
            worker, process = self._running(target)
        except StreamRefused as exc:
            raise StreamFailed(exc.message) from None
        spec = _container_spec(worker, target.container)
        feeding = None
        if streams.stdin is not None:
            feeding = asyncio.create_task(
                _feed(process, streams, close=bool(spec.get("stdinOnce")))
            )
        sink = streams.stdout or streams.stderr
        request = LogRequest(
            target.namespace, target.pod, target.container, follow=True, tail_lines=0
        )
        try:
            async for chunk in self._logs.stream(request):
                if sink is not None:
                    await sink.write(chunk)
        finally:
            if feeding is not None:
                feeding.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await feeding

    async def port_forward(
        self, target: ContainerRef, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        worker = self._worker(target)
        node = self._node(target)
        mapped = node.local.ports.lookup(worker.pod_ip, port) if node is not None else None
        refused = (
            f'failed to connect to localhost:{port} inside namespace "{target.pod}": '
            f"dial tcp4 127.0.0.1:{port}: connect: connection refused"
        )
        if mapped is None:
            raise ConnectionRefusedError(refused)
        try:
            return await asyncio.open_connection("127.0.0.1", mapped)
        except ConnectionRefusedError:
            raise ConnectionRefusedError(refused) from None


def _container_spec(worker: PodWorker, name: str) -> dict[str, Any]:
    spec = worker.spec
    for kind in ("containers", "initContainers"):
        for container in spec.get(kind) or ():
            if container.get("name") == name:
                return dict(container)
    return {}


async def _feed(process: ContainerProcess, streams: ProcessStreams, close: bool) -> None:
    """The client's input to the container's, when it has one; dropped otherwise."""
    assert streams.stdin is not None
    pipe = process.stdin
    while data := await streams.stdin.read():
        if pipe is not None and not pipe.is_closing():
            pipe.write(data)
            with contextlib.suppress(ConnectionError, OSError):
                await pipe.drain()
    if close and pipe is not None:
        pipe.close()
