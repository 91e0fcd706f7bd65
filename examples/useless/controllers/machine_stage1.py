"""Stage 1 of the useless machine: the machine's own switch, `spec.switchPosition`.

Someone turns it up; the controller notes when it first saw it so (`status.seenAt`) and
turns it back down once `interval` seconds have passed since then. The wait is a requeue,
never a sleep in reconcile, so a single worker keeps any number of machines going at once.

This controller owns `spec.switchPosition` and `status.seenAt` and writes nothing else, so
it runs next to the stage 2 controller (controllers/machine.py) on the same Machines.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import kubeforge

from api.v1alpha1 import DOWN, UP, Machine
from controllers.common import GROUP, INTERVAL, rfc3339

log = logging.getLogger(__name__)


@kubeforge.rbac(groups=GROUP, resources="machines", verbs=["get", "list", "watch", "patch"])
@kubeforge.rbac(groups=GROUP, resources="machines/status", verbs=["get", "update", "patch"])
class SwitchPositionReconciler(kubeforge.Reconciler):
    """Turns a Machine's `spec.switchPosition` back down `interval` seconds after it went up."""

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval

    def setup_with_manager(self, manager: kubeforge.Manager) -> None:
        """Register this reconciler for Machines, as controller `machine-stage1`."""
        manager.controller().for_(Machine).named("machine-stage1").complete(self)

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            machine = await self.client.get(Machine, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        seen_at = machine.status.seen_at if machine.status is not None else None

        if machine.spec.switch_position != UP:
            if seen_at is not None:
                # Down again (by us or anyone): the next time up starts a fresh wait.
                await self.set_seen_at(machine, None)
            return None

        now = datetime.now(UTC)
        if seen_at is None:
            await self.set_seen_at(machine, now)
            return kubeforge.Result(requeue_after=self.interval)

        left = (seen_at + timedelta(seconds=self.interval) - now).total_seconds()
        if left > 0:
            return kubeforge.Result(requeue_after=left)

        # The resourceVersion makes this a compare-and-swap: a machine changed since we read
        # it is a conflict, retried from what is there now.
        await self.client.patch(
            Machine,
            request.name,
            {
                "metadata": {"resourceVersion": machine.metadata.resource_version},
                "spec": {"switchPosition": DOWN},
            },
            namespace=request.namespace,
        )
        log.info("%s: switch turned back down after %.1f s", request, self.interval - left)
        return None  # that change brings us back, to clear seenAt

    async def set_seen_at(self, machine: Machine, when: datetime | None) -> None:
        """Write `status.seenAt` alone (a merge patch), leaving the rest of the status to
        the stage 2 controller."""
        await self.client.patch_status(
            Machine,
            machine.metadata.name or "",
            {"status": {"seenAt": rfc3339(when)}},
            namespace=machine.metadata.namespace,
        )
