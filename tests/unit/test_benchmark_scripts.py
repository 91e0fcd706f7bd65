"""The benchmark scripts run as `python benchmarks/<name>.py`, which puts benchmarks/ first on
sys.path: a script named like a standard library module would be imported in its place by
every other script (and by the standard library itself)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_no_benchmark_script_shadows_a_standard_library_module() -> None:
    scripts = {path.stem for path in BENCHMARKS.glob("*.py")}
    assert scripts  # the directory is where this test expects it
    assert sorted(scripts & sys.stdlib_module_names) == []
