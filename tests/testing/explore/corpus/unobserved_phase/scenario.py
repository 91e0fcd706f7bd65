"""A widget's pod runs to completion, and the widget says so."""

from __future__ import annotations

import kubeforge
from kubeforge.testing import TestEnv, eventually
from support import make_widget, read_widget, status_of


async def test_a_widget_is_done_when_its_pod_is(
    testenv: TestEnv, manager: kubeforge.Manager
) -> None:
    await make_widget(testenv, "w", seconds=1)

    async def done() -> bool:
        return status_of(await read_widget(testenv, "w"))[0] == "Done"

    await eventually(done, timeout=10)
