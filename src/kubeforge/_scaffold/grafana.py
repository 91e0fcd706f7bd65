"""Grafana dashboards over the manager's metrics, as kubebuilder's grafana/v1-alpha plugin
scaffolds them (pkg/plugins/optional/grafana/v1alpha): `grafana/controller-runtime-metrics.json`
(reconciliations, work queues, API requests, leader election),
`grafana/controller-resources-metrics.json` (the manager's CPU and memory), and, from the
metrics a project lists in `grafana/custom-metrics/config.yaml`,
`grafana/custom-metrics/custom-metrics-dashboard.json`.

The dashboards are built here from a list of panels and their PromQL, over the names
`kubeforge.metrics` exports (controller-runtime's); each can be imported into Grafana as it is
(a `DS_PROMETHEUS` data source input and the `job`, `namespace` and `pod` variables of a
Prometheus that scrapes the manager through config/prometheus). Writing them again overwrites
the dashboards and keeps the config, as the plugin does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "CUSTOM_CONFIG",
    "CUSTOM_DASHBOARD",
    "PLUGIN",
    "CustomMetric",
    "CustomMetricsError",
    "Panel",
    "custom_metrics",
    "dashboard_files",
    "resources_dashboard",
    "runtime_dashboard",
]

# The plugin's key in the PROJECT file, as kubebuilder names it.
PLUGIN = "grafana.kubebuilder.io/v1-alpha"
RUNTIME_DASHBOARD = "grafana/controller-runtime-metrics.json"
RESOURCES_DASHBOARD = "grafana/controller-resources-metrics.json"
CUSTOM_CONFIG = "grafana/custom-metrics/config.yaml"
CUSTOM_DASHBOARD = "grafana/custom-metrics/custom-metrics-dashboard.json"

_SELECTOR = 'job="$job", namespace="$namespace"'
_POD_SELECTOR = 'job="$job", namespace="$namespace", pod=~"$pod"'
_TYPES = ("counter", "gauge", "histogram")

CUSTOM_CONFIG_TEXT = """\
# The project's own metrics (registered with `manager.metrics.registry`) that
# grafana/custom-metrics/custom-metrics-dashboard.json shows, one panel each. The dashboard is
# written again from this list when the Grafana plugin's files are scaffolded again.
#
# customMetrics:
#   - metric:  # the metric's name (required)
#     type:    # counter, gauge or histogram (required)
#     expr:    # the panel's PromQL (optional: a rate for a counter, the P90 of a histogram)
#     unit:    # Grafana's unit: s, bytes, percent, none, ... (optional: from the name)
#
# For example:
#
# customMetrics:
#   - metric: guestbook_visits_total
#     type: counter
#   - metric: guestbook_render_seconds
#     type: histogram
customMetrics: []
"""


@dataclass(frozen=True)
class Panel:
    """One graph: its title, unit (Grafana's) and PromQL queries with their legends."""

    title: str
    queries: Sequence[tuple[str, str]]
    unit: str = "none"
    description: str = ""


@dataclass(frozen=True)
class CustomMetric:
    """An entry of grafana/custom-metrics/config.yaml, with its defaults filled in."""

    metric: str
    type: str
    expr: str
    unit: str


class CustomMetricsError(ValueError):
    """grafana/custom-metrics/config.yaml cannot be read; the message says why."""


def _rate(metric: str, by: str) -> str:
    return f"sum(rate({metric}{{{_SELECTOR}}}[5m])) by ({by})"


def _quantiles(histogram: str, by: str) -> list[tuple[str, str]]:
    bucket = f"{histogram}_bucket{{{_SELECTOR}}}"
    return [
        (
            f"histogram_quantile({q}, sum(rate({bucket}[5m])) by ({by}, le))",
            f"P{round(q * 100)} {{{{{by}}}}}",
        )
        for q in (0.5, 0.9, 0.99)
    ]


RUNTIME_ROWS: tuple[tuple[str, tuple[Panel, ...]], ...] = (
    (
        "Reconciliation",
        (
            Panel(
                "Workers in use",
                [(f"controller_runtime_active_workers{{{_SELECTOR}}}", "{{controller}} {{pod}}")],
                description="Workers reconciling right now, of each controller.",
            ),
            Panel(
                "Maximum concurrent reconciles",
                [
                    (
                        f"controller_runtime_max_concurrent_reconciles{{{_SELECTOR}}}",
                        "{{controller}} {{pod}}",
                    )
                ],
            ),
            Panel(
                "Reconciliations per second, by result",
                [
                    (
                        _rate("controller_runtime_reconcile_total", "controller, result"),
                        "{{controller}} {{result}}",
                    )
                ],
                unit="ops",
            ),
            Panel(
                "Reconciliation errors per second",
                [
                    (
                        _rate("controller_runtime_reconcile_errors_total", "controller"),
                        "{{controller}}",
                    ),
                    (
                        _rate("controller_runtime_terminal_reconcile_errors_total", "controller"),
                        "terminal {{controller}}",
                    ),
                    (
                        _rate("controller_runtime_reconcile_panics_total", "controller"),
                        "panics {{controller}}",
                    ),
                ],
                unit="ops",
            ),
            Panel(
                "Reconcile time (P50, P90, P99)",
                _quantiles("controller_runtime_reconcile_time_seconds", "controller"),
                unit="s",
            ),
        ),
    ),
    (
        "Work queue",
        (
            Panel(
                "Depth",
                [(f"sum(workqueue_depth{{{_SELECTOR}}}) by (name)", "{{name}}")],
                description="Items waiting in each controller's queue.",
            ),
            Panel("Adds per second", [(_rate("workqueue_adds_total", "name"), "{{name}}")], "ops"),
            Panel(
                "Seconds in the queue before processing (P50, P90, P99)",
                _quantiles("workqueue_queue_duration_seconds", "name"),
                unit="s",
            ),
            Panel(
                "Seconds processing an item (P50, P90, P99)",
                _quantiles("workqueue_work_duration_seconds", "name"),
                unit="s",
            ),
            Panel(
                "Unfinished work",
                [
                    (f"workqueue_unfinished_work_seconds{{{_SELECTOR}}}", "unfinished {{name}}"),
                    (
                        f"workqueue_longest_running_processor_seconds{{{_SELECTOR}}}",
                        "longest {{name}}",
                    ),
                ],
                unit="s",
                description="Seconds of work in progress not yet done, and the longest "
                "running item's: a growing line is a stuck reconciler.",
            ),
            Panel(
                "Retries per second",
                [(_rate("workqueue_retries_total", "name"), "{{name}}")],
                "ops",
            ),
        ),
    ),
    (
        "API server requests",
        (
            Panel(
                "Requests per second, by code",
                [(_rate("rest_client_requests_total", "code, method"), "{{method}} {{code}}")],
                unit="reqps",
            ),
            Panel(
                "Request latency (P50, P90, P99)",
                _quantiles("rest_client_request_duration_seconds", "verb"),
                unit="s",
            ),
        ),
    ),
    (
        "Leader election",
        (
            Panel(
                "Leader",
                [(f"leader_election_master_status{{{_SELECTOR}}}", "{{name}} {{pod}}")],
                description="1 on the replica that leads, 0 on the others.",
            ),
        ),
    ),
)

RESOURCES_PANELS = (
    Panel(
        "CPU usage",
        [(f"rate(process_cpu_seconds_total{{{_POD_SELECTOR}}}[5m]) * 100", "{{pod}}")],
        unit="percent",
    ),
    Panel(
        "Memory usage",
        [(f"process_resident_memory_bytes{{{_POD_SELECTOR}}}", "{{pod}}")],
        unit="bytes",
    ),
    Panel("Open file descriptors", [(f"process_open_fds{{{_POD_SELECTOR}}}", "{{pod}}")]),
)


def _unit_for(name: str) -> str:
    name = name.lower()
    if "second" in name or "duration" in name:
        return "s"
    if "byte" in name:
        return "bytes"
    if "ratio" in name:
        return "percent"
    return "none"


def _default_expr(metric: str, kind: str) -> str:
    if kind == "counter":
        return _rate(metric, "instance, pod")
    if kind == "histogram":
        bucket = f"{metric}_bucket{{{_SELECTOR}}}"
        return f"histogram_quantile(0.90, sum(rate({bucket}[5m])) by (instance, le))"
    return f"{metric}{{{_SELECTOR}}}"


def custom_metrics(text: str) -> list[CustomMetric]:
    """The entries of grafana/custom-metrics/config.yaml: those without a metric name and a
    known type (or an expression) are left out, as the plugin leaves them out."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise CustomMetricsError(f"{CUSTOM_CONFIG}: not YAML: {exc}") from None
    items = data.get("customMetrics") if isinstance(data, dict) else None
    if items is None:
        return []
    if not isinstance(items, list):
        raise CustomMetricsError(f"{CUSTOM_CONFIG}: customMetrics must be a list")
    found = []
    for item in items:
        if not isinstance(item, dict):
            raise CustomMetricsError(f"{CUSTOM_CONFIG}: each entry of customMetrics is a mapping")
        metric = str(item.get("metric") or "")
        kind = str(item.get("type") or "").lower()
        expr = str(item.get("expr") or "")
        if not expr and not (metric and kind in _TYPES):
            continue
        found.append(
            CustomMetric(
                metric=metric,
                type=kind,
                expr=expr or _default_expr(metric, kind),
                unit=str(item.get("unit") or _unit_for(metric)),
            )
        )
    return found


def _variables(pods: bool) -> list[dict[str, Any]]:
    def query(name: str, definition: str, **extra: Any) -> dict[str, Any]:
        return {
            "datasource": "${DS_PROMETHEUS}",
            "definition": definition,
            "hide": 0,
            "includeAll": False,
            "multi": False,
            "name": name,
            "options": [],
            "query": {"query": definition, "refId": "StandardVariableQuery"},
            "refresh": 2,
            "sort": 1,
            "type": "query",
            **extra,
        }

    variables = [
        query("namespace", "label_values(controller_runtime_reconcile_total, namespace)"),
        query(
            "job",
            'label_values(controller_runtime_reconcile_total{namespace="$namespace"}, job)',
        ),
    ]
    if pods:
        variables.append(
            query(
                "pod",
                'label_values(controller_runtime_reconcile_total{namespace="$namespace", '
                'job="$job"}, pod)',
                includeAll=True,
                multi=True,
            )
        )
    return variables


def _graph(panel: Panel, ident: int, x: int, y: int) -> dict[str, Any]:
    return {
        "datasource": "${DS_PROMETHEUS}",
        "description": panel.description,
        "fieldConfig": {
            "defaults": {
                "custom": {"drawStyle": "line", "fillOpacity": 10, "showPoints": "never"},
                "unit": panel.unit,
            },
            "overrides": [],
        },
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "id": ident,
        "options": {
            "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        "targets": [
            {
                "datasource": "${DS_PROMETHEUS}",
                "expr": expr,
                "legendFormat": legend,
                "refId": chr(ord("A") + index),
            }
            for index, (expr, legend) in enumerate(panel.queries)
        ],
        "title": panel.title,
        "type": "timeseries",
    }


def _dashboard(
    title: str, uid: str, rows: Sequence[tuple[str, Sequence[Panel]]], *, pods: bool
) -> dict[str, Any]:
    panels: list[dict[str, Any]] = []
    y = 0
    ident = 1
    for row_title, row in rows:
        if row_title:
            panels.append(
                {
                    "collapsed": False,
                    "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
                    "id": ident,
                    "panels": [],
                    "title": row_title,
                    "type": "row",
                }
            )
            ident += 1
            y += 1
        for index, panel in enumerate(row):
            panels.append(_graph(panel, ident, 12 * (index % 2), y + 8 * (index // 2)))
            ident += 1
        y += 8 * ((len(row) + 1) // 2)
    return {
        "__inputs": [
            {
                "name": "DS_PROMETHEUS",
                "label": "Prometheus",
                "description": "",
                "type": "datasource",
                "pluginId": "prometheus",
                "pluginName": "Prometheus",
            }
        ],
        "__requires": [
            {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"}
        ],
        "annotations": {"list": []},
        "editable": True,
        "graphTooltip": 1,
        "links": [],
        "panels": panels,
        "refresh": "30s",
        "schemaVersion": 39,
        "tags": ["kubeforge", "controller-runtime"],
        "templating": {"list": _variables(pods)},
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "timezone": "",
        "title": title,
        "uid": uid,
        "version": 1,
    }


def runtime_dashboard() -> dict[str, Any]:
    """Reconciliations, work queues, API requests and leader election of the managers."""
    return _dashboard(
        "Controller-Runtime-Metrics", "kubeforge-controller-runtime", RUNTIME_ROWS, pods=False
    )


def resources_dashboard() -> dict[str, Any]:
    """CPU, memory and open files of each manager pod."""
    return _dashboard(
        "Controller-Resources-Metrics",
        "kubeforge-controller-resources",
        [("", RESOURCES_PANELS)],
        pods=True,
    )


def custom_dashboard(items: Sequence[CustomMetric]) -> dict[str, Any]:
    """A panel for each of the project's own metrics."""
    panels = [
        Panel(f"{item.metric or item.expr} ({item.type or 'expr'})", [(item.expr, "")], item.unit)
        for item in items
    ]
    return _dashboard("Custom-Metrics", "kubeforge-custom-metrics", [("", panels)], pods=False)


def _json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2) + "\n"


def dashboard_files(config_text: str | None) -> Iterator[tuple[str, str]]:
    """(path, content) of the plugin's files for a project whose custom-metrics config reads
    `config_text` (None: it has none yet, and the commented one is written)."""
    yield RUNTIME_DASHBOARD, _json(runtime_dashboard())
    yield RESOURCES_DASHBOARD, _json(resources_dashboard())
    if config_text is None:
        yield CUSTOM_CONFIG, CUSTOM_CONFIG_TEXT
        return
    items = custom_metrics(config_text)
    if items:
        yield CUSTOM_DASHBOARD, _json(custom_dashboard(items))
