"""On deletion: the record first, then the finalizer (kubeforge.with_finalizer)."""

from __future__ import annotations

from kinds import FINALIZER, Record, RecordSpec, Widget, key, record_name

import kubeforge


class WidgetReconciler(kubeforge.Reconciler):
    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            widget = await self.client.get(Widget, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        return await kubeforge.with_finalizer(
            self.client, widget, FINALIZER, apply=self.apply, cleanup=self.cleanup
        )

    async def apply(self, widget: Widget) -> None:
        record = Record(
            metadata=kubeforge.ObjectMeta(name=record_name(widget)),
            spec=RecordSpec(widget=key(widget)),
        )
        await kubeforge.ignore_already_exists(self.client.create(record))

    async def cleanup(self, widget: Widget) -> None:
        await kubeforge.ignore_not_found(self.client.delete(Record, record_name(widget)))


def setup(manager: kubeforge.Manager) -> None:
    manager.controller().for_(Widget).complete(WidgetReconciler())
