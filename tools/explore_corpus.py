"""Explore every operator of the exploration corpus, the buggy and the correct twin, and say
whether each came out as it should: every buggy twin flagged, every correct twin clean.

    .venv/bin/python tools/explore_corpus.py [CASE ...] [--jobs 2]

The corpus is tests/testing/explore/corpus (its pytest.ini says how a case is run). Each
exploration runs `pytest <case>/scenario.py --kubeforge-explore` with the twin's setup;
a table gives, per case and twin, the verdict, the perturbations with findings and the
seconds it took. The exit status is 1 when a twin came out wrong.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "testing" / "explore" / "corpus"
PYTEST = ROOT / ".venv" / "bin" / "pytest"
_FINDING = re.compile(r"^((?:crash|error|stale|coalesce|delete|revert|advance)@\S+)$", re.M)


def cases() -> list[str]:
    """Every case of the corpus: a directory with a scenario and two twins."""
    return sorted(
        path.name
        for path in CORPUS.iterdir()
        if (path / "scenario.py").is_file() and (path / "buggy.py").is_file()
    )


def explore(case: str, twin: str, jobs: int, extra: list[str]) -> tuple[bool, list[str], float]:
    """Explore one twin: (whether anything was found, the findings, seconds)."""
    started = time.monotonic()
    done = subprocess.run(
        [
            str(PYTEST),
            f"{case}/scenario.py",
            "-o",
            f"kubeforge_setup={case}.{twin}:setup",
            "--kubeforge-explore",
            f"--kubeforge-explore-jobs={jobs}",
            *extra,
        ],
        cwd=CORPUS,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.monotonic() - started
    if done.returncode not in (0, 1):
        sys.stdout.write(done.stdout + done.stderr)
        raise SystemExit(f"{case} {twin}: pytest exited {done.returncode}")
    findings = list(dict.fromkeys(_FINDING.findall(done.stdout)))
    if "without any perturbation" in done.stdout:
        findings.insert(0, "(without perturbation)")
    return done.returncode == 1, findings, took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="cases to explore (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once in an exploration")
    options, extra = parser.parse_known_args(argv)
    chosen = options.cases or cases()
    wrong = []
    print(f"{'case':26} {'twin':8} {'verdict':8} {'seconds':>7}  findings")
    for case in chosen:
        for twin in ("buggy", "correct"):
            flagged, findings, took = explore(case, twin, options.jobs, extra)
            verdict = "flagged" if flagged else "clean"
            if flagged != (twin == "buggy"):
                wrong.append(f"{case} {twin}")
                verdict += "!"
            shown = ", ".join(findings[:4]) + (" ..." if len(findings) > 4 else "")
            print(f"{case:26} {twin:8} {verdict:8} {took:7.0f}  {shown}", flush=True)
    if wrong:
        print(f"came out wrong: {', '.join(wrong)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
