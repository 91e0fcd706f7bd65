"""Stage 2: a Machine keeps `spec.switches` Switch objects and flips them back down, as
`kubectl get machines` and `kubectl get switches` show."""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import datetime

import kubeforge
from kubeforge.testing import (
    FlakyReconciler,
    Interceptors,
    Kubectl,
    TestEnv,
    eventually,
    fail_with,
    metric_value,
    server_error,
)

from api.v1alpha1 import Machine, Switch
from controllers.machine import MachineReconciler
from controllers.machine_stage1 import SwitchPositionReconciler
from controllers.switch import machine_of
from main import setup
from tests.support import (
    controller_of,
    machine,
    machine_row,
    switch_rows,
    table,
    with_interval,
)

UP = '{"spec":{"position":"up"}}'


async def positions_are(kubectl: Kubectl, name: str, positions: str) -> bool:
    row = await machine_row(kubectl, name)
    return row["SWITCHES"] == str(len(positions)) and row["POSITIONS"] == positions


async def switch_names(kubectl: Kubectl, machine_name: str) -> list[str]:
    return [row["NAME"] for row in await switch_rows(kubectl, machine_name)]


async def test_a_machine_makes_its_switches_and_follows_scaling(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(machine("machine-1", switches=3))
    await eventually(lambda: positions_are(kubectl, "machine-1", "ddd"))

    rows = await switch_rows(kubectl, "machine-1")
    assert [(row["POSITION"], row["MACHINE"], row["SEEN"]) for row in rows] == [
        ("down", "machine-1", "")
    ] * 3
    assert all(row["NAME"].startswith("switch-") for row in rows)
    first = [row["NAME"] for row in rows]

    owner = await kubectl.json("get", "machine", "machine-1")
    for name in first:
        ref = controller_of(await kubectl.json("get", "switch", name))
        assert ref is not None
        assert (ref["kind"], ref["name"], ref["uid"]) == (
            "Machine",
            "machine-1",
            owner["metadata"]["uid"],
        )

    await kubectl.run(
        "patch", "machine", "machine-1", "--type=merge", "-p", '{"spec":{"switches":5}}'
    )
    await eventually(lambda: positions_are(kubectl, "machine-1", "ddddd"))
    five = await switch_names(kubectl, "machine-1")  # oldest first, as positions lists them
    assert len(five) == 5 and set(first) < set(five)

    # Scaling down deletes the newest switches (creation time, then name for a tie).
    await kubectl.run(
        "patch", "machine", "machine-1", "--type=merge", "-p", '{"spec":{"switches":2}}'
    )
    await eventually(lambda: positions_are(kubectl, "machine-1", "dd"))
    assert await switch_names(kubectl, "machine-1") == five[:2]

    # A switch deleted by hand is replaced.
    await kubectl.run("delete", "switch", five[0])
    await eventually(lambda: _replaced(kubectl, "machine-1", five[0]))
    assert (await machine_row(kubectl, "machine-1"))["POSITIONS"] == "dd"


async def _replaced(kubectl: Kubectl, machine_name: str, gone: str) -> bool:
    names = await switch_names(kubectl, machine_name)
    return len(names) == 2 and gone not in names


async def test_a_switch_turned_up_shows_in_positions_then_flips_back(
    testenv: TestEnv, kubectl: Kubectl, kubeforge_manager_config: kubeforge.ClusterConfig | None
) -> None:
    async with testenv.run_manager(with_interval(1.0), config=kubeforge_manager_config):
        await kubectl.apply(machine("machine-1", switches=3))
        await eventually(lambda: positions_are(kubectl, "machine-1", "ddd"))
        middle = (await switch_names(kubectl, "machine-1"))[1]

        turned = time.monotonic()
        await kubectl.run("patch", "switch", middle, "--type=merge", "-p", UP)

        async def seen_up() -> bool:
            (row,) = table(await kubectl.run("get", "switch", middle))
            return row["POSITION"] == "up" and row["SEEN"] != ""

        await eventually(seen_up, interval=0.1)
        assert await positions_are(kubectl, "machine-1", "dud")
        await eventually(lambda: positions_are(kubectl, "machine-1", "ddd"), interval=0.1)
        assert time.monotonic() - turned >= 1.0

        (row,) = table(await kubectl.run("get", "switch", middle))
        assert (row["POSITION"], row["SEEN"]) == ("down", "")
        wide = await machine_row(kubectl, "machine-1", "-o", "wide")
        assert wide["FLIPPED"] != ""


async def test_a_machine_flips_at_most_one_switch_per_interval(
    testenv: TestEnv, kubectl: Kubectl, kubeforge_manager_config: kubeforge.ClusterConfig | None
) -> None:
    interval = 1.0
    async with testenv.run_manager(with_interval(interval), config=kubeforge_manager_config):
        await kubectl.apply(machine("machine-1", switches=3))
        await eventually(lambda: positions_are(kubectl, "machine-1", "ddd"))
        names = await switch_names(kubectl, "machine-1")

        columns = "custom-columns=POSITIONS:.status.positions,FLIPPED:.status.flippedAt"
        watch = await kubectl.start(
            "get", "machine", "machine-1", "-w", "--no-headers", "-o", columns
        )
        try:
            for name in names:
                await kubectl.run("patch", "switch", name, "--type=merge", "-p", UP)
            seen: list[tuple[str, str]] = []
            assert watch.stdout is not None
            while not seen or seen[-1][0] != "ddd" or all("u" not in p for p, _ in seen):
                line = await asyncio.wait_for(watch.stdout.readline(), 15)
                assert line, "the watch ended"
                positions, flipped = line.decode().split()
                seen.append((positions, flipped))
        finally:
            watch.kill()
            await watch.wait()

    assert ("uuu", "<none>") in seen, seen
    # Each flip took one switch down, and the flips (server times) are an interval apart.
    counts = [p.count("u") for p, _ in seen]
    assert all(b >= a - 1 for a, b in itertools.pairwise(counts)), seen
    flips = sorted({datetime.fromisoformat(f) for _, f in seen if f != "<none>"})
    assert len(flips) == 3, seen
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(flips)]
    assert all(gap >= interval for gap in gaps), gaps


async def test_a_switch_moved_in_is_kept_when_the_pass_that_adopted_it_failed(
    testenv: TestEnv, kubectl: Kubectl, kubeforge_manager_config: kubeforge.ClusterConfig | None
) -> None:
    # machine-b's scale-down fails once right after it adopted the switch moved in (its
    # first delete of a switch answers 500): the pass that knew which switch was new is
    # gone, and the next one must still keep the moved switch over machine-b's own.
    first_delete_fails = Interceptors(delete=fail_with(server_error(), kind=Switch, times=1))
    async with testenv.run_manager(
        setup, config=kubeforge_manager_config, interceptors=first_delete_fails
    ):
        await kubectl.apply(machine("machine-b", switches=2))
        await eventually(lambda: positions_are(kubectl, "machine-b", "dd"))
        # machine-a's switch is the youngest of all: by age alone, it would go first.
        await kubectl.apply(machine("machine-a", switches=1))
        await eventually(lambda: positions_are(kubectl, "machine-a", "d"))
        (moved,) = await switch_names(kubectl, "machine-a")
        oldest, _ = await switch_names(kubectl, "machine-b")

        await kubectl.run("label", "switch", moved, "machine=machine-b", "--overwrite")

        async def kept() -> bool:
            return sorted(await switch_names(kubectl, "machine-b")) == sorted([oldest, moved])

        await eventually(kept)
        switch = await kubectl.json("get", "switch", moved)
        assert switch["metadata"]["annotations"]["useless.container.training/moved-in"] == "true"


async def test_relabelling_a_switch_moves_it_to_another_machine(
    manager: kubeforge.Manager, kubectl: Kubectl
) -> None:
    await kubectl.apply(machine("machine-a", switches=1) + "---" + machine("machine-b", switches=2))
    await eventually(lambda: positions_are(kubectl, "machine-a", "d"))
    await eventually(lambda: positions_are(kubectl, "machine-b", "dd"))
    (moved,) = await switch_names(kubectl, "machine-a")
    b_before = await switch_names(kubectl, "machine-b")

    await kubectl.run("label", "switch", moved, "machine=machine-b", "--overwrite")

    # machine-b counts the newcomer and keeps it (deleting its own newest switch), and
    # becomes its controller; machine-a makes a replacement.
    async def settled() -> bool:
        a, b = await switch_names(kubectl, "machine-a"), await switch_names(kubectl, "machine-b")
        return len(a) == 1 and a != [moved] and sorted(b) == sorted([b_before[0], moved])

    await eventually(settled)
    owner_b = await kubectl.json("get", "machine", "machine-b")
    switch = await kubectl.json("get", "switch", moved)
    assert [(r["name"], r["uid"]) for r in switch["metadata"]["ownerReferences"]] == [
        ("machine-b", owner_b["metadata"]["uid"])
    ]
    assert controller_of(switch) is not None
    await eventually(lambda: positions_are(kubectl, "machine-a", "d"))
    await eventually(lambda: positions_are(kubectl, "machine-b", "dd"))

    # Without the label it belongs to no machine: machine-b lets go of it (so deleting
    # machine-b no longer deletes it) and replaces it.
    await kubectl.run("label", "switch", moved, "machine-")

    async def released() -> bool:
        refs = (await kubectl.json("get", "switch", moved))["metadata"].get("ownerReferences")
        names = await switch_names(kubectl, "machine-b")
        return not refs and len(names) == 2 and moved not in names

    await eventually(released)
    survivors = {moved, *await switch_names(kubectl, "machine-a")}
    await kubectl.run("delete", "machine", "machine-b")

    async def only_survivors() -> bool:
        rows = table(await kubectl.run("get", "switches"))
        return {row["NAME"] for row in rows} == survivors

    await eventually(only_survivors)
    (row,) = [row for row in table(await kubectl.run("get", "switches")) if row["NAME"] == moved]
    assert row["MACHINE"] == ""


async def test_switches_are_garbage_collected_with_their_machine(
    manager: kubeforge.Manager, kubectl: Kubectl, testenv: TestEnv
) -> None:
    await kubectl.apply(machine("machine-1", switches=3) + "---" + machine("machine-2"))
    await eventually(lambda: positions_are(kubectl, "machine-1", "ddd"))
    await eventually(lambda: positions_are(kubectl, "machine-2", "d"))
    names = await switch_names(kubectl, "machine-1")

    await kubectl.run("delete", "machine", "machine-1")
    await kubectl.run("wait", "--for=delete", *(f"switch/{n}" for n in names), "--timeout=30s")
    rows = table(await kubectl.run("get", "switches"))
    assert [row["MACHINE"] for row in rows] == ["machine-2"]

    await kubectl.run("delete", "machine", "machine-2")
    await eventually(lambda: _none_left(kubectl, testenv.namespace))


async def _none_left(kubectl: Kubectl, namespace: str) -> bool:
    result = await kubectl.run("get", "switches")
    return result.out == "" and f"No resources found in {namespace} namespace." in result.err


async def test_out_of_range_switch_counts_are_rejected_with_the_field_path(
    testenv: TestEnv, kubectl: Kubectl
) -> None:
    for count, message in (
        (
            0,
            "spec.switches: Invalid value: 0: "
            "spec.switches in body should be greater than or equal to 1",
        ),
        (
            17,
            "spec.switches: Invalid value: 17: "
            "spec.switches in body should be less than or equal to 16",
        ),
    ):
        result = await kubectl.run(
            "apply", "-f", "-", stdin=machine("bad", switches=count), check=False
        )
        assert result.code != 0
        assert 'The Machine "bad" is invalid' in result.err
        assert message in result.err, result.err

    sideways = await kubectl.run(
        "apply", "-f", "-", stdin=machine("bad", position="sideways"), check=False
    )
    assert 'spec.switchPosition: Unsupported value: "sideways"' in sideways.err

    # The limits hold for updates too.
    await kubectl.apply(machine("good", switches=16))
    too_many = await kubectl.run(
        "patch", "machine", "good", "--type=merge", "-p", '{"spec":{"switches":17}}', check=False
    )
    assert too_many.code != 0 and "spec.switches: Invalid value: 17" in too_many.err
    assert (await kubectl.run("get", "machine", "bad", check=False)).code != 0


async def test_a_failing_reconciler_is_retried_with_backoff(
    testenv: TestEnv, kubectl: Kubectl, kubeforge_manager_config: kubeforge.ClusterConfig | None
) -> None:
    flaky: FlakyReconciler | None = None

    def setup_flaky(manager: kubeforge.Manager) -> None:
        nonlocal flaky
        flaky = FlakyReconciler(MachineReconciler(manager.api_reader, 1.0), failures=5)
        SwitchPositionReconciler(1.0).setup_with_manager(manager)
        # Registered as MachineReconciler.setup_with_manager registers the real one.
        manager.controller().for_(Machine).owns(Switch).watches(Switch, machine_of).complete(flaky)

    # Only the test's namespace: the backoff it measures is one object's, which objects that
    # other tests left behind on a shared cluster must not interleave with.
    async with testenv.run_manager(
        setup_flaky, config=kubeforge_manager_config, namespaces=[testenv.namespace]
    ) as manager:
        # Nothing else writes to the machine meanwhile: an event would cut a backoff short.
        await kubectl.apply(machine("flaky", switches=2))
        await eventually(lambda: positions_are(kubectl, "flaky", "dd"), timeout=20)
        assert flaky is not None
        gaps = flaky.gaps()
        # Per-request exponential backoff from 5 ms: no sooner than 5, 10, 20, 40 ms.
        assert gaps[3] >= 0.04 and sum(gaps[:4]) >= 0.075, gaps
        errors = "controller_runtime_reconcile_errors_total"
        assert metric_value(manager, errors, controller="machine") == 5
        assert metric_value(manager, errors, controller="machine-stage1") == 0
        assert manager.running.is_set()
        # Stage 1, unaffected, still turns the machine's own switch back down.
        await kubectl.run(
            "patch", "machine", "flaky", "--type=merge", "-p", '{"spec":{"switchPosition":"up"}}'
        )
        await eventually(lambda: _position_down(kubectl, "flaky"))
    assert len(await switch_names(kubectl, "flaky")) == 2  # made once, not once per retry


async def _position_down(kubectl: Kubectl, name: str) -> bool:
    return (await machine_row(kubectl, name))["POSITION"] == "down"
