"""The timeline model over observer records: queue waits, links from a write (or a change
the watch saw) to the reconciles it woke in either order of arrival, hot loops, conflicts,
and the bounded history."""

from __future__ import annotations

import gc
import itertools
from typing import Any

import pytest

from kubeforge._runtime.logs import ReconcileContext
from kubeforge._runtime.observer import (
    Delivered,
    Read,
    ReconcileFinished,
    ReconcileStarted,
    Trigger,
    Write,
)
from kubeforge._runtime.reconcile import Request
from kubeforge._runtime.timeline import (
    HOT_LOOP_RECONCILES,
    Change,
    Entry,
    Timeline,
    group_kind,
    latest_manager,
)
from kubeforge.clock import VirtualClock, use

KIND = "example.com/v1/At"
_ids = itertools.count()


class Run:
    """One reconcile told to a timeline, record by record."""

    def __init__(self, timeline: Timeline, controller: str, name: str) -> None:
        self.timeline = timeline
        self.request = Request("default", name)
        self.context = ReconcileContext(controller, "At", "default", name, f"r{next(_ids)}")

    def start(self, *triggers: Trigger) -> None:
        self.timeline.record(ReconcileStarted(self.context, self.request, triggers))

    def write(self, name: str, rv: str, code: int = 200, kind: str = KIND) -> None:
        error = None if code < 400 else "conflict"
        self.timeline.record(
            Write(self.context, "update", kind, "default", name, rv, "op", code, error)
        )

    def finish(self, outcome: str = "success", requeue_after: float = 0.0) -> None:
        self.timeline.record(
            ReconcileFinished(self.context, self.request, outcome, requeue_after, None, 0.01)
        )


def event(name: str, rv: str) -> Trigger:
    return Trigger("event", KIND, "default", name, rv, "MODIFIED")


def reconciles(timeline: Timeline) -> list[Entry]:
    return [e for e in timeline.entries() if e["type"] == "reconcile"]


def test_kinds_are_named_whatever_their_version() -> None:
    assert group_kind("apps/v1/Deployment") == "apps/Deployment"
    assert group_kind("v1/Pod") == "Pod"
    assert (
        latest_manager(
            {
                "managedFields": [
                    {"manager": "kubectl", "time": "2024-01-01T00:00:00Z"},
                    {"manager": "operator", "time": "2024-01-01T00:00:05Z"},
                ]
            }
        )
        == "operator"
    )


async def test_a_reconcile_names_its_queue_wait_and_the_write_that_woke_it() -> None:
    clock = VirtualClock()
    with use(clock):
        timeline = Timeline()
        first = Run(timeline, "at", "a")
        first.start(Trigger("requeue"))
        first.write("a", "10")
        first.finish()
        timeline.record(
            Delivered(
                "at", KIND, "MODIFIED", "default", "a", "10", (Request("default", "a"),), False, {}
            )
        )
        await clock.advance(1.5)
        second = Run(timeline, "at", "a")
        second.start(event("a", "10"))
        second.finish()
    one, two = reconciles(timeline)
    assert two["triggers"][0]["from"] == {"reconcile": one["seq"], "write": 0}
    assert two["wait"] == pytest.approx(1.5)
    assert one["writes"][0]["changed"] is True


def test_a_change_seen_after_the_reconcile_it_woke_is_linked_when_it_arrives() -> None:
    timeline = Timeline()
    run = Run(timeline, "at", "a")
    run.start(event("a", "7"))
    assert "from" not in reconciles(timeline)[0]["triggers"][0]
    timeline.change(Change("MODIFIED", KIND, "default", "a", "7", "kubectl-edit"))
    [change] = [e for e in timeline.entries() if e["type"] == "change"]
    assert reconciles(timeline)[0]["triggers"][0]["from"] == {"change": change["seq"]}
    assert change["manager"] == "kubectl-edit"


def test_a_change_an_observed_write_made_is_not_shown_twice() -> None:
    timeline = Timeline()
    run = Run(timeline, "at", "a")
    run.start(Trigger("requeue"))
    run.write("a", "11")
    timeline.change(Change("MODIFIED", KIND, "default", "a", "11", "op"))
    assert [e["type"] for e in timeline.entries()] == ["reconcile"]
    # ... and the other way round: the watch first, then the write's answer.
    other = Run(timeline, "at", "b")
    other.start(Trigger("requeue"))
    timeline.change(Change("MODIFIED", KIND, "default", "b", "12", "op"))
    other.write("b", "12")
    change = next(e for e in timeline.entries() if e["type"] == "change")
    assert change["by"] == reconciles(timeline)[1]["seq"]


def test_an_object_reconciled_again_and_again_with_writes_is_a_hot_loop() -> None:
    timeline = Timeline()
    for i in range(HOT_LOOP_RECONCILES):
        run = Run(timeline, "at", "a")
        run.start(Trigger("requeue"))
        run.write("a", str(100 + i))
        run.finish("requeue")
    entries = reconciles(timeline)
    assert entries[-1].get("hot") is True
    assert not any(e.get("hot") for e in entries[:-1])
    assert ("", "at", "default", "a") in timeline.hot
    # Reconciles that write nothing are no loop.
    quiet = Timeline()
    for _ in range(HOT_LOOP_RECONCILES * 2):
        run = Run(quiet, "at", "a")
        run.start(Trigger("requeue"))
        run.finish()
    assert not quiet.hot


def test_a_conflict_marks_its_reconcile() -> None:
    timeline = Timeline()
    run = Run(timeline, "at", "a")
    run.start(Trigger("requeue"))
    run.write("a", "", code=409)
    run.finish("error")
    [entry] = reconciles(timeline)
    assert entry["conflict"] is True
    assert entry["writes"][0]["code"] == 409
    assert timeline.conflicts == 1


def test_the_history_keeps_the_newest_entries_and_tells_listeners() -> None:
    timeline = Timeline(capacity=3)
    told: list[int] = []
    timeline.subscribe(told.append)
    for i in range(5):
        timeline.change(Change("ADDED", "v1/ConfigMap", "default", f"c{i}", str(i)))
    assert [e["name"] for e in timeline.entries()] == ["c2", "c3", "c4"]
    assert told == [1, 2, 3, 4, 5]
    assert timeline.document()["capacity"] == 3
    with pytest.raises(ValueError, match="at least one"):
        Timeline(capacity=0)


def _kept(timeline: Timeline) -> list[Any]:
    """Every object the timeline's own data reaches."""
    seen: dict[int, Any] = {}
    todo = list(vars(timeline).values())
    while todo:
        obj = todo.pop()
        if id(obj) not in seen:
            seen[id(obj)] = obj
            todo.extend(gc.get_referents(obj))
    return list(seen.values())


def test_the_timeline_keeps_plain_data_not_the_records() -> None:
    """A reconcile's reads, writes and triggers are kept as tuples, dicts, strings and
    numbers, which the garbage collector stops following once it has seen them; none of the
    records, nor the reconcile's context they name, stays alive in the timeline."""
    timeline = Timeline()
    run = Run(timeline, "cnat", "at")
    run.start(event("at", "1"))
    timeline.record(
        Read(run.context, "cache", "get", KIND, "default", "at", (("default", "at", "1"),))
    )
    run.write("at", "2")
    run.finish()
    records = (Read, Write, ReconcileStarted, ReconcileFinished, Trigger, ReconcileContext)
    assert not [o for o in _kept(timeline) if isinstance(o, records)]
    (entry,) = reconciles(timeline)
    assert entry["reads"][0]["rvs"] == ["1"] and entry["writes"][0]["rv"] == "2"
