"""Stage 1: a machine turns its own switch (spec.switchPosition) back down, 5 seconds after
it first saw it up, as `kubectl get machines` shows."""

from __future__ import annotations

import time

import kubeforge
from kubeforge.testing import Kubectl, TestEnv, eventually

from tests.support import Row, machine, machine_row, table, with_interval


def seconds(age: str) -> int:
    """A short kubectl age such as `3s` in seconds (only seconds are expected here)."""
    assert age.endswith("s") and age[:-1].isdigit(), age
    return int(age[:-1])


async def test_the_switch_goes_back_down_five_seconds_after_it_was_seen_up(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    applied = time.monotonic()
    await kubectl.apply(machine("machine-1", position="up"))

    shown: list[Row] = []

    async def down() -> bool:
        row = await machine_row(kubectl, "machine-1")
        shown.append(row)
        return row["POSITION"] == "down"

    await eventually(down, timeout=15, interval=0.2)
    flipped = time.monotonic() - applied

    # Up, with SEEN counting the seconds since the controller noticed; then down 5 s later.
    while_up = [row for row in shown if row["POSITION"] == "up"]
    assert while_up and all(row["SEEN"] for row in while_up), shown
    assert max(seconds(row["SEEN"]) for row in while_up) >= 3, while_up
    assert 5.0 <= flipped < 8.0, flipped
    # Down again: seenAt is cleared, so the next time up gets a full wait of its own.
    assert shown[-1]["SEEN"] == ""
    status = (await kubectl.json("get", "machine", "machine-1")).get("status", {})
    assert "seenAt" not in status


async def test_every_time_up_gets_the_full_wait_and_machines_wait_in_parallel(
    testenv: TestEnv, kubectl: Kubectl, kubeforge_manager_config: kubeforge.ClusterConfig | None
) -> None:
    async with testenv.run_manager(with_interval(1.0), config=kubeforge_manager_config):
        names = [f"machine-{n}" for n in range(4)]
        started = time.monotonic()
        await kubectl.apply("---".join(machine(name, position="up") for name in names))

        async def all_down() -> bool:
            rows = table(await kubectl.run("get", "machines"))
            return len(rows) == 4 and all(row["POSITION"] == "down" for row in rows)

        await eventually(all_down, timeout=10, interval=0.1)
        # Four machines waiting one second each, with one worker: the waits are requeues,
        # so they overlap instead of adding up.
        assert 1.0 <= time.monotonic() - started < 3.0

        # Up again: the machine waits a whole interval once more, measured from now.
        again = time.monotonic()
        await kubectl.run(
            "patch",
            "machine",
            "machine-0",
            "--type=merge",
            "-p",
            '{"spec":{"switchPosition":"up"}}',
        )

        async def seen_up() -> bool:
            row = await machine_row(kubectl, "machine-0")
            return row["POSITION"] == "up" and row["SEEN"] != ""

        async def down() -> bool:
            return (await machine_row(kubectl, "machine-0"))["POSITION"] == "down"

        await eventually(seen_up, interval=0.1)
        await eventually(down, interval=0.1)
        assert time.monotonic() - again >= 1.0
