"""useless's entry point: `setup(manager)` registers the controllers (used by `kubeforge run`,
the tests and the container image alike).

Both stages of the machine run side by side on the same Machines, as two controllers that
write different fields: stage 1 turns `spec.switchPosition` back down (and keeps
`status.seenAt`); stage 2 keeps the Switch objects (and `status.positions`, `status.flippedAt`).
"""

from __future__ import annotations

import kubeforge

from controllers.common import INTERVAL
from controllers.machine import MachineReconciler
from controllers.machine_stage1 import SwitchPositionReconciler

# +kubeforge:scaffold:imports


def setup(manager: kubeforge.Manager, interval: float = INTERVAL) -> None:
    """Run both stages, each turning a switch back down `interval` seconds (5 by default)
    after it went up."""
    SwitchPositionReconciler(interval).setup_with_manager(manager)
    MachineReconciler(manager.api_reader, interval).setup_with_manager(manager)
    # +kubeforge:scaffold:builder


def main() -> None:
    """Run the manager (the container's entrypoint, `manager`): kubebuilder's flags and the
    cluster from the kubeconfig or, in a pod, the in-cluster configuration."""
    kubeforge.manager_main(setup, name="useless")


if __name__ == "__main__":
    main()
