"""A missing child, as the cache lists them, is made under a generated name."""

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
                    generate_name=f"{request.name}-",
                    namespace=request.namespace,
                    labels={WIDGET_LABEL: request.name},
                ),
                data=data,
            )
            kubeforge.set_controller_reference(widget, child)
            made = [await self.client.create(child)]
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
