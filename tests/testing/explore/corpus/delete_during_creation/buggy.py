"""The record first, then the finalizer."""

from __future__ import annotations

from kinds import FINALIZER, Record, RecordSpec, Widget, key, record_name

import kubeforge


class WidgetReconciler(kubeforge.Reconciler):
    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        try:
            widget = await self.client.get(Widget, request.name, namespace=request.namespace)
        except kubeforge.NotFound:
            return None
        if widget.metadata.deletion_timestamp is not None:
            await kubeforge.ignore_not_found(self.client.delete(Record, record_name(widget)))
            await kubeforge.release_finalizer(self.client, widget, FINALIZER)
            return None
        record = Record(
            metadata=kubeforge.ObjectMeta(name=record_name(widget)),
            spec=RecordSpec(widget=key(widget)),
        )
        await kubeforge.ignore_already_exists(self.client.create(record))
        await kubeforge.ensure_finalizer(self.client, widget, FINALIZER)
        return None


def setup(manager: kubeforge.Manager) -> None:
    manager.controller().for_(Widget).complete(WidgetReconciler())
