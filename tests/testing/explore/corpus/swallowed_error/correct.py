"""An error from the API server fails the reconcile, which is retried with backoff."""

from __future__ import annotations

from kinds import WIDGET_LABEL, Widget, WidgetStatus

import kubeforge
from kubeforge.models import ConfigMap


class WidgetReconciler(kubeforge.Reconciler):
    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            widget = await self.client.get(Widget, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        if widget.status is not None and widget.status.phase == "Ready":
            return None
        name = f"{request.name}-child"
        child = ConfigMap(
            metadata=kubeforge.ObjectMeta(
                name=name, namespace=request.namespace, labels={WIDGET_LABEL: request.name}
            ),
            data={"message": widget.spec.message},
        )
        kubeforge.set_controller_reference(widget, child)
        await kubeforge.ignore_already_exists(self.client.create(child))
        widget.status = WidgetStatus(phase="Ready", child=name)
        await self.client.update_status(widget)
        return None


def setup(manager: kubeforge.Manager) -> None:
    manager.controller().for_(Widget).complete(WidgetReconciler())
