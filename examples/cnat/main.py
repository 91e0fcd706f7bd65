"""cnat's entry point: `setup(manager)` registers the controllers (used by `kubeforge run`,
the tests and the container image alike)."""

from __future__ import annotations

import kubeforge
from kubeforge.models import Pod

from api.v1alpha1 import At
from controllers.at import AtReconciler

# +kubeforge:scaffold:imports


def setup(manager: kubeforge.Manager) -> None:
    """Reconcile Ats, and come back to one whenever the pod it owns changes."""
    (
        manager.controller()
        .for_(At)
        .owns(Pod)
        .complete(AtReconciler(manager.event_recorder("at-controller")))
    )
    # +kubeforge:scaffold:builder


def main() -> None:
    """Run the manager (the container's entrypoint, `manager`): kubebuilder's flags and the
    cluster from the kubeconfig or, in a pod, the in-cluster configuration."""
    kubeforge.manager_main(setup, name="cnat")


if __name__ == "__main__":
    main()
