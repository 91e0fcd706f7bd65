"""Running follows Pending, and Done follows Running: each step needs the one before."""

from __future__ import annotations

from kinds import Widget, WidgetStatus

import kubeforge
from kubeforge.models import Pod
from unobserved_phase.common import pod_for


class WidgetReconciler(kubeforge.Reconciler):
    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            widget = await self.client.get(Widget, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        phase = widget.status.phase if widget.status is not None else None
        try:
            pod = await self.client.get(Pod, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            if phase is None:
                await kubeforge.ignore_already_exists(self.client.create(pod_for(widget)))
                await self.set_phase(widget, "Pending")
            return None
        seen = pod.status.phase if pod.status is not None else None
        if phase == "Pending" and seen == "Running":
            await self.set_phase(widget, "Running")
        elif phase == "Running" and seen == "Succeeded":
            await self.set_phase(widget, "Done")
        return None

    async def set_phase(self, widget: Widget, phase: str) -> None:
        widget.status = WidgetStatus(phase=phase)
        await self.client.update_status(widget)


def setup(manager: kubeforge.Manager) -> None:
    manager.controller().for_(Widget).owns(Pod).complete(WidgetReconciler())
