"""The benchmark scripts run as `python benchmarks/<name>.py`, which puts benchmarks/ first on
sys.path: a script named like a standard library module would be imported in its place by
every other script (and by the standard library itself). `make bench` runs every one."""

from __future__ import annotations

import re
import sys

from tests.support import ROOT

BENCHMARKS = ROOT / "benchmarks"


def test_no_benchmark_script_shadows_a_standard_library_module() -> None:
    scripts = {path.stem for path in BENCHMARKS.glob("*.py")}
    assert scripts  # the directory is where this test expects it
    assert sorted(scripts & sys.stdlib_module_names) == []


def test_make_bench_runs_every_benchmark_script() -> None:
    makefile = (ROOT / "Makefile").read_text()
    target = re.search(r"^bench:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert target is not None
    run = set(re.findall(r"benchmarks/(\w+)\.py", target.group(1)))
    assert run == {path.stem for path in BENCHMARKS.glob("*.py")}
