"""`pytest --kubeforge-explore`: each test that runs the project's controllers (it uses the
`manager` fixture) is explored instead of run once; other tests run as usual.

Exploring a test: two reference runs (the noise between their end states is left out of
every comparison), a plan from the first (plan.py), one run per perturbation of the plan
(up to the budget), all on the worker processes (pool.py), each judged by the oracles
(oracles.py). The test fails when anything was found, with every finding and its replay
command; a summary table closes the run. `--kubeforge-perturb=SPEC` replays one
perturbation (the plan is just it).

Inside a worker, `worker_loop` runs the tests it is asked for, one run at a time, with the
harness (harness.py) in the test's stash for the plugin's fixtures to use.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _pytest.runner import runtestprotocol

from kubeforge._testing.explore.harness import Run, Setup
from kubeforge._testing.explore.keys import EXPLORE_RUN
from kubeforge._testing.explore.oracles import Finding, References, judge, judge_reference
from kubeforge._testing.explore.plan import make_plan
from kubeforge._testing.explore.points import ACTIONS, Perturbation
from kubeforge._testing.explore.pool import Job, Pool
from kubeforge._testing.explore.report import Row, format_findings, replay_command, summary_table
from kubeforge._testing.timelines import timeline_dir, write_timeline

__all__ = ["MARKER", "Exploration", "Explored", "explorable", "skipped_actions", "worker_loop"]

DEFAULT_ACTIONS = ("crash", "error", "stale", "coalesce", "delete", "revert", "advance")


MARKER = "kubeforge_explore"


def explorable(item: pytest.Item) -> bool:
    """Whether exploring `item` makes sense: it runs the project's controllers, and its
    `kubeforge_explore` marker (if any) does not say False."""
    marker = item.get_closest_marker(MARKER)
    if marker is not None and marker.args and marker.args[0] is False:
        return False
    return "manager" in getattr(item, "fixturenames", ())


def skipped_actions(item: pytest.Item) -> tuple[str, ...]:
    """The perturbations a test's `kubeforge_explore(skip=[...])` marker leaves out."""
    marker = item.get_closest_marker(MARKER)
    return tuple(marker.kwargs.get("skip") or ()) if marker is not None else ()


@dataclass
class Explored:
    """How exploring one test went: whether it passed, and the report's text."""

    passed: bool
    text: str
    row: Row


class Exploration:
    """The exploring side of `pytest --kubeforge-explore` (the main process)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        jobs = config.getoption("kubeforge_explore_jobs")
        self.jobs = int(jobs) if jobs else max(1, min(os.cpu_count() or 1, 4))
        self.budget = int(config.getoption("kubeforge_explore_budget"))
        chosen = config.getoption("kubeforge_explore_actions")
        self.actions = tuple(a.strip() for a in chosen.split(",")) if chosen else DEFAULT_ACTIONS
        unknown = [a for a in self.actions if a not in ACTIONS]
        if unknown:
            raise pytest.UsageError(f"--kubeforge-explore-actions: unknown {', '.join(unknown)}")
        spec = config.getoption("kubeforge_perturb")
        try:
            self.replay = Perturbation.parse(spec) if spec else None
        except ValueError as exc:
            raise pytest.UsageError(f"--kubeforge-perturb: {exc}") from None
        params = config.invocation_params
        self.args = list(params.args)
        self.cwd = Path(params.dir)
        root = Path(str(config.rootpath))
        self.cd = None if root == self.cwd else os.path.relpath(root, self.cwd)
        self.pool = Pool(self.args, self.cwd, self.jobs)
        self.rows: list[Row] = []

    def start(self) -> None:
        """Start the workers, once the run is known to explore something."""
        self.pool.start()

    def close(self) -> None:
        self.pool.close()

    def explore(self, item: pytest.Item) -> Explored:
        started = time.monotonic()
        nodeid = item.nodeid
        first, second = self.pool.run([Job(nodeid, None), Job(nodeid, None)])
        for reference in (first, second):
            problem = _unusable(reference)
            if problem:
                row = Row(nodeid, 2, 0, 0, time.monotonic() - started, "reference failed")
                self.rows.append(row)
                return Explored(False, problem, row)
        references = References.of(first, second)
        findings: list[tuple[str, list[Finding], dict[str, Any]]] = []
        found = judge_reference(references)
        if found:
            findings.append(("(none)", found, dict(first)))
        skipped = skipped_actions(item)
        actions = tuple(a for a in self.actions if a not in skipped)
        if not first.get("virtual_time"):
            actions = tuple(a for a in actions if a != "advance")  # moves virtual time only
        primaries = first.get("primaries") or []
        plan = (
            [self.replay] if self.replay else make_plan(first["steps"], primaries, actions=actions)
        )
        plan = plan[: self.budget]
        results = self.pool.run([Job(nodeid, str(p)) for p in plan])
        applied = unjudged = 0
        for perturbation, result in zip(plan, results, strict=True):
            if result.get("harness_error"):
                unjudged += 1
                continue
            if result.get("applied"):
                applied += 1
            found = judge(result, references)
            if found:
                findings.append((str(perturbation), found, result))
        seconds = time.monotonic() - started
        note = f"{unjudged} not judged" if unjudged else ""
        row = Row(nodeid, len(plan) + 2, applied, len(findings), seconds, note)
        self.rows.append(row)
        if self.replay is not None and not applied and not unjudged:
            row.note = "the perturbation's place was not reached"
        text = self._text(nodeid, findings, plan, applied, results)
        return Explored(not findings, text, row)

    def _text(
        self,
        nodeid: str,
        findings: list[tuple[str, list[Finding], dict[str, Any]]],
        plan: list[Perturbation],
        applied: int,
        results: list[dict[str, Any]],
    ) -> str:
        parts = [
            f"explored {nodeid}: {len(plan)} perturbations planned, {applied} applied, "
            f"{len(findings)} with findings"
        ]
        for perturbation, found, run in findings:
            page = self._timeline_page(nodeid, perturbation, run)
            if perturbation == "(none)":
                parts.append(
                    "without any perturbation:\n"
                    + "\n".join(f"  {f.oracle}:\n    " + "\n    ".join(f.details) for f in found)
                    + (f"\n  timeline: {page}" if page else "")
                )
                continue
            replay = replay_command(self.args, nodeid, perturbation, self.cd)
            parts.append(format_findings(perturbation, found, run, replay, page))
        errors = [r for r in results if r.get("harness_error")]
        for result in errors[:3]:
            parts.append(
                f"not judged: {result.get('perturbation')}:\n{result['harness_error'][-2000:]}"
            )
        return "\n\n".join(parts)

    def _timeline_page(self, nodeid: str, perturbation: str, run: dict[str, Any]) -> str | None:
        """Write the run's timeline as a page (where --kubeforge-timeline says, else with
        the runs' records); its file URL."""
        document = run.get("timeline")
        if not document:
            return None
        directory = timeline_dir(self.config) or self.pool.logs / "timelines"
        title = f"{nodeid} under {perturbation}"
        about = "exploration: the run of a finding"
        path = write_timeline(self.config, directory, title, document, title, about)
        return f"file://{path.resolve()}" if path is not None else None

    def summary(self) -> str:
        table = summary_table(self.rows)
        return f"{table}\nthe runs' records and the workers' logs: {self.pool.logs}"


def _unusable(reference: dict[str, Any]) -> str | None:
    """Why a reference run cannot serve, if it cannot."""
    if reference.get("harness_error"):
        return f"the reference run could not be judged:\n{reference['harness_error']}"
    if reference.get("outcome") != "passed":
        return (
            "the test does not pass without perturbations, so it cannot be explored:\n"
            f"{reference.get('failure') or reference.get('outcome')}"
        )
    if "end" not in reference:
        return "the reference run kept no end state (did the test use the testenv fixture?)"
    return None


# the worker side ----------------------------------------------------------------------------


def worker_loop(session: pytest.Session, pipes: str, load_setup: Callable[[], Setup]) -> None:
    """Run the tests asked for on the first pipe, one run at a time, answering on the
    second (pool.py)."""
    items = {item.nodeid: item for item in session.items}
    # What every run needs, loaded before the first request rather than in it.
    import kubeforge._cluster.devcluster
    import kubeforge._testing.env  # noqa: F401

    asks_fd, _, answers_fd = pipes.partition(",")
    with (
        os.fdopen(int(asks_fd), "r", encoding="utf-8") as asks,
        os.fdopen(int(answers_fd), "w", encoding="utf-8") as answers,
    ):
        for line in asks:
            request = json.loads(line)
            item = items.get(request["nodeid"])
            if item is None:
                result: dict[str, Any] = {
                    "perturbation": request["perturbation"],
                    "harness_error": f"no test {request['nodeid']} was collected",
                }
            else:
                result = _run_once(item, request["perturbation"], load_setup)
            Path(request["out"]).write_text(json.dumps(result), encoding="utf-8")
            answers.write(json.dumps({"out": request["out"]}) + "\n")
            answers.flush()


def _run_once(
    item: pytest.Item, spec: str | None, load_setup: Callable[[], Setup]
) -> dict[str, Any]:
    perturbation = Perturbation.parse(spec) if spec else None
    run = Run(perturbation, load_setup)
    item.stash[EXPLORE_RUN] = run
    try:
        reports = runtestprotocol(item, log=False, nextitem=None)
    finally:
        del item.stash[EXPLORE_RUN]
        run.end()
    failed = [r for r in reports if r.failed]
    result = run.result
    result["outcome"] = "failed" if failed else "passed"
    if any(r.skipped for r in reports) and not failed:
        result["outcome"] = "skipped"
    if failed:
        result["failure"] = _failure("\n".join(r.longreprtext for r in failed))
    return result


def _failure(text: str) -> str:
    """What a failed test reported, shortened to its error lines (`E ...`) and where it
    failed, or its last lines."""
    lines = text.splitlines()
    errors = [line for line in lines if line.startswith("E ")]
    if not errors:
        return "\n".join(lines[-15:])
    located = [line for line in lines if re.match(r"^\S+:\d+: \w", line)]
    return "\n".join(errors[:12] + located[-1:])
