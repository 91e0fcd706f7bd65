"""A widget gets a record and the finalizer that will clean it up."""

from __future__ import annotations

from kinds import FINALIZER

import kubeforge
from kubeforge.testing import TestEnv, eventually
from support import make_widget, read_widget, records


async def test_a_widget_gets_a_record(testenv: TestEnv, manager: kubeforge.Manager) -> None:
    await make_widget(testenv, "w")
    expected = f"{testenv.namespace}.w"

    async def recorded() -> bool:
        widget = await read_widget(testenv, "w")
        finalizers = widget.metadata.finalizers if widget is not None else None
        return await records(testenv) == [expected] and finalizers == [FINALIZER]

    await eventually(recorded, timeout=10)
