"""fleet's entry point.

`setup(manager)` registers the controllers; `kubeforge run`, the tests and the container
image all call it. `main()` is the manager's command in the image (`manager`).

The operator runs in one cluster and reconciles Tenants in others: its members are the
clusters whose kubeconfigs are kept in Secrets in the manager's namespace, labelled
`kubeforge.dev/multicluster-kubeconfig: "true"`. A Secret added makes its cluster a member
while the operator runs; a Secret deleted lets the cluster go.
"""

from __future__ import annotations

import kubeforge
from kubeforge.models import Namespace
from kubeforge.multicluster import KubeconfigSecretProvider, MultiClusterManager

from api.v1alpha1 import Tenant
from controllers.tenant import TenantReconciler

# +kubeforge:scaffold:imports


def setup(manager: kubeforge.Manager) -> None:
    """Reconcile Tenants, and the namespaces they own, in every member cluster."""
    fleet = MultiClusterManager(manager, KubeconfigSecretProvider())
    fleet.controller().for_(Tenant).owns(Namespace).complete(TenantReconciler())
    # +kubeforge:scaffold:builder


def main() -> None:
    """Run the manager: kubebuilder's flags (--leader-elect, --health-probe-bind-address,
    --metrics-bind-address, --webhook-cert-path, ...) and the cluster from the kubeconfig or,
    in a pod, the in-cluster configuration."""
    kubeforge.manager_main(setup, name="fleet")


if __name__ == "__main__":
    main()
