"""The Grafana plugin (`kubeforge init --plugins grafana`): the dashboards it writes query only
metrics a running manager really exposes. A manager reconciles, holds its leader lease and
counts a project's own metrics; every metric named by a dashboard's PromQL (and by its
variables) is among the samples its /metrics serves."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.parser import text_string_to_metric_families

from kubeforge import Client
from kubeforge._cli.files import Files
from kubeforge._cli.plugins import write_grafana
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result
from kubeforge._scaffold import grafana
from kubeforge.client import load_kubeconfig
from kubeforge.testing import eventually
from tests.cli.test_cli_scaffold import cli
from tests.runtime.test_manager import CM, cm, fetch

# PromQL words that are not metric names: aggregation modifiers, set operators, offsets.
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
     "unless", "offset"}
)  # fmt: skip


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: its identifiers, less functions (a name
    before `(`), keywords, label matchers (`{...}`), grouping labels (`by (...)`), ranges
    (`[5m]`) and numbers."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word = match.group()
        follows = text[match.end() :].lstrip()[:1]
        if follows == "(" or word in _KEYWORDS:
            continue
        names.add(word)
    return names


def test_metric_names_come_out_of_promql() -> None:
    expr = (
        'histogram_quantile(0.9, sum(rate(workqueue_work_duration_seconds_bucket{job="$job", '
        'name=~"a|b"}[5m])) by (name, le)) / on (pod) group_left up * 100'
    )
    assert metric_names(expr) == {"workqueue_work_duration_seconds_bucket", "up"}


def queries(dashboard: dict[str, Any]) -> list[str]:
    """The PromQL of every panel, and the series each template variable lists labels of."""
    found = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        selector = re.fullmatch(r"label_values\((.*), \w+\)", variable["definition"])
        assert selector, variable["definition"]
        found.append(selector.group(1))
    return found


class Launcher(Reconciler):
    """Counts each ConfigMap in the project's own metrics, as a project's controller would."""

    def __init__(self, launched: Counter, seconds: Histogram, fleet: Gauge) -> None:
        self.launched, self.seconds, self.fleet = launched, seconds, fleet
        self.names: list[str] = []

    async def reconcile(self, request: Request) -> Result:
        self.launched.inc()
        self.seconds.observe(0.2)
        self.fleet.set(len(self.names))
        self.names.append(request.name)
        return Result()


CUSTOM = """\
customMetrics:
  - metric: fleet_frigates_launched_total
    type: counter
  - metric: fleet_launch_seconds
    type: histogram
  - metric: fleet_size
    type: gauge
  - metric: ignored_without_a_type
"""


@pytest.fixture
def dashboards(tmp_path: Path) -> dict[str, dict[str, Any]]:
    root = tmp_path / "fleet"
    root.mkdir()
    done = cli("init", "--domain", "example.com", "--plugins", "grafana", cwd=root)
    assert done.returncode == 0, done.stderr
    project = yaml.safe_load((root / "PROJECT").read_text())
    assert project["plugins"] == {grafana.PLUGIN: {}}
    config = root / grafana.CUSTOM_CONFIG
    assert grafana.custom_metrics(config.read_text()) == []
    assert not (root / grafana.CUSTOM_DASHBOARD).exists()
    # The project lists its metrics; the plugin's files written again add their dashboard and
    # keep the config.
    config.write_text(CUSTOM)
    write_grafana(root, Files(root, quiet=True))
    assert config.read_text() == CUSTOM
    paths = (grafana.RUNTIME_DASHBOARD, grafana.RESOURCES_DASHBOARD, grafana.CUSTOM_DASHBOARD)
    return {path: json.loads((root / path).read_text()) for path in paths}


async def test_every_dashboard_query_names_a_metric_the_manager_exposes(
    dashboards: dict[str, dict[str, Any]], kubeconfig: Path, api: Client
) -> None:
    custom = dashboards[grafana.CUSTOM_DASHBOARD]
    assert [p["title"] for p in custom["panels"]] == [
        "fleet_frigates_launched_total (counter)",
        "fleet_launch_seconds (histogram)",
        "fleet_size (gauge)",
    ]
    assert [p["fieldConfig"]["defaults"]["unit"] for p in custom["panels"]] == ["none", "s", "none"]

    manager = Manager(
        load_kubeconfig(kubeconfig),
        metrics_bind_address="127.0.0.1:0",
        leader_election=True,
        leader_election_id="fleet-leader-election",
        leader_election_namespace="default",
    )
    registry = manager.metrics.registry
    launcher = Launcher(
        Counter("fleet_frigates_launched", "Frigates launched.", registry=registry),
        Histogram("fleet_launch_seconds", "Seconds a launch takes.", registry=registry),
        Gauge("fleet_size", "Frigates in the fleet.", registry=registry),
    )
    manager.controller().for_(CM).complete(launcher)
    task = asyncio.create_task(manager.start())
    try:
        await api.create(cm("frigate"), namespace="default")

        async def reconciled() -> bool:
            return "frigate" in launcher.names and manager.leading

        await eventually(reconciled, timeout=30)
        status, text = await fetch(manager.bound["metrics"], "/metrics")
    finally:
        manager.stop()
        await task
    assert status == 200
    exposed = {s.name for f in text_string_to_metric_families(text) for s in f.samples}

    for path, dashboard in dashboards.items():
        expressions = queries(dashboard)
        assert expressions, path
        for expr in expressions:
            names = metric_names(expr)
            assert names, (path, expr)
            assert names <= exposed, (path, expr, names - exposed)
