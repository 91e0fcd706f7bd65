"""The exploration against its corpus (tests/testing/explore/corpus): operators with a
seeded bug beside a correct twin, each with an ordinary happy-path scenario that passes on
both. A buggy twin must come out flagged, with a finding that replays; a correct twin
clean. The suite explores a representative few with the perturbations that matter for them
(each takes seconds); `make explore` (tools/explore_corpus.py) explores every case with
every perturbation."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubeforge._api.crd import crd_for
from tests.support import ROOT, load_tool

corpus = load_tool("explore_corpus")
CORPUS = ROOT / "tests" / "testing" / "explore" / "corpus"

# A case, the perturbations explored in the suite, and one the buggy twin is found with.
SUBSET = [
    ("crash_generate_name", "crash", "crash@widget:create:ConfigMap/w-*#1"),
    ("stale_list", "stale", "stale@widget:ConfigMap/w-*#1"),
]
# One worker: the suite's own workers keep the machine's cores busy.
JOBS = 1


def test_every_case_has_both_twins_and_a_scenario() -> None:
    cases = corpus.cases()
    assert len(cases) >= 7
    for case in cases:
        for part in ("buggy.py", "correct.py", "scenario.py", "__init__.py"):
            assert (CORPUS / case / part).is_file(), f"{case}/{part}"


def test_the_corpus_crds_are_those_of_its_kinds() -> None:
    sys.path.insert(0, str(CORPUS))
    try:
        from kinds import Record, Widget  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(CORPUS))
    for cls, name in ((Widget, "widgets"), (Record, "records")):
        written = yaml.safe_load((CORPUS / "crds" / f"{name}.yaml").read_text())
        assert written == crd_for([cls]), f"crds/{name}.yaml is out of date"


@pytest.mark.parametrize(("case", "actions", "finding"), SUBSET)
def test_a_buggy_twin_is_flagged(case: str, actions: str, finding: str) -> None:
    flagged, findings, _ = corpus.explore(
        case, "buggy", JOBS, [f"--kubeforge-explore-actions={actions}"]
    )
    assert flagged and finding in findings, findings


@pytest.mark.parametrize(("case", "actions", "finding"), SUBSET)
def test_a_correct_twin_is_clean(case: str, actions: str, finding: str) -> None:
    flagged, findings, _ = corpus.explore(
        case, "correct", JOBS, [f"--kubeforge-explore-actions={actions}"]
    )
    assert not flagged, findings


def test_a_finding_replays_with_its_command() -> None:
    pytest_ = str(ROOT / ".venv" / "bin" / "pytest")
    explored = subprocess.run(
        [
            pytest_,
            "spec_revert/scenario.py",
            "-o",
            "kubeforge_setup=spec_revert.buggy:setup",
            "--kubeforge-explore",
            "--kubeforge-explore-actions=revert",
            f"--kubeforge-explore-jobs={JOBS}",
        ],
        cwd=CORPUS,
        capture_output=True,
        text=True,
        check=False,
    )
    assert explored.returncode == 1, explored.stdout
    assert "leaked:  ConfigMap/<ns>/w-b" in explored.stdout
    (replay,) = set(re.findall(r"^  replay: (.*)$", explored.stdout, re.M))
    # The finding links to its run's timeline: a page of the reconciles of every incarnation
    # of the manager, the perturbed one's included.
    (page,) = set(re.findall(r"^  timeline: file://(.*)$", explored.stdout, re.M))
    text = Path(page).read_text()
    assert "class TimelineView" in text
    assert '"controller":"widget"' in text and '"manager":"manager #1"' in text
    command = shlex.split(replay)
    assert command == [
        "pytest",
        "spec_revert/scenario.py::test_a_widget_gets_the_child_of_its_mode",
        "-o",
        "kubeforge_setup=spec_revert.buggy:setup",
        "--kubeforge-perturb=revert@Widget/w",
    ]
    again = subprocess.run(
        [pytest_, *command[1:], f"--kubeforge-explore-jobs={JOBS}"],
        cwd=CORPUS,
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 1, again.stdout
    assert re.search(r"^revert@Widget/w$", again.stdout, re.M), again.stdout
    assert "leaked:  ConfigMap/<ns>/w-b" in again.stdout
