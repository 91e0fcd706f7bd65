"""The plan: perturbations only where the reference run read or wrote something they
change, the actions interleaved so that a budget still tries some of each."""

from __future__ import annotations

from typing import Any

from kubeforge._testing.explore.plan import make_plan


def reconcile(rid: str, request: str, *triggers: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "reconcile",
        "id": rid,
        "controller": "widget",
        "kind": "Widget",
        "request": request,
        "triggers": list(triggers),
    }


def event(obj: str, version: int) -> dict[str, Any]:
    return {"cause": "event", "event": "MODIFIED", "object": obj, "version": version}


def read(rid: str, *objects: tuple[str, int], target: str = "x") -> dict[str, Any]:
    return {
        "type": "read",
        "id": rid,
        "controller": "widget",
        "source": "cache",
        "target": target,
        "objects": [{"object": o, "version": v, "rv": str(v)} for o, v in objects],
        "error": None,
    }


def write(
    rid: str, verb: str, obj: str, number: int, version: int, digest: str = ""
) -> dict[str, Any]:
    return {
        "digest": digest or f"{verb} {obj} {number}",
        "type": "write",
        "id": rid,
        "controller": "widget",
        "request": "w",
        "verb": verb,
        "object": obj,
        "point": f"widget:{verb}:{obj}#{number}",
        "version": version,
        "error": None,
    }


def delivered(obj: str, version: int) -> dict[str, Any]:
    return {
        "type": "delivered",
        "controller": "widget",
        "event": "MODIFIED",
        "object": obj,
        "version": version,
        "initial": False,
    }


STEPS: list[dict[str, Any]] = [
    delivered("Widget/w", 1),
    reconcile("r1", "w", event("Widget/w", 1)),
    read("r1", ("Widget/w", 1)),
    write("r1", "create", "Pod/w", 1, 1),
    write("r1", "update_status", "Widget/w", 1, 2),
    delivered("Pod/w", 2),
    reconcile("r2", "w", event("Pod/w", 2)),
    read("r2", ("Widget/w", 2), ("Pod/w", 2)),
    delivered("Pod/w", 3),
    reconcile("r3", "w", event("Pod/w", 3)),
    read("r3", ("Widget/w", 2), ("Pod/w", 3)),
    write("r3", "update_status", "Widget/w", 2, 3),
    reconcile("r4", "w", {"cause": "requeue_after"}),
    read("r4", ("Pod/w", 3)),
    # an apply that found everything as it asked: no place of its own
    {**write("r4", "apply", "Service/w", 1, 1), "changed": False},
    # a status written again as it was before: no new place either
    write("r4", "update_status", "Widget/w", 3, 5, digest="update_status Widget/w 2"),
    {"type": "note", "what": "phase", "detail": "reconcile everything again"},
    reconcile("r5", "w", {"cause": "reconcile_all"}),
    write("r5", "update_status", "Widget/w", 4, 6),
    {"type": "note", "what": "phase", "detail": "delete what the test made"},
    reconcile("r6", "w", event("Widget/w", 5)),
    write("r6", "patch", "Widget/w", 1, 6),
]


def test_the_plan_follows_the_reference_run() -> None:
    plan = {str(p) for p in make_plan(STEPS, ["Widget/w"])}
    assert plan == {
        # every write that changed something while the test ran, and during the deletion
        # after it (not those of the convergence check)
        "crash@widget:create:Pod/w#1",
        "crash@widget:update_status:Widget/w#1",
        "crash@widget:update_status:Widget/w#2",
        "crash@widget:patch:Widget/w#1",
        "error@widget:create:Pod/w#1",
        "error@widget:update_status:Widget/w#1",
        "error@widget:update_status:Widget/w#2",
        "error@widget:patch:Widget/w#1",
        # deleted mid-creation: only after writes while the test ran
        "delete@widget:create:Pod/w#1",
        "delete@widget:update_status:Widget/w#1",
        "delete@widget:update_status:Widget/w#2",
        # a stale read of the pod only where no event of that version queued the reconcile
        "stale@widget:Pod/w#3",
        # the pod's version 2 was delivered, read, and followed by another
        "coalesce@Pod/w#2",
        "revert@Widget/w",
    }


def test_the_actions_take_turns() -> None:
    plan = [p.action for p in make_plan(STEPS, ["Widget/w"])]
    assert plan[:6] == ["crash", "error", "stale", "coalesce", "delete", "revert"]
    only = {p.action for p in make_plan(STEPS, ["Widget/w"], actions=("stale", "revert"))}
    assert only == {"stale", "revert"}


def test_objects_the_operator_made_are_not_reverted_or_deleted() -> None:
    plan = {str(p) for p in make_plan(STEPS, ["Widget/w", "Pod/w"])}
    assert "revert@Pod/w" not in plan
    assert not any(p.startswith("delete@") and "Pod" in p.split(":")[0] for p in plan)
