"""The child of the current mode is made, and children of other modes are deleted."""

from __future__ import annotations

from kinds import WIDGET_LABEL, Widget, WidgetStatus

import kubeforge
from kubeforge.models import ConfigMap

MODE_LABEL = "corpus.kubeforge.dev/mode"


class WidgetReconciler(kubeforge.Reconciler):
    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            widget = await self.client.get(Widget, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        name = f"{request.name}-{widget.spec.mode}"
        data = {"message": widget.spec.message}
        for other in await self.client.list(
            ConfigMap, namespace=request.namespace, label_selector=f"{WIDGET_LABEL}={request.name}"
        ):
            if other.metadata.name != name:
                await kubeforge.ignore_not_found(
                    self.client.delete(
                        ConfigMap, other.metadata.name or "", namespace=request.namespace
                    )
                )
        try:
            child = await self.client.get(ConfigMap, name, namespace=request.namespace)
        except kubeforge.NotFound:
            child = ConfigMap(
                metadata=kubeforge.ObjectMeta(
                    name=name,
                    namespace=request.namespace,
                    labels={WIDGET_LABEL: request.name, MODE_LABEL: widget.spec.mode},
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
        if widget.status is None or widget.status.child != name:
            widget.status = WidgetStatus(phase="Ready", child=name)
            await self.client.update_status(widget)
        return None


def setup(manager: kubeforge.Manager) -> None:
    manager.controller().for_(Widget).owns(ConfigMap).complete(WidgetReconciler())
