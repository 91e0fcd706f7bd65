"""The root CA publisher: every namespace has the ConfigMap `kube-root-ca.crt`.

Its `ca.crt` is the CA that signed the API server's certificate, so pods verify the server
with the file their projected `kube-api-access-*` volume carries (kube-controller-manager's
root-ca-cert-publisher). A deleted or changed ConfigMap is put back.
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.access import is_deleting, namespace_of
from kubeforge._client.errors import AlreadyExists, ApiError, NotFound
from kubeforge._cluster.controllers._writes import namespace_terminating
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["CONFIGMAP_NAME", "RootCAPublisher", "setup"]

NAMESPACE = "v1/Namespace"
CONFIGMAP = "v1/ConfigMap"
CONFIGMAP_NAME = "kube-root-ca.crt"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


class RootCAPublisher(Reconciler):
    """Creates or restores `kube-root-ca.crt` in a namespace."""

    def __init__(self, ca_pem: bytes) -> None:
        self.ca = ca_pem.decode()

    async def reconcile(self, request: Request) -> Result | None:
        try:
            namespace = await self.client.get(NAMESPACE, request.name)
        except NotFound:
            return None
        if is_deleting(namespace):
            return None
        data = {"ca.crt": self.ca}
        try:
            current = await self.client.get(CONFIGMAP, CONFIGMAP_NAME, namespace=request.name)
        except NotFound:
            current = None
        if current is None:
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": CONFIGMAP_NAME,
                    "namespace": request.name,
                    "annotations": {"kubernetes.io/description": DESCRIPTION},
                },
                "data": data,
            }
            try:
                await self.client.create(body)
            except AlreadyExists:
                pass
            except ApiError as exc:
                if not namespace_terminating(exc):
                    raise
            return None
        if current.get("data") != data:
            await self.client.patch(
                CONFIGMAP,
                CONFIGMAP_NAME,
                {"data": data},
                namespace=request.name,
            )
        return None


def _namespace_of_configmap(configmap: dict[str, Any]) -> list[Request]:
    if (configmap.get("metadata") or {}).get("name") != CONFIGMAP_NAME:
        return []
    return [Request("", namespace_of(configmap))]


def setup(manager: Manager, ca_pem: bytes) -> None:
    """Register the root CA publisher with `manager`."""
    (
        manager.controller()
        .named("root-ca-cert-publisher")
        .for_(NAMESPACE)
        .watches(CONFIGMAP, _namespace_of_configmap)
        .with_options(max_concurrent_reconciles=1)
        .complete(RootCAPublisher(ca_pem))
    )
