"""A whole development cluster in one process: API server, built-in controllers, nodes.

    async with DevCluster() as cluster:
        cluster.write_kubeconfig(".kubeforge/kubeconfig")
        ...   # kubectl and operators talk to cluster.url as to any cluster

The built-in controllers run on kubeforge's own runtime and talk to the API server through
its API like any other client (over its Unix socket, as they share its process); the
simulated nodes do the kubelet's part (pods go Pending ->
Running -> Succeeded/Failed, `kubectl logs` works). The first node is the control-plane
node: its kubelet shows the API server, the controller manager and the scheduler as the
mirror pods of static pods in `kube-system`, each serving its component's log
(staticpods.py, componentlogs.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from kubeforge._apiserver.config import ServerConfig
from kubeforge._apiserver.http.server import ConnectionLimits
from kubeforge._apiserver.server import APIServer
from kubeforge._apiserver.storage.persistence import SQLiteBackend
from kubeforge._client.auth import StaticToken
from kubeforge._client.client import Client
from kubeforge._client.config import ClusterConfig
from kubeforge._client.errors import NotFound
from kubeforge._cluster import certmanager, controllernames as names
from kubeforge._cluster.componentlogs import (
    KUBE_APISERVER,
    KUBE_CONTROLLER_MANAGER,
    KUBE_SCHEDULER,
    ComponentLogs,
)
from kubeforge._cluster.containers import LocalRuntime
from kubeforge._cluster.controllers import (
    clusterroles,
    cronjob,
    csrsigning,
    daemonset,
    deployment,
    disruption,
    endpoints,
    job,
    localpathprovisioner,
    nodelifecycle,
    podgc,
    replicaset,
    rootca,
    scheduler,
    serviceaccount,
    statefulset,
    tainteviction,
    tokens,
    volumebinder,
    volumeexpander,
    volumeprotection,
)
from kubeforge._cluster.hostports import HostPorts, ServiceRouter
from kubeforge._cluster.kubelet import SimulatedNode
from kubeforge._cluster.kubeletwatches import KubeletWatches
from kubeforge._cluster.nodehealth import NodeHealth, request_health
from kubeforge._cluster.options import ClusterOptions
from kubeforge._cluster.podlogs import PodLogs
from kubeforge._cluster.podstreams import ClusterStreams
from kubeforge._cluster.projects import ImageMap
from kubeforge._cluster.staticpods import CONTROL_PLANE_LABELS, control_plane_pods
from kubeforge._cluster.volumedirs import VolumeDirectories
from kubeforge._runtime.manager import Manager

__all__ = ["CONTEXT", "DevCluster"]

log = logging.getLogger("kubeforge.dev")

CONTEXT = "kubeforge-dev"
# What runs outside kube-controller-manager in a real cluster.
_NOT_CONTROLLER_MANAGER = frozenset({names.SCHEDULER, names.LOCAL_PATH_PROVISIONER})
# How long a kubelet may take to act on a change of the health it simulates.
HEALTH_TIMEOUT = 30.0


SOCKET_NAME = "apiserver.sock"
# sun_path holds 108 bytes on Linux (104 on the BSDs and macOS), the terminating NUL included.
_SOCKET_PATH_MAX = 103


def private_socket_dir() -> Path | None:
    """A new directory only this user may enter (mkdtemp makes it 0700) for the API server's
    Unix socket: under TMPDIR, else under /tmp when TMPDIR is too deep for a socket's path;
    None when neither will do, and the components use the HTTPS port instead."""
    for parent in (None, "/tmp"):
        try:
            made = Path(tempfile.mkdtemp(prefix="kubeforge-", dir=parent))
        except OSError:
            continue
        if len(os.fsencode(made / SOCKET_NAME)) <= _SOCKET_PATH_MAX:
            return made
        made.rmdir()
    return None


class DevCluster:
    """The embedded API server with the controllers and nodes an operator relies on."""

    def __init__(
        self,
        options: ClusterOptions | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        data_dir: str | Path | None = None,
        kubernetes_version: str = "1.33.0",
        credentials_dir: str | Path | None = None,
        connections: ConnectionLimits | None = None,
    ) -> None:
        self.options = options or ClusterOptions()
        # Which built-in controllers run (ValueError for an unknown name, before anything).
        self.controllers = names.enabled_controllers(self.options.controllers)
        self.logs = PodLogs()
        # The control plane's logs, served by its mirror pods on the first node.
        self.components = ComponentLogs(self.logs, self._node_name(0))
        # Ports of this machine given to pods run as local processes; webhook calls through
        # a Service reach them there.
        self.host_ports = HostPorts()
        router = ServiceRouter(
            lambda: self.server.store,
            self.host_ports,
            lambda namespace, name, port: self.server.services.resolve(namespace, name, port),
        )
        self.backend = SQLiteBackend(data_dir) if data_dir is not None else None
        # Persistent volumes' data: kept with the cluster's state, or for this run only.
        self.volume_directories = VolumeDirectories(
            Path(data_dir) / "volumes" if data_dir is not None else None
        )
        config = ServerConfig(
            host=host,
            port=port,
            kubernetes_version=kubernetes_version,
            backend=self.backend,
            garbage_collection=names.GARBAGE_COLLECTOR in self.controllers,
            namespace_deletion=names.NAMESPACE in self.controllers,
            service_cidr=self.options.service_cidr,
            credentials_dir=(
                Path(data_dir) / "credentials"
                if data_dir is not None
                else Path(credentials_dir)
                if credentials_dir is not None
                else None
            ),
            service_account_admission=self.options.service_account_admission,
            # The protection finalizers, when the controllers that remove them run.
            pvc_protection=names.PVC_PROTECTION in self.controllers,
            pv_protection=names.PV_PROTECTION in self.controllers,
            # As kube-apiserver's --anonymous-auth=true: RBAC lets anonymous requests read
            # the probes and /version, nothing else.
            anonymous_paths=None,
            connections=connections or ConnectionLimits(),
            resolve_service=router,
        )
        # exec, attach and port-forward reach the nodes' pods through this runtime.
        streams = ClusterStreams(lambda: self.nodes, self.logs)
        self.server = APIServer(config, logs=self.logs, streams=streams)
        self.client: Client | None = None
        self.manager: Manager | None = None
        self.nodes: list[SimulatedNode] = []
        self.local: LocalRuntime | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        # The kubelets' one client: a connection pool shared by every node rather than one
        # each (each TLS connection holds buffers of a few hundred KiB at both ends).
        self._kubelet_client: Client | None = None
        # ... and one watch of their pods and one of their Nodes (kubeletwatches.py).
        self._kubelet_watches: KubeletWatches | None = None
        # Where the server's Unix socket is, while it runs.
        self._socket_dir: Path | None = None

    @property
    def url(self) -> str:
        return self.server.url

    def cluster_config(self) -> ClusterConfig:
        """Connection settings for a client of this cluster (the admin token)."""
        return ClusterConfig(
            server=self.server.url,
            ca_data=self.server.ca_pem,
            credentials=StaticToken(self.server.token),
            context=CONTEXT,
        )

    def in_process_config(self) -> ClusterConfig:
        """Connection settings for a client in this cluster's own process (its controllers,
        nodes and console): the admin token, as `cluster_config`, but the server itself for
        whole exchanges (no socket, decision 63) and its Unix socket for streams when it
        serves one (no TLS to pay for on every request of this process)."""
        config = self.cluster_config()
        socket_path = self.server.config.local_socket
        if socket_path is not None:
            config.unix_socket = str(socket_path)
        config.in_process = self.server
        return config

    def kubeconfig_dict(self) -> dict[str, Any]:
        return self.server.kubeconfig_dict(context=CONTEXT)

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        """Write a kubeconfig (context `kubeforge-dev` in `namespace`, mode 0600)."""
        return self.server.write_kubeconfig(path, context=CONTEXT, namespace=namespace)

    def user_kubeconfig_dict(self, user: str, groups: tuple[str, ...] = ()) -> dict[str, Any]:
        """A kubeconfig for another user (a client certificate for `user` in `groups`)."""
        return self.server.user_kubeconfig_dict(user, groups, context=CONTEXT)

    def _node_name(self, index: int) -> str:
        return f"kubeforge-node-{index}" if self.options.nodes > 1 else "kubeforge-node"

    def _control_plane(self) -> dict[str, list[str]]:
        """The components that run, each with its command line as kubeadm writes it (the
        settings this cluster has). None without nodes: nowhere to show them."""
        if self.options.nodes < 1:
            return {}
        config = self.server.config
        components = {
            KUBE_APISERVER: [
                KUBE_APISERVER,
                f"--advertise-address={config.host}",
                f"--secure-port={self.server.port}",
                f"--service-cluster-ip-range={self.options.service_cidr}",
                "--authorization-mode=RBAC",
            ]
        }
        if self.controllers - _NOT_CONTROLLER_MANAGER:
            controllers = sorted(self.controllers - _NOT_CONTROLLER_MANAGER)
            components[KUBE_CONTROLLER_MANAGER] = [
                KUBE_CONTROLLER_MANAGER,
                f"--controllers={','.join(controllers)}",
                f"--cluster-cidr={self.options.pod_cidr}",
                f"--node-monitor-grace-period={self.options.node_monitor_grace_period:g}s",
            ]
        if names.SCHEDULER in self.controllers:
            components[KUBE_SCHEDULER] = [KUBE_SCHEDULER]
        return components

    def _controller_setups(self) -> dict[str, Callable[[Manager], None]]:
        """What each built-in controller registers with the cluster's manager, by its name
        (controllernames.KNOWN; garbage collection and namespace deletion are the server's)."""
        server = self.server
        certificates = server.certificates
        assert certificates is not None
        job_backoff = self.options.job_backoff_seconds
        return {
            names.SERVICEACCOUNT: serviceaccount.setup,
            names.REPLICASET: replicaset.setup,
            names.DEPLOYMENT: deployment.setup,
            names.STATEFULSET: statefulset.setup,
            names.DAEMONSET: daemonset.setup,
            names.JOB: lambda m: job.setup(m, pod_failure_backoff=job_backoff),
            names.POD_GC: lambda m: podgc.setup(
                m, quarantine=self.options.pod_gc_quarantine_seconds
            ),
            names.CRONJOB: cronjob.setup,
            names.DISRUPTION: disruption.setup,
            names.ENDPOINTS: endpoints.setup_endpoints,
            names.ENDPOINTSLICE: endpoints.setup_endpointslices,
            names.SCHEDULER: scheduler.setup,
            # The controllers that need the cluster's keys, as kube-controller-manager has them.
            names.ROOT_CA_PUBLISHER: lambda m: rootca.setup(m, server.ca_pem),
            names.SERVICEACCOUNT_TOKEN: lambda m: tokens.setup(
                m, server.auth.issuer, server.ca_pem
            ),
            names.CSR_SIGNING: lambda m: csrsigning.setup(m, certificates),
            names.CLUSTERROLE_AGGREGATION: clusterroles.setup,
            names.NODE_LIFECYCLE: lambda m: nodelifecycle.setup(
                m, grace_period=self.options.node_monitor_grace_period
            ),
            names.TAINT_EVICTION: tainteviction.setup,
            names.PV_BINDER: volumebinder.setup,
            names.PV_EXPANDER: volumeexpander.setup,
            names.PVC_PROTECTION: volumeprotection.setup_pvc_protection,
            names.PV_PROTECTION: volumeprotection.setup_pv_protection,
            names.LOCAL_PATH_PROVISIONER: lambda m: localpathprovisioner.setup(
                m, self.volume_directories
            ),
        }

    async def start(self) -> None:
        """Start the server, then the controllers and nodes; returns once they run."""
        for component in self._control_plane():
            self.components.begin(component)
        if hasattr(socket, "AF_UNIX"):
            self._socket_dir = private_socket_dir()
            if self._socket_dir is not None:
                self.server.config.local_socket = self._socket_dir / SOCKET_NAME
        with self.components.running_as(KUBE_APISERVER):
            await self.server.start()
        # The controllers and nodes are clients like any other, of the same API, with the
        # same authentication and authorization; over the server's Unix socket rather than
        # HTTPS, as nothing leaves this machine.
        self.client = Client(self.in_process_config(), field_manager="kubeforge-dev")
        if self.options.cert_manager:
            await certmanager.install(self.client)
        if names.LOCAL_PATH_PROVISIONER in self.controllers:
            # kind's default class comes with its provisioner.
            await localpathprovisioner.install_default_class(self.client)
        manager = Manager(
            client=Client(self.in_process_config(), field_manager="kube-controller-manager")
        )
        for name, setup in self._controller_setups().items():
            if name in self.controllers:
                setup(manager)
        if self.options.cert_manager:
            certmanager.setup(manager, self.server.ca_pem)
        self.manager = manager
        self._tasks.append(
            asyncio.create_task(
                manager.start(),
                name="dev controllers",
                context=self.components.context(KUBE_CONTROLLER_MANAGER),
            )
        )
        # `kubectl get componentstatuses` reports the controllers and the scheduler with them.
        for component in ("controller-manager", "scheduler"):
            self.server.components.register(component, self._controllers_health)
        self.local = LocalRuntime(
            self.server.config.host,
            self.server.port,
            ImageMap(self.options.images),
            self.host_ports,
            self.volume_directories,
        )
        # The control-plane node, labelled as kubeadm marks it; kind leaves it untainted
        # when no other node is a worker, and here every node is one.
        static_pods = control_plane_pods(
            self._control_plane(), advertise=f"{self.server.config.host}:{self.server.port}"
        )
        for i in range(self.options.nodes):
            if i == 0:
                self._start_node(
                    self._node_name(i),
                    index=i,
                    labels=CONTROL_PLANE_LABELS,
                    static_pods=static_pods,
                )
            else:
                self._start_node(self._node_name(i), index=i)
        await self._wait_ready()

    def _start_node(
        self,
        name: str,
        *,
        index: int | None,
        labels: Mapping[str, str] | None = None,
        static_pods: Sequence[Mapping[str, Any]] = (),
    ) -> SimulatedNode:
        if self._kubelet_client is None:
            self._kubelet_client = Client(self.in_process_config(), field_manager="kubelet")
            manager = self.manager
            if manager is not None:
                # The nodes read the controllers' informers of pods and Nodes rather than
                # watching them again (kubeletwatches.py).
                self._kubelet_watches = KubeletWatches.sharing(manager.cache)
            else:
                self._kubelet_watches = KubeletWatches(self._kubelet_client)
        node = SimulatedNode(
            self._kubelet_client,
            name,
            self.options,
            self.logs,
            index=index,
            labels=labels,
            local=self.local,
            static_pods=static_pods,
            watches=self._kubelet_watches,
        )
        self.nodes.append(node)
        self._tasks.append(asyncio.create_task(node.run(), name=f"node {node.name}"))
        return node

    async def add_node(
        self, name: str | None = None, *, labels: Mapping[str, str] | None = None
    ) -> SimulatedNode:
        """Start another simulated node (named `kubeforge-node-<n>` unless `name` says,
        with extra `labels`) and return it once its Node is registered."""
        if self.local is None:
            raise RuntimeError("the development cluster is not running")
        taken = {node.name for node in self.nodes}
        if name is None:
            name = next(
                f"kubeforge-node-{i}"
                for i in itertools.count(len(self.nodes))
                if f"kubeforge-node-{i}" not in taken
            )
        elif name in taken:
            raise ValueError(f"node {name!r} already runs in this cluster")
        node = self._start_node(name, index=None, labels=labels)
        await node.registered.wait()
        return node

    async def remove_node(self, name: str) -> None:
        """Stop a simulated node and delete its Node, as when a machine leaves a cluster
        (its pods stay on the server; the pod garbage collector removes them). KeyError for a
        node this cluster does not run."""
        node = next((n for n in self.nodes if n.name == name), None)
        if node is None:
            raise KeyError(f"no simulated node {name!r} in this cluster")
        await node.stop()
        self.nodes.remove(node)
        assert self.client is not None
        with contextlib.suppress(NotFound):
            await self.client.delete("v1/Node", name)

    async def set_node_health(self, name: str, health: NodeHealth) -> None:
        """Take the simulated node `name` down or bring it back (cluster/nodehealth.py):
        "not-ready" (its kubelet reports NotReady), "unreachable" (it loses contact with the
        API server) or "ready"; returns once its kubelet acts so. KeyError for a node this
        cluster does not run."""
        node = next((n for n in self.nodes if n.name == name), None)
        if node is None or self.client is None:
            raise KeyError(f"no simulated node {name!r} in this cluster")
        await request_health(self.client, name, health)
        await asyncio.wait_for(node.wait_for_health(health), HEALTH_TIMEOUT)

    def _controllers_health(self) -> tuple[bool, str, str]:
        manager = self.manager
        if manager is not None and manager.running.is_set():
            return True, "ok", ""
        return False, "", "the built-in controllers are not running"

    async def _wait_ready(self) -> None:
        """Wait for the controllers to run, failing fast if any part dies on the way."""
        manager = self.manager
        assert manager is not None
        running = asyncio.create_task(manager.running.wait())
        done, _ = await asyncio.wait({running, *self._tasks}, return_when=asyncio.FIRST_COMPLETED)
        if running not in done:
            running.cancel()
            failed = next(iter(done))
            raise RuntimeError("the development cluster failed to start") from failed.exception()

    async def stop(self) -> None:
        """Stop nodes and controllers, then the server (pods keep their last state)."""
        if self.manager is not None:
            self.manager.stop()
            # Let the controllers finish their shutdown (which closes their client).
            await asyncio.wait(self._tasks[:1], timeout=10)
        for node in self.nodes:
            await node.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        self.nodes.clear()
        if self._kubelet_watches is not None:
            await self._kubelet_watches.stop()
            self._kubelet_watches = None
        if self._kubelet_client is not None:
            await self._kubelet_client.close()
            self._kubelet_client = None
        if self.client is not None:
            await self.client.close()
            self.client = None
        await self.server.stop()
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
            self.server.config.local_socket = None
        self.components.close()
        self.volume_directories.close()
        if self.backend is not None:
            self.backend.close()

    async def __aenter__(self) -> DevCluster:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
