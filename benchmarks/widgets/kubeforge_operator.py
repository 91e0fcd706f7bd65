"""The benchmark's operator written with kubeforge, as `kubeforge init` + `create api` would
lay it out: for each Widget, an owned ConfigMap holding its size, and a status naming the
ConfigMap and the generation it reflects.

    python benchmarks/widgets/kubeforge_operator.py      # KUBECONFIG names the cluster
"""

from __future__ import annotations

import asyncio
import os

from widget import Widget, WidgetStatus, config_map_name

import kubeforge
import kubeforge.logs
from kubeforge.models import ConfigMap, ObjectMeta


class WidgetReconciler(kubeforge.ObjectReconciler[Widget]):
    """Create or update the Widget's ConfigMap, then record what was made in its status."""

    async def reconcile(self, widget: Widget) -> kubeforge.Result | None:
        name = config_map_name(widget.metadata.name or "")
        config = ConfigMap(metadata=ObjectMeta(name=name, namespace=widget.metadata.namespace))

        def mutate(config: ConfigMap) -> None:
            config.data = {"size": str(widget.spec.size)}
            kubeforge.set_controller_reference(widget, config)

        await kubeforge.create_or_update(self.client, config, mutate)
        status = WidgetStatus(config_map=name, observed_generation=widget.metadata.generation)
        if widget.status != status:
            widget.status = status
            await self.client.update_status(widget)
        return None


def setup(manager: kubeforge.Manager, workers: int = 0) -> None:
    """Reconcile Widgets, and come back to one when its ConfigMap changes (`workers`: the
    controller's max_concurrent_reconciles, 0 for its default)."""
    builder = manager.controller().for_(Widget).owns(ConfigMap)
    if workers:
        builder = builder.with_options(max_concurrent_reconciles=workers)
    builder.complete(WidgetReconciler())


async def main() -> None:
    # What `kubeforge run` does: text logs at INFO, a Manager with its default options.
    kubeforge.logs.configure_logging("text")
    manager = kubeforge.Manager(kubeforge.load_config())
    # The benchmark's --workers (default: the controller's default).
    setup(manager, int(os.environ.get("WIDGET_WORKERS", "0")))
    if os.environ.get("WIDGET_TIMELINE"):
        # What the console records (`kubeforge-recording`): every reconcile on a timeline.
        from kubeforge._runtime.timeline import Timeline

        manager.add_observer(Timeline().observer("widgets"))
    await manager.run()


if __name__ == "__main__":
    asyncio.run(main())
