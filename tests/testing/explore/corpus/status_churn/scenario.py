"""A widget gets its child and says it is ready."""

from __future__ import annotations

import kubeforge
from kubeforge.testing import TestEnv, eventually
from support import children, make_widget, read_widget, status_of


async def test_a_widget_is_ready_with_its_child(
    testenv: TestEnv, manager: kubeforge.Manager
) -> None:
    await make_widget(testenv, "w", message="hi")

    async def ready() -> bool:
        phase, child = status_of(await read_widget(testenv, "w"))
        return (phase or "").startswith("Ready") and child == "w-child"

    await eventually(ready, timeout=10)
    (child,) = await children(testenv, "w")
    assert child.data == {"message": "hi"}
