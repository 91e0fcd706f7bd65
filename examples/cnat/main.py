"""cnat's entry point: `setup(manager)` registers the controllers (used by `kubeforge run`,
the tests and the container image alike)."""

from __future__ import annotations

import kubeforge
from kubeforge.models import Pod

from api.v1alpha1 import At
from controllers.at import AtReconciler


def setup(manager: kubeforge.Manager) -> None:
    """Reconcile Ats, and come back to one whenever the pod it owns changes."""
    (
        manager.controller()
        .for_(At)
        .owns(Pod)
        .complete(AtReconciler(manager.event_recorder("at-controller")))
    )
