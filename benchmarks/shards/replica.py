"""One replica of the sharded operator benchmarks/sharding.py measures: a ConfigMap controller,
sharded, whose reconcile waits 50 ms as if on a slow external system.

    python replica.py KUBECONFIG NAMESPACE IDENTITY LOG WORKERS LEASE_SECONDS

Each reconcile appends `start <name> <round> <time>` and `end <name> <round> <time>` to LOG
(`round` is the ConfigMap's data.round), which the benchmark reads to follow progress and to
check that no object was ever in two replicas' reconciles at once.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

import kubeforge
from kubeforge import clock

KUBECONFIG, NAMESPACE, IDENTITY, LOG, WORKERS, LEASE = sys.argv[1:7]
WORK = 0.05  # seconds of I/O per reconcile
CM = "v1/ConfigMap"


class SlowReconciler(kubeforge.Reconciler):
    def __init__(self, log: TextIO) -> None:
        self.out = log

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        cm = await self.client.get(CM, request.name, namespace=request.namespace)
        step = (cm.get("data") or {}).get("round", "")
        self.out.write(f"start {request.name} {step} {clock.time():.6f}\n")
        await clock.sleep(WORK)
        self.out.write(f"end {request.name} {step} {clock.time():.6f}\n")
        return None


async def main() -> None:
    lease = float(LEASE)
    with open(LOG, "a", buffering=1) as log:
        manager = kubeforge.Manager(
            kubeforge.load_config(kubeconfig=KUBECONFIG),
            namespace=NAMESPACE,
            leader_election_namespace=NAMESPACE,
            identity=IDENTITY,
        )
        manager.controller().for_(CM).with_options(max_concurrent_reconciles=int(WORKERS)).sharded(
            ring="bench",
            lease_duration=lease,
            renew_deadline=lease * 2 / 3,
            retry_period=lease * 2 / 15,
        ).complete(SlowReconciler(log))
        await manager.run()


if __name__ == "__main__":
    asyncio.run(main())
