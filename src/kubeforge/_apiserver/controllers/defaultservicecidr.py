"""The default ServiceCIDR, `kubernetes`: the range Service cluster IPs come from.

kube-apiserver creates it from its --service-cluster-ip-range and marks it Ready
(pkg/controlplane/controller/defaultservicecidr/default_servicecidr_controller.go), so
`kubectl get servicecidrs` shows where Service addresses are allocated.
"""

from __future__ import annotations

import ipaddress

from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._apiserver.controllers.writer import Writer
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.writes import run_now
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.storage.commits import Commits
from kubeforge._apiserver.storage.statuswrites import set_condition
from kubeforge._apiserver.storage.store import Store
from kubeforge._apiserver.types.registry import Registry

__all__ = ["DEFAULT_NAME", "ensure_default_service_cidr"]

DEFAULT_NAME = "kubernetes"
_MANAGER = {"fieldManager": "kube-apiserver"}


def ensure_default_service_cidr(
    store: Store, commits: Commits, registry: Registry, writer: Writer, service_cidr: str
) -> None:
    """Create the `kubernetes` ServiceCIDR (Ready) if it is missing."""
    rt = registry.get("networking.k8s.io", "v1", "servicecidrs")
    assert rt is not None
    if store.get(rt.group_resource, "", DEFAULT_NAME) is not None:
        return
    network = ipaddress.ip_network(service_cidr, strict=False)
    body = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": DEFAULT_NAME},
        "spec": {"cidrs": [str(network)]},
    }
    create = RequestInfo("networking.k8s.io", "v1", None, "servicecidrs", None, None, "create")
    run_now(writer.create(Call(create, rt, _MANAGER), body))
    stored = store.get(rt.group_resource, "", DEFAULT_NAME)
    assert stored is not None
    ready = {
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": now_rfc3339(),
        "reason": "",
        "message": "Kubernetes default Service CIDR is ready",
    }
    set_condition(commits, rt, stored, ready)
