"""Leader election on a Lease, as client-go's `leaderelection`: the manager runs a
`LeaderElector` when `leader_election=True`, and stops with `LeadershipLost` when the lease
is lost.
"""

from __future__ import annotations

from kubeforge._runtime.leaderelection import LeaderElector, LeadershipLost

__all__ = [
    "LeaderElector",
    "LeadershipLost",
]
