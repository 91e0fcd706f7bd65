"""The status is written only when it would change."""

from __future__ import annotations

from kinds import WIDGET_LABEL, Widget, WidgetStatus

import kubeforge
from kubeforge.models import ConfigMap
from kubeforge.predicate import GenerationChanged


class WidgetReconciler(kubeforge.Reconciler):
    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            widget = await self.client.get(Widget, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        name = f"{request.name}-child"
        child = ConfigMap(
            metadata=kubeforge.ObjectMeta(
                name=name, namespace=request.namespace, labels={WIDGET_LABEL: request.name}
            ),
            data={"message": widget.spec.message},
        )
        kubeforge.set_controller_reference(widget, child)
        await self.client.apply(child, field_manager="widget", force=True)
        if widget.status is None or (widget.status.phase, widget.status.child) != ("Ready", name):
            widget.status = WidgetStatus(phase="Ready", child=name)
            await self.client.update_status(widget)
        return None


def setup(manager: kubeforge.Manager) -> None:
    (
        manager.controller()
        .for_(Widget, predicates=[GenerationChanged()])
        .complete(WidgetReconciler())
    )
