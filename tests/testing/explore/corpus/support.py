"""What the corpus's scenarios share: making a widget and reading what its operator made."""

from __future__ import annotations

from typing import Any

from kinds import WIDGET_LABEL, Record, Widget, WidgetSpec

import kubeforge
from kubeforge.models import ConfigMap
from kubeforge.testing import TestEnv


async def make_widget(testenv: TestEnv, name: str, **spec: Any) -> Widget:
    """Create a widget in the test's namespace."""
    widget = Widget(
        metadata=kubeforge.ObjectMeta(name=name, namespace=testenv.namespace),
        spec=WidgetSpec(**spec),
    )
    created: Widget = await testenv.client.create(widget)
    return created


async def read_widget(testenv: TestEnv, name: str) -> Widget | None:
    """The widget as the server has it (None once gone)."""
    try:
        found: Widget = await testenv.client.get(Widget, name, namespace=testenv.namespace)
    except kubeforge.NotFound:
        return None
    return found


async def children(testenv: TestEnv, name: str) -> list[ConfigMap]:
    """The ConfigMaps labelled as the widget's."""
    return list(
        await testenv.client.list(
            ConfigMap, namespace=testenv.namespace, label_selector=f"{WIDGET_LABEL}={name}"
        )
    )


async def records(testenv: TestEnv) -> list[str]:
    """The names of every Record."""
    return [r.metadata.name or "" for r in await testenv.client.list(Record)]


def status_of(widget: Widget | None) -> tuple[str | None, str | None]:
    """(phase, child) of a widget's status."""
    if widget is None or widget.status is None:
        return None, None
    return widget.status.phase, widget.status.child
