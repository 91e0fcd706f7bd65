"""The widget's phase is read off the pod's phase as it is now."""

from __future__ import annotations

from kinds import Widget, WidgetStatus

import kubeforge
from kubeforge.models import Pod
from unobserved_phase.common import pod_for

PHASES = {"Pending": "Pending", "Running": "Running", "Succeeded": "Done", "Failed": "Done"}


class WidgetReconciler(kubeforge.Reconciler):
    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            widget = await self.client.get(Widget, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        phase = widget.status.phase if widget.status is not None else None
        if phase == "Done":
            return None
        try:
            pod = await self.client.get(Pod, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            await kubeforge.ignore_already_exists(self.client.create(pod_for(widget)))
            wanted = "Pending"
        else:
            seen = pod.status.phase if pod.status is not None else None
            wanted = PHASES.get(seen or "Pending", "Pending")
        if wanted != phase:
            widget.status = WidgetStatus(phase=wanted)
            await self.client.update_status(widget)
        return None


def setup(manager: kubeforge.Manager) -> None:
    manager.controller().for_(Widget).owns(Pod).complete(WidgetReconciler())
