"""The child's name follows from the widget's, so a second pass finds the child the first
one made, whatever happened in between."""

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
        name = f"{request.name}-child"
        data = {"message": widget.spec.message}
        try:
            child = await self.client.get(ConfigMap, name, namespace=request.namespace)
        except kubeforge.NotFound:
            child = ConfigMap(
                metadata=kubeforge.ObjectMeta(
                    name=name, namespace=request.namespace, labels={WIDGET_LABEL: request.name}
                ),
                data=data,
            )
            kubeforge.set_controller_reference(widget, child)
            try:
                await self.client.create(child)
            except kubeforge.AlreadyExists:
                return kubeforge.Result(requeue=True)  # the cache lags: read it again
        else:
            if child.data != data:
                await self.client.patch(
                    ConfigMap, name, {"data": data}, namespace=request.namespace
                )
        if widget.status is None or (widget.status.phase, widget.status.child) != ("Ready", name):
            widget.status = WidgetStatus(phase="Ready", child=name)
            await self.client.update_status(widget)
        return None


def setup(manager: kubeforge.Manager) -> None:
    manager.controller().for_(Widget).owns(ConfigMap).complete(WidgetReconciler())
