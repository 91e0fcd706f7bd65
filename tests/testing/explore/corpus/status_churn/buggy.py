"""Every pass writes the status, stamped with the time of the pass."""

from __future__ import annotations

from datetime import UTC, datetime

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
        stamp = datetime.now(UTC).isoformat(timespec="microseconds")
        widget.status = WidgetStatus(phase=f"Ready since {stamp}", child=name)
        await self.client.update_status(widget)
        return None


def setup(manager: kubeforge.Manager) -> None:
    (
        manager.controller()
        .for_(Widget, predicates=[GenerationChanged()])
        .complete(WidgetReconciler())
    )
