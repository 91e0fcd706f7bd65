"""The child has a name of its own: a second create of it fails instead of making two."""

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
        made = await self.client.list(
            ConfigMap, namespace=request.namespace, label_selector=f"{WIDGET_LABEL}={request.name}"
        )
        if not made:
            child = ConfigMap(
                metadata=kubeforge.ObjectMeta(
                    name=f"{request.name}-child",
                    namespace=request.namespace,
                    labels={WIDGET_LABEL: request.name},
                ),
                data=data,
            )
            kubeforge.set_controller_reference(widget, child)
            try:
                made = [await self.client.create(child)]
            except kubeforge.AlreadyExists:
                return kubeforge.Result(requeue=True)  # the cache lags: list again
        for child in made:
            if child.data != data:
                await self.client.patch(
                    ConfigMap,
                    child.metadata.name or "",
                    {"data": data},
                    namespace=request.namespace,
                )
        if widget.status is None or widget.status.phase != "Ready":
            widget.status = WidgetStatus(phase="Ready")
            await self.client.update_status(widget)
        return None


def setup(manager: kubeforge.Manager) -> None:
    manager.controller().for_(Widget).owns(ConfigMap).complete(WidgetReconciler())
