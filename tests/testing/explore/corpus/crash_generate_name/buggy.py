"""The child gets a generated name, remembered only in the status written afterwards."""

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
        data = {"message": widget.spec.message}
        if widget.status is None or not widget.status.child:
            child = ConfigMap(
                metadata=kubeforge.ObjectMeta(
                    generate_name=f"{request.name}-",
                    namespace=request.namespace,
                    labels={WIDGET_LABEL: request.name},
                ),
                data=data,
            )
            kubeforge.set_controller_reference(widget, child)
            created = await self.client.create(child)
            widget.status = WidgetStatus(phase="Ready", child=created.metadata.name)
            await self.client.update_status(widget)
            return None
        child = await self.client.get(ConfigMap, widget.status.child, namespace=request.namespace)
        if child.data != data:
            await self.client.patch(
                ConfigMap, widget.status.child, {"data": data}, namespace=request.namespace
            )
        return None


def setup(manager: kubeforge.Manager) -> None:
    manager.controller().for_(Widget).owns(ConfigMap).complete(WidgetReconciler())
