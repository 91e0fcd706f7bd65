"""webserver's entry point: `setup(manager)` registers the controller (used by `kubeforge run`,
the tests and the container image alike)."""

from __future__ import annotations

import kubeforge
from kubeforge.models import Deployment, Service

from api.v1 import WebServer
from controllers.webserver import WebServerReconciler

# +kubeforge:scaffold:imports


def setup(manager: kubeforge.Manager) -> None:
    """Reconcile WebServers, and come back to one whenever its Deployment or Service changes
    (a rollout progressing, a Service deleted)."""
    (
        manager.controller()
        .for_(WebServer)
        .owns(Deployment)
        .owns(Service)
        .complete(WebServerReconciler(manager.event_recorder("webserver-controller")))
    )
    # +kubeforge:scaffold:builder


def main() -> None:
    """Run the manager (the container's entrypoint, `manager`): kubebuilder's flags and the
    cluster from the kubeconfig or, in a pod, the in-cluster configuration."""
    kubeforge.manager_main(setup, name="webserver")


if __name__ == "__main__":
    main()
