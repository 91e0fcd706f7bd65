"""kvstore's entry point: `setup(manager)` registers the controller (used by `kubeforge run`,
the tests and the container image alike)."""

from __future__ import annotations

import kubeforge
from kubeforge.models import (
    CronJob,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    Service,
    StatefulSet,
)

from api.v1alpha1 import KVStore
from controllers.kvstore import KVStoreReconciler, member_of

# +kubeforge:scaffold:imports


def setup(manager: kubeforge.Manager) -> None:
    """Reconcile KVStores, and come back to one whenever a child changes (a member becoming
    ready, a Service deleted) or one of its members' pods does (moved to another node)."""
    (
        manager.controller()
        .for_(KVStore)
        .owns(StatefulSet)
        .owns(Service)
        .owns(PodDisruptionBudget)
        .owns(CronJob)
        .owns(PersistentVolumeClaim)
        .watches(Pod, member_of)
        .complete(KVStoreReconciler())
    )
    # +kubeforge:scaffold:builder


def main() -> None:
    """Run the manager (the container's entrypoint, `manager`): kubebuilder's flags and the
    cluster from the kubeconfig or, in a pod, the in-cluster configuration."""
    kubeforge.manager_main(setup, name="kvstore")


if __name__ == "__main__":
    main()
