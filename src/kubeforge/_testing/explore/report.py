"""How findings are shown: the perturbation, what each oracle found, the reconciles around
the perturbation (with their reads, writes and resourceVersions), and the command that
replays exactly that run; and the summary table at the end of an exploration."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeforge._testing.explore.oracles import Finding
from kubeforge._testing.explore.points import Perturbation

__all__ = ["Row", "format_findings", "format_steps", "replay_command", "summary_table"]

Step = Mapping[str, Any]

# Options of pytest that take their value as the next argument, kept in a replay command.
_VALUED = frozenset({"-o", "--override-ini", "-c", "--config-file", "-p", "--rootdir"})
_DROPPED_VALUED = frozenset(
    {"-k", "-m", "-n", "--numprocesses", "--maxprocesses", "--dist", "--maxfail"}
    | {"--kubeforge-explore-jobs", "--kubeforge-explore-budget", "--kubeforge-explore-actions"}
    | {"--kubeforge-perturb"}
)
_DROPPED = frozenset({"--kubeforge-explore", "-x", "--exitfirst", "--lf", "--ff"})


def replay_command(args: Sequence[str], nodeid: str, perturbation: str, cd: str | None) -> str:
    """The pytest command that runs `nodeid` under `perturbation` alone, with the options of
    the exploring run (`cd`: the directory to run it from, when not the current one)."""
    kept: list[str] = []
    keep_next = skip_next = False
    for arg in args:
        if keep_next or skip_next:
            if keep_next:
                kept.append(arg)
            keep_next = skip_next = False
            continue
        name = arg.partition("=")[0]
        if name in _DROPPED or name in _DROPPED_VALUED:
            skip_next = name in _DROPPED_VALUED and "=" not in arg
            continue
        if not arg.startswith("-"):
            continue  # a path of tests: the node id says which
        kept.append(arg)
        keep_next = arg in _VALUED
    command = shlex.join(["pytest", nodeid, *kept, f"--kubeforge-perturb={perturbation}"])
    return f"cd {shlex.quote(cd)} && {command}" if cd else command


def _trigger(trigger: Step) -> str:
    if trigger["cause"] != "event":
        return str(trigger["cause"])
    return f"{trigger['event']} {trigger['object']} v{trigger['version']}"


def _step_line(step: Step, names: Mapping[str, str]) -> str:
    kind = step["type"]
    when = f"{step['t']:8.3f}"
    # Reconciles run side by side: each read, write and end says whose it is.
    whose = names.get(str(step.get("id") or ""), "not in a reconcile")
    if kind == "reconcile":
        why = ", ".join(_trigger(t) for t in step["triggers"]) or "?"
        return f"{when} reconcile {step['controller']} {step['request']} ({why})"
    if kind == "reconciled":
        ended = step["outcome"]
        if step.get("error"):
            ended += f": {step['error']}"
        elif step.get("requeue_after"):
            ended += f" {step['requeue_after']:g}s"
        return f"{when}   {whose}: done, {ended}"
    if kind == "read":
        seen = ", ".join(f"{o['object']} v{o['version']} (rv {o['rv']})" for o in step["objects"])
        seen = seen or step.get("error") or "none"
        return f"{when}   {whose}: read {step['source']} {step['target']}: {seen}"
    if kind == "write":
        if step.get("error"):
            outcome = f"failed {step['code']}: {step['error']}"
        elif not step["rv"]:
            outcome = "gone"
        else:
            outcome = f"rv {step['rv']} (v{step['version']})"
        manager = f" as {step['field_manager']}" if step["field_manager"] else ""
        what = f"write {step['verb']} {step['object']}{manager}"
        return f"{when}   {whose}: {what}: {outcome}  [{step['point']}]"
    if kind == "delivered":
        queued = ", ".join(step["queued"]) or "nothing"
        return (
            f"{when} event {step['event']} {step['object']} v{step['version']} (rv {step['rv']}) "
            f"-> {step['controller']} queued {queued}"
        )
    return f"{when} ** {step.get('detail') or step.get('what')}"


def format_steps(steps: Sequence[Step], *, around: int = 12) -> list[str]:
    """The steps around the perturbation (its first note), reads and writes included."""
    shown = [s for s in steps if not (s["type"] == "delivered" and s.get("initial"))]
    at = next(
        (i for i, s in enumerate(shown) if s["type"] == "note" and s["what"] == "perturbation"),
        None,
    )
    if at is None:
        return []
    start = at
    reconciles = 0
    while start > 0 and reconciles < 2:
        start -= 1
        if shown[start]["type"] == "reconcile":
            reconciles += 1
    names = {
        str(s["id"]): f"{s['controller']} {s['request']}" for s in steps if s["type"] == "reconcile"
    }
    lines = [_step_line(s, names) for s in shown[start : at + around + 1]]
    if at + around + 1 < len(shown):
        lines.append("         ...")
    return lines


def format_findings(
    perturbation: str,
    findings: Sequence[Finding],
    run: Mapping[str, Any],
    replay: str,
    timeline: str | None = None,
) -> str:
    """A finding as the report shows it (`timeline`: where the run's timeline page is)."""
    lines = [f"{perturbation}"]
    try:
        lines.append(f"  {Perturbation.parse(perturbation).describe()}")
    except ValueError:
        pass
    for finding in findings:
        lines.append(f"  {finding.oracle}:")
        lines.extend(
            f"    {line}" for detail in finding.details for line in detail.splitlines()[-15:]
        )
    around = format_steps(run.get("steps") or [])
    if around:
        lines.append("  around it (seconds into the run):")
        lines.extend(f"    {line}" for line in around)
    if timeline:
        lines.append(f"  timeline: {timeline}")
    lines.append(f"  replay: {replay}")
    return "\n".join(lines)


@dataclass
class Row:
    """One test's line of the summary table."""

    test: str
    planned: int
    applied: int
    findings: int
    seconds: float
    note: str = ""


def summary_table(rows: Sequence[Row]) -> str:
    header = ("test", "runs", "perturbed", "findings", "seconds", "")
    table = [header] + [
        (r.test, str(r.planned), str(r.applied), str(r.findings), f"{r.seconds:.0f}", r.note)
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in table
    )
