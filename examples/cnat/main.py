"""cnat's entry point: `setup(manager)` registers the controller and the conversion webhook
(used by `kubeforge run`, the tests and the container image alike)."""

from __future__ import annotations

import kubeforge
from kubeforge.models import Pod

from api.v1 import At
from controllers.at import AtReconciler

# +kubeforge:scaffold:imports


def setup(manager: kubeforge.Manager) -> None:
    """Reconcile Ats (as v1), coming back to one whenever the pod it owns changes, and
    convert Ats between v1 and v1alpha1 for the API server (/convert)."""
    (
        manager.controller()
        .for_(At)
        .owns(Pod)
        .complete(AtReconciler(manager.event_recorder("at-controller")))
    )
    manager.webhook_for(At).complete()
    # +kubeforge:scaffold:builder


def main() -> None:
    """Run the manager (the container's entrypoint, `manager`): kubebuilder's flags and the
    cluster from the kubeconfig or, in a pod, the in-cluster configuration."""
    kubeforge.manager_main(setup, name="cnat")


if __name__ == "__main__":
    main()
