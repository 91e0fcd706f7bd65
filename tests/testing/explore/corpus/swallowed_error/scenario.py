"""A widget becomes Ready with its child."""

from __future__ import annotations

import kubeforge
from kubeforge.testing import TestEnv, eventually
from support import children, make_widget, read_widget, status_of


async def test_a_widget_becomes_ready(testenv: TestEnv, manager: kubeforge.Manager) -> None:
    await make_widget(testenv, "w", message="hi")

    async def ready() -> bool:
        return status_of(await read_widget(testenv, "w")) == ("Ready", "w-child")

    await eventually(ready, timeout=10)
    (child,) = await children(testenv, "w")
    assert child.data == {"message": "hi"}
