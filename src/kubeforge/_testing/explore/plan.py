"""The perturbations worth trying in a test, learned from its reference run's trace.

Only places where the reference run read or wrote something the perturbation changes are
kept (the pruning Sieve does with its reference trace):

- `crash` and `error` after/at each distinct write a reconcile made that changed something:
  one that left its object as an earlier one did is no new place (bookkeeping kinds, and
  the writes of the convergence check, aside);
- `stale` at each version of an object a controller read from its cache, unless an event
  of that version (or a later one) queued the reconcile, or it is the object the reconcile
  is for (the informer's store holds what it delivers before its handlers hear of it);
- `coalesce` from each version of an object that a controller's watch delivered and a
  reconcile then read, when later versions followed (and the version was not the manager's
  own write, which its cache holds at once);
- `delete` after each write a reconcile of an object the test made did while the test ran;
- `revert` for each object of a reconciled kind the test made;
- `advance` for each `requeue_after` a reconcile asked for: after the test, the virtual
  clock moves past it (only for a test on virtual time).

The plan interleaves the actions, so that a budget smaller than the plan still tries some
of each.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import zip_longest
from typing import Any

from kubeforge._testing.explore.points import Perturbation
from kubeforge._testing.explore.trace import may_be_stale

__all__ = ["make_plan"]

Step = Mapping[str, Any]


def _test_steps(steps: Sequence[Step]) -> tuple[list[Step], list[Step]]:
    """The steps while the test ran, and those of the deletion phase after it."""
    during: list[Step] = []
    deleting: list[Step] = []
    phase = ""
    for step in steps:
        if step["type"] == "note" and step.get("what") == "phase":
            phase = str(step.get("detail") or "")
            continue
        if not phase:
            during.append(step)
        elif phase.startswith("delete"):
            deleting.append(step)
    return during, deleting


def _split(point: str) -> Perturbation:
    head, _, number = point.rpartition("#")
    controller, verb, obj = head.split(":", 2)
    return Perturbation("", controller, verb, obj, int(number))


def make_plan(
    steps: Sequence[Step],
    primaries: Iterable[str],
    *,
    actions: Iterable[str] = ("crash", "error", "stale", "coalesce", "delete", "revert", "advance"),
) -> list[Perturbation]:
    """The perturbations to try, most varied first (see the module)."""
    during, deleting = _test_steps(steps)
    wanted = set(actions)
    kinds: dict[str, str] = {}  # reconcile id -> the kind it reconciles
    for step in during + deleting:
        if step["type"] == "reconcile":
            kinds[str(step["id"])] = str(step["kind"])
    writes = [s for s in during + deleting if _made_a_change(s)]
    points = _distinct(writes)
    crashes = [_at("crash", p) for p in points] if "crash" in wanted else []
    errors = [_at("error", p) for p in points] if "error" in wanted else []
    made = {str(s["object"]) for s in writes if s["verb"] == "create"}
    owned = set(primaries) - made
    deletes = []
    if "delete" in wanted:
        during_points = _distinct(
            [
                s
                for s in during
                if _made_a_change(s) and f"{kinds.get(str(s['id']), '')}/{s['request']}" in owned
            ]
        )
        deletes = [_at("delete", p) for p in during_points]
    stale = _stale(during) if "stale" in wanted else []
    coalesce = _coalesce(during) if "coalesce" in wanted else []
    reverts = (
        [Perturbation("revert", object=primary) for primary in sorted(owned)]
        if "revert" in wanted
        else []
    )
    advances = _advances(during) if "advance" in wanted else []
    plan: list[Perturbation] = []
    for row in zip_longest(crashes, errors, stale, coalesce, deletes, reverts, advances):
        plan.extend(p for p in row if p is not None)
    return list(dict.fromkeys(plan))


def _made_a_change(step: Step) -> bool:
    """Whether a step is a reconcile's write that changed something (a write that found
    everything as it asked is no place of its own)."""
    return (
        step["type"] == "write"
        and bool(step["controller"])
        and not step["error"]
        and step.get("changed", True) is not False
    )


def _distinct(writes: Sequence[Step]) -> list[str]:
    """The first place of each distinct write: a write that left its object as an earlier
    one of the same controller and verb did (the same digest) is no new place."""
    seen: dict[tuple[str, str, str, str], str] = {}
    for step in writes:
        key = (
            str(step["controller"]),
            str(step["verb"]),
            str(step["object"]),
            str(step.get("digest")),
        )
        seen.setdefault(key, str(step["point"]))
    return list(seen.values())


def _at(action: str, point: str) -> Perturbation:
    where = _split(point)
    return Perturbation(action, where.controller, where.verb, where.object, where.number)


def _stale(steps: Sequence[Step]) -> list[Perturbation]:
    """A stale read at each version a controller read of an object other than the one
    its reconcile was for; reads of reconciles that then wrote come first."""
    reconciled: dict[str, str] = {}
    reconciles: dict[str, Step] = {}
    wrote: set[str] = set()
    for step in steps:
        if step["type"] == "reconcile":
            reconciled[str(step["id"])] = f"{step['kind']}/{step['request']}"
            reconciles[str(step["id"])] = step
        elif step["type"] == "write" and not step["error"]:
            wrote.add(str(step["id"]))
    first: list[Perturbation] = []
    later: list[Perturbation] = []
    for step in steps:
        if step["type"] != "read" or step["source"] != "cache":
            continue
        own = reconciled.get(str(step["id"]))
        targets = [(str(o["object"]), int(o["version"])) for o in step["objects"]]
        if not targets and step.get("error") and "/" in str(step["target"]):
            continue  # a NotFound: an older view of nothing is nothing
        for obj, version in targets:
            if obj == own or not may_be_stale(reconciles.get(str(step["id"])), obj, version):
                continue
            found = Perturbation("stale", str(step["controller"]), object=obj, number=version)
            (first if str(step["id"]) in wrote else later).append(found)
    return list(dict.fromkeys(first + later))


def _coalesce(steps: Sequence[Step]) -> list[Perturbation]:
    """Hold back events from each delivered version that was read and had successors."""
    delivered: dict[str, set[int]] = {}
    written: dict[str, set[int]] = {}
    read: set[tuple[str, int]] = set()
    for step in steps:
        if step["type"] == "delivered" and not step["initial"]:
            delivered.setdefault(str(step["object"]), set()).add(int(step["version"]))
        elif step["type"] == "write" and not step["error"]:
            written.setdefault(str(step["object"]), set()).add(int(step["version"]))
        elif step["type"] == "read":
            read.update((str(o["object"]), int(o["version"])) for o in step["objects"])
    found = []
    for obj, versions in delivered.items():
        others = versions - written.get(obj, set())
        for version in sorted(others):
            later = [v for v in others if v > version]
            if later and (obj, version) in read:
                found.append(Perturbation("coalesce", object=obj, number=version))
    return found


def _advances(steps: Sequence[Step]) -> list[Perturbation]:
    """After each requeue_after a reconcile asked for, the clock moved past it."""
    counts: dict[tuple[str, str], int] = {}
    found = []
    kinds: dict[str, str] = {}
    for step in steps:
        if step["type"] == "reconcile":
            kinds[str(step["id"])] = str(step["kind"])
        if step["type"] == "reconciled" and step["outcome"] == "requeue_after":
            obj = f"{kinds.get(str(step['id']), '')}/{step['request']}"
            key = (str(step["controller"]), obj)
            counts[key] = counts.get(key, 0) + 1
            found.append(Perturbation("advance", key[0], object=obj, number=counts[key]))
    return found
