"""Where a webhook's service reference leads, when nothing else says: this machine.

Workloads of this server's cluster (a webhook server run by `kubeforge run`, a pod run as a
local process) listen on this machine, so a Service's cluster IP is mapped to loopback, at
the port the Service sends the referenced port to; an ExternalName Service leads to its
external name. kube-apiserver resolves a reference to the Service's cluster IP
(k8s.io/apiserver pkg/util/webhook/serviceresolver.go and kube-aggregator's
NewClusterIPServiceResolver); a failure is a LookupError in the words it uses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["LocalServices", "ServiceLookup"]

# The Service `namespace`/`name` as stored, or None.
ServiceLookup = Callable[[str, str], Mapping[str, Any] | None]


class LocalServices:
    """Resolves service references to this machine."""

    def __init__(self, lookup: ServiceLookup) -> None:
        self.lookup = lookup

    def resolve(self, namespace: str, name: str, port: int) -> tuple[str, int]:
        """(host, port) to connect to for port `port` of the Service."""
        service = self.lookup(namespace, name)
        if service is None:
            raise LookupError(f'service "{name}" not found')
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName":
            return str(spec.get("externalName") or ""), port
        if spec.get("clusterIP") == "None":
            raise LookupError('cannot route to service with ClusterIP "None"')
        for entry in spec.get("ports") or ():
            if entry.get("port") == port:
                target = entry.get("targetPort")
                return "127.0.0.1", target if isinstance(target, int) else port
        raise LookupError(f'no service port {port} found for service "{name}"')
