"""The peer benchmark runs in one command: a small run of the kubeforge operator converges
with exactly the requests the job needs (what it measures is not asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT

BENCHMARK = ROOT / "benchmarks" / "operators.py"


def test_the_benchmark_converges_with_the_minimum_requests(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    run = subprocess.run(
        [
            sys.executable,
            str(BENCHMARK),
            "-n",
            "20",
            "--operators",
            "kubeforge",
            "--cases",
            "existing",
            "--settle",
            "0.5",
            "--timeout",
            "60",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert run.returncode == 0, run.stderr
    created, changed = json.loads(out.read_text())
    # Each Widget: its ConfigMap created and its status written once; no reads beyond the
    # cache's first list of each kind, no conflicts.
    assert created["requests"] == {
        "LIST configmaps 200": 1,
        "LIST widgets 200": 1,
        "POST configmaps 201": 20,
        "PUT widgets/status 200": 20,
    }
    # Every tenth Widget's size changed: its ConfigMap and its status written once more.
    assert changed["objects"] == 2
    assert changed["requests"] == {"PUT configmaps 200": 2, "PUT widgets/status 200": 2}
    assert "20 existing before start" in run.stdout
