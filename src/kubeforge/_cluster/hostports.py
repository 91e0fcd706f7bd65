"""Ports of this machine for containers that run as local processes, and the way Services
lead to them.

In a cluster every pod has its own network namespace, so two replicas both listen on 8081.
Local processes share this machine's ports, so each declared container port of a pod run
locally is given a free port of this machine (the same one for the pod's whole life, across
container restarts), and the process is told the new number through its arguments and
environment (containers.py). The table here is what the rest of the cluster reads: the
kubelet's probes, and the API server when it calls a webhook through a Service (`route`:
the Service's EndpointSlices name a ready pod and its port, and this table the port of this
machine it listens on).
"""

from __future__ import annotations

import socket
from collections.abc import Callable

from kubeforge._apiserver.storage.store import Store
from kubeforge._apiserver.types.resource import GroupResource

__all__ = ["HostPorts", "ServiceRouter"]

_SERVICES = GroupResource("", "services")
_SLICES = GroupResource("discovery.k8s.io", "endpointslices")
_SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class HostPorts:
    """Which port of this machine stands for (pod IP, container port)."""

    def __init__(self, free_port: Callable[[], int] = _free_port) -> None:
        self._free_port = free_port
        self._ports: dict[tuple[str, int], int] = {}
        self._owners: dict[tuple[str, int], str] = {}
        self._given: set[int] = set()

    def allocate(self, pod_uid: str, pod_ip: str, container_port: int) -> int:
        """The pod's port `container_port` on this machine (picked once, then kept)."""
        key = (pod_ip, container_port)
        port = self._ports.get(key)
        if port is None:
            port = self._free_port()
            while port in self._given:  # freed by the kernel but still promised to a pod
                port = self._free_port()
            self._ports[key] = port
            self._owners[key] = pod_uid
            self._given.add(port)
        return port

    def lookup(self, pod_ip: str, container_port: int) -> int | None:
        return self._ports.get((pod_ip, container_port))

    def release(self, pod_uid: str) -> None:
        """The pod is gone: its ports may be given out again."""
        for key in [k for k, owner in self._owners.items() if owner == pod_uid]:
            del self._owners[key]
            self._given.discard(self._ports.pop(key))


class ServiceRouter:
    """Where a Service's port leads on this machine: a ready endpoint run as a local
    process, at its mapped port; otherwise `fallback` decides (the API server's own rule:
    127.0.0.1 at the Service's target port, where `kubeforge run` listens)."""

    def __init__(
        self,
        store: Callable[[], Store],
        ports: HostPorts,
        fallback: Callable[[str, str, int], tuple[str, int]],
    ) -> None:
        self._store = store
        self._ports = ports
        self._fallback = fallback

    def __call__(self, namespace: str, name: str, port: int) -> tuple[str, int]:
        found = self.local_endpoint(namespace, name, port)
        return found if found is not None else self._fallback(namespace, name, port)

    def local_endpoint(self, namespace: str, name: str, port: int) -> tuple[str, int] | None:
        store = self._store()
        service = store.get(_SERVICES, namespace, name)
        if service is None:
            return None
        entry = next(
            (
                p
                for p in (service.obj.get("spec") or {}).get("ports") or ()
                if p.get("port") == port
            ),
            None,
        )
        if entry is None:
            return None
        port_name = entry.get("name") or ""
        for stored in store.current(_SLICES, namespace)[0]:
            labels = stored.obj["metadata"].get("labels") or {}
            if labels.get(_SERVICE_NAME_LABEL) != name:
                continue
            numbers = [
                p.get("port")
                for p in stored.obj.get("ports") or ()
                if (p.get("name") or "") == port_name and isinstance(p.get("port"), int)
            ]
            for endpoint in stored.obj.get("endpoints") or ():
                if (endpoint.get("conditions") or {}).get("ready") is False:
                    continue
                for address in endpoint.get("addresses") or ():
                    for number in numbers:
                        local = self._ports.lookup(str(address), int(number))
                        if local is not None:
                            return "127.0.0.1", local
        return None
