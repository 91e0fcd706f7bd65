"""A widget in mode a gets its mode a child."""

from __future__ import annotations

import kubeforge
from kubeforge.testing import TestEnv, eventually
from support import children, make_widget, read_widget, status_of


async def test_a_widget_gets_the_child_of_its_mode(
    testenv: TestEnv, manager: kubeforge.Manager
) -> None:
    await make_widget(testenv, "w", mode="a", message="hi")

    async def ready() -> bool:
        return status_of(await read_widget(testenv, "w")) == ("Ready", "w-a")

    await eventually(ready, timeout=10)
    (child,) = await children(testenv, "w")
    assert child.metadata.name == "w-a" and child.data == {"message": "hi"}
