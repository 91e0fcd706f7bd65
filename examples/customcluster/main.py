"""customcluster's entry point: `setup(manager)` registers the controller (used by
`kubeforge run`, `kubeforge demo`, the tests and the container image alike)."""

from __future__ import annotations

import kubeforge

from controllers.customcluster import CustomclusterController

# +kubeforge:scaffold:imports


def setup(manager: kubeforge.Manager) -> None:
    """Build the controller on the manager's shared informers and run it with the manager.

    No builder here: the controller is a plain runnable that waits for its caches and starts
    its own workers, as a client-go controller's `Run` does."""
    controller = CustomclusterController.from_manager(manager, workers=2)
    manager.add(controller.run)
    # +kubeforge:scaffold:builder


def main() -> None:
    """Run the manager (the container's entrypoint, `manager`): kubebuilder's flags and the
    cluster from the kubeconfig or, in a pod, the in-cluster configuration."""
    kubeforge.manager_main(setup, name="customcluster")


if __name__ == "__main__":
    main()
