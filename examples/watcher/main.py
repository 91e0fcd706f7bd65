"""watcher's entry point: `setup(manager)` registers the controllers and the webhooks (used by
`kubeforge run`, the tests and the container image alike)."""

from __future__ import annotations

import kubeforge
from kubeforge.models import ConfigMap

from api.v1alpha1 import Watcher
from controllers.watcher import WatcherReconciler
from webhooks.v1.pod import setup_pod_webhook
from webhooks.v1alpha1.watcher import setup_watcher_webhook

# +kubeforge:scaffold:imports


def setup(manager: kubeforge.Manager) -> None:
    """Reconcile Watchers, and come back to one whenever its ConfigMap changes or goes away;
    validate Watchers, and inject their containers into the pods that ask for them."""
    (
        manager.controller()
        .for_(Watcher)
        .owns(ConfigMap)
        .complete(
            WatcherReconciler(manager.event_recorder("watcher-controller"), manager.api_reader)
        )
    )
    setup_watcher_webhook(manager)
    setup_pod_webhook(manager)
    # +kubeforge:scaffold:builder


def main() -> None:
    """Run the manager (the container's entrypoint, `manager`): kubebuilder's flags and the
    cluster from the kubeconfig or, in a pod, the in-cluster configuration."""
    kubeforge.manager_main(setup, name="watcher")


if __name__ == "__main__":
    main()
