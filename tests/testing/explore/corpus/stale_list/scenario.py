"""A widget gets one child holding its message."""

from __future__ import annotations

import kubeforge
from kubeforge.testing import TestEnv, eventually
from support import children, make_widget, read_widget, status_of


async def test_a_widget_gets_a_child(testenv: TestEnv, manager: kubeforge.Manager) -> None:
    await make_widget(testenv, "w", message="hi")

    async def ready() -> bool:
        return status_of(await read_widget(testenv, "w"))[0] == "Ready"

    await eventually(ready, timeout=10)
    made = await children(testenv, "w")
    assert made and all(child.data == {"message": "hi"} for child in made)
