"""webserver's entry point: `setup(manager)` registers the controller (used by `kubeforge run`,
the tests and the container image alike)."""

from __future__ import annotations

import kubeforge
from kubeforge.models import Deployment, Service

from api.v1 import WebServer
from controllers.webserver import WebServerReconciler


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
