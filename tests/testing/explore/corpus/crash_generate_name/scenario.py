"""A widget gets one child holding its message, named in its status."""

from __future__ import annotations

import kubeforge
from kubeforge.testing import TestEnv, eventually
from support import children, make_widget, read_widget, status_of


async def test_a_widget_gets_one_child(testenv: TestEnv, manager: kubeforge.Manager) -> None:
    await make_widget(testenv, "w", message="hi")

    async def one_child_named_in_status() -> bool:
        (phase, child), made = (
            status_of(await read_widget(testenv, "w")),
            await children(testenv, "w"),
        )
        return phase == "Ready" and [c.metadata.name for c in made] == [child]

    await eventually(one_child_named_in_status, timeout=10)
    (child,) = await children(testenv, "w")
    assert child.data == {"message": "hi"}
