"""The pod both twins run for a widget."""

from __future__ import annotations

from kinds import WIDGET_LABEL, Widget

import kubeforge
from kubeforge.models import Container, Pod, PodSpec

__all__ = ["pod_for"]


def pod_for(widget: Widget) -> Pod:
    """A pod that runs for the widget's `seconds`, owned by it."""
    name = widget.metadata.name or ""
    pod = Pod(
        metadata=kubeforge.ObjectMeta(
            name=name, namespace=widget.metadata.namespace, labels={WIDGET_LABEL: name}
        ),
        spec=PodSpec(
            containers=[
                Container(name="work", image="busybox", command=["sleep", str(widget.spec.seconds)])
            ],
            restart_policy="Never",
        ),
    )
    kubeforge.set_controller_reference(widget, pod)
    return pod
