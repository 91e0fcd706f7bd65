"""A built-in subset of cert-manager for the development cluster.

kubebuilder's `config/default` asks cert-manager for the webhook server's certificate (an
`Issuer` with `selfSigned: {}` and a `Certificate` into the Secret the manager mounts) and
for the CA bundle of the webhook configurations (the `cert-manager.io/inject-ca-from`
annotation). The development cluster serves cert-manager's `cert-manager.io/v1` Issuer,
ClusterIssuer and Certificate kinds and does that much itself: `selfSigned` and `ca`
issuers, Certificates issued into `kubernetes.io/tls` Secrets and renewed, and CA injection
into Mutating/ValidatingWebhookConfigurations and CRD conversion webhooks (decision 0031).
ACME, Vault and other issuers, CertificateRequests and cert-manager's webhook are not
there.
"""

from __future__ import annotations

from kubeforge._client.client import Client
from kubeforge._cluster.certmanager.controllers import CLUSTER_RESOURCE_NAMESPACE, setup
from kubeforge._cluster.certmanager.crds import certmanager_crds

__all__ = ["CLUSTER_RESOURCE_NAMESPACE", "install", "setup"]

FIELD_MANAGER = "kubeforge-cert-manager"


async def install(client: Client, timeout: float = 30.0) -> None:
    """Serve cert-manager's kinds: apply their CRDs and wait until they are established."""
    crds = certmanager_crds()
    for crd in crds:
        await client.apply(crd, field_manager=FIELD_MANAGER, force=True)
    await client.wait_established([c["metadata"]["name"] for c in crds], timeout=timeout)
    client.discovery.invalidate()
