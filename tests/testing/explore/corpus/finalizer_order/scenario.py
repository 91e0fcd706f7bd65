"""A widget has a record while it lives, and none once deleted."""

from __future__ import annotations

from kinds import Widget

import kubeforge
from kubeforge.testing import TestEnv, eventually
from support import make_widget, read_widget, records


async def test_a_deleted_widget_takes_its_record_along(
    testenv: TestEnv, manager: kubeforge.Manager
) -> None:
    await make_widget(testenv, "w")
    expected = f"{testenv.namespace}.w"

    async def recorded() -> bool:
        return await records(testenv) == [expected]

    await eventually(recorded, timeout=10)
    await testenv.client.delete(Widget, "w", namespace=testenv.namespace)

    async def gone() -> bool:
        return await read_widget(testenv, "w") is None and await records(testenv) == []

    await eventually(gone, timeout=10)
