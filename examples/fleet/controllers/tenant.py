"""The Tenant controller, across the fleet: for each Tenant in a member cluster, the
namespace `tenant-<name>` in that same cluster, labelled with the tenant and its owner and
owned by the Tenant, and the Tenant's status saying which cluster it was reconciled for.

The reconciler is written as for one cluster: its `client` reads and writes the cluster of
the Tenant being reconciled, and `current_cluster()` names that cluster.
"""

from __future__ import annotations

import logging

import kubeforge
from kubeforge.models import Namespace
from kubeforge.multicluster import current_cluster

from api.v1alpha1 import Tenant, TenantStatus

log = logging.getLogger(__name__)

TENANT_LABEL = "fleet.kubeforge.dev/tenant"
OWNER_LABEL = "fleet.kubeforge.dev/owner"


def namespace_of(tenant: Tenant) -> str:
    return f"tenant-{tenant.metadata.name}"


# In each member cluster, as the user its kubeconfig Secret names:
@kubeforge.rbac(groups="fleet.kubeforge.dev", resources="tenants", verbs=["get", "list", "watch"])
@kubeforge.rbac(
    groups="fleet.kubeforge.dev", resources="tenants/status", verbs=["get", "update", "patch"]
)
@kubeforge.rbac(
    groups="", resources="namespaces", verbs=["get", "list", "watch", "create", "update", "patch"]
)
# In the operator's own cluster: the kubeconfig Secrets the provider watches (main.py).
@kubeforge.rbac(groups="", resources="secrets", verbs=["list", "watch"])
class TenantReconciler(kubeforge.ObjectReconciler[Tenant]):
    """Gives each Tenant its namespace in its own cluster."""

    async def reconcile(self, tenant: Tenant) -> kubeforge.Result | None:
        if tenant.metadata.deletion_timestamp is not None:
            return None  # its namespace goes with it (garbage collection)
        name = namespace_of(tenant)
        labels = {TENANT_LABEL: tenant.metadata.name or "", OWNER_LABEL: tenant.spec.owner}

        def ensure(namespace: Namespace) -> None:
            namespace.metadata.labels = {**(namespace.metadata.labels or {}), **labels}
            kubeforge.set_controller_reference(tenant, namespace)

        _, done = await kubeforge.create_or_update(
            self.client, Namespace(metadata=kubeforge.ObjectMeta(name=name)), ensure
        )
        cluster = current_cluster()
        if done != kubeforge.OperationResult.UNCHANGED:
            log.info("namespace %s %s in cluster %s", name, done.value, cluster)

        status = tenant.status or TenantStatus()
        changed = kubeforge.set_status_condition(
            status.conditions,
            kubeforge.Condition(
                type="Available",
                status="True",
                reason="NamespaceReady",
                message=f"namespace {name} is there",
                observed_generation=tenant.metadata.generation,
            ),
        )
        if changed or (status.namespace, status.cluster) != (name, cluster):
            status.namespace, status.cluster = name, cluster
            tenant.status = status
            await self.client.update_status(tenant)
        return None
