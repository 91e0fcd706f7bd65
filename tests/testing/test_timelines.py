"""`--kubeforge-timeline`: a failing test that used the test cluster leaves its timeline
as one self-contained HTML file (where the option says, else next to the JUnit report), its
report names it, and a passing test leaves nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = """
from kubeforge.testing import TestEnv, eventually


async def test_deployment_breaks(testenv: TestEnv) -> None:
    labels = {"app": "web"}
    await testenv.client.create({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    })

    async def pod() -> bool:
        return bool(await testenv.client.list("v1/Pod"))

    await eventually(pod, timeout=20)
    assert False, "the test fails after its pod was made"


async def test_passes(testenv: TestEnv) -> None:
    pass
"""

INI = "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"


def embedded(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>', page)
    assert found is not None
    return json.loads(found.group(1))


def test_a_failing_test_leaves_its_timeline(pytester: pytest.Pytester, tmp_path: Path) -> None:
    (pytester.path / "pytest.ini").write_text(INI)
    pytester.makepyfile(test_broken=TESTS)
    out = tmp_path / "timelines"
    result = pytester.runpytest(f"--kubeforge-timeline={out}")
    result.assert_outcomes(passed=1, failed=1)
    [page] = list(out.iterdir())
    assert page.name == "test_broken.py-test_deployment_breaks.html"
    result.stdout.fnmatch_lines(["*kubeforge timeline*", f"file://{page}"])
    text = page.read_text()
    # Self-contained: nothing to fetch.
    assert "src=" not in text and "href=" not in text
    assert "class TimelineView" in text
    document = embedded(text)
    reconciles = [e for e in document["entries"] if e["type"] == "reconcile"]
    deployment = next(e for e in reconciles if e["controller"] == "deployment")
    assert deployment["manager"] == "kube-controller-manager"
    # Woken by the test's own create, which the API server answered.
    source = next(
        e for e in document["entries"] if e["seq"] == deployment["triggers"][0]["from"]["change"]
    )
    assert source["manager"] == "kubeforge-testenv"
    assert any(e["controller"] == "replicaset" for e in reconciles)


def test_the_timeline_goes_next_to_the_junit_report(pytester: pytest.Pytester) -> None:
    (pytester.path / "pytest.ini").write_text(INI)
    pytester.makepyfile(test_broken=TESTS)
    reports = pytester.path / "reports"
    result = pytester.runpytest("--kubeforge-timeline", f"--junitxml={reports / 'junit.xml'}")
    result.assert_outcomes(passed=1, failed=1)
    assert sorted(p.name for p in reports.iterdir()) == [
        "junit.xml",
        "test_broken.py-test_deployment_breaks.html",
    ]


def test_without_the_option_nothing_is_written(pytester: pytest.Pytester) -> None:
    (pytester.path / "pytest.ini").write_text(INI)
    pytester.makepyfile(test_broken=TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    assert "kubeforge timeline" not in result.stdout.str()
    assert not (pytester.path / "kubeforge-timelines").exists()
