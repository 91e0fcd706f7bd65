"""watcher's entry point: `setup(manager)` registers the controllers and the webhooks (used by
`kubeforge run`, the tests and the container image alike)."""

from __future__ import annotations

import kubeforge
from kubeforge.models import ConfigMap

from api.v1alpha1 import Watcher
from controllers.watcher import WatcherReconciler
from webhooks.sidecar import SidecarInjector
from webhooks.watcher import WatcherValidator


def setup(manager: kubeforge.Manager) -> None:
    """Reconcile Watchers, and come back to one whenever its ConfigMap changes or goes away;
    validate Watchers, and inject their containers into the pods that ask for them."""
    (
        manager.controller()
        .for_(Watcher)
        .owns(ConfigMap)
        .complete(WatcherReconciler(manager.event_recorder("watcher-controller")))
    )
    manager.webhook_for(Watcher).validator(WatcherValidator()).complete()
    manager.webhook_server.register("/mutate--v1-pod", SidecarInjector(manager.api_reader))
