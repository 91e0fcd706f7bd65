"""Metrics: controller-runtime's names, types, labels and buckets, rendered like the Go client."""

from __future__ import annotations

import re

import pytest
from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from kubeforge._runtime.metrics import (
    CONTENT_TYPE,
    Metrics,
    QueueMetricsAdapter,
    format_float,
)
from kubeforge._runtime.workqueue import QueueMetrics

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

# Family name -> TYPE, as controller-runtime exposes them.
EXPECTED_TYPES = {
    "controller_runtime_reconcile_total": "counter",
    "controller_runtime_reconcile_errors_total": "counter",
    "controller_runtime_terminal_reconcile_errors_total": "counter",
    "controller_runtime_reconcile_panics_total": "counter",
    "controller_runtime_reconcile_time_seconds": "histogram",
    "controller_runtime_reconcile_timeouts_total": "counter",
    "controller_runtime_max_concurrent_reconciles": "gauge",
    "controller_runtime_active_workers": "gauge",
    "workqueue_depth": "gauge",
    "workqueue_adds_total": "counter",
    "workqueue_queue_duration_seconds": "histogram",
    "workqueue_work_duration_seconds": "histogram",
    "workqueue_unfinished_work_seconds": "gauge",
    "workqueue_longest_running_processor_seconds": "gauge",
    "workqueue_retries_total": "counter",
    "rest_client_requests_total": "counter",
    "rest_client_request_duration_seconds": "histogram",
    "rest_client_request_retries_total": "counter",
    "leader_election_master_status": "gauge",
    "leader_election_slowpath_total": "counter",
    "kubeforge_informer_watch_restarts_total": "counter",
    "kubeforge_cache_objects": "gauge",
}

# Label names of each family's samples (histogram buckets add `le`).
EXPECTED_LABELS = {
    "controller_runtime_reconcile_total": {"controller", "result"},
    "controller_runtime_reconcile_errors_total": {"controller"},
    "controller_runtime_terminal_reconcile_errors_total": {"controller"},
    "controller_runtime_reconcile_panics_total": {"controller"},
    "controller_runtime_reconcile_time_seconds_count": {"controller"},
    "controller_runtime_reconcile_timeouts_total": {"controller"},
    "controller_runtime_max_concurrent_reconciles": {"controller"},
    "controller_runtime_active_workers": {"controller"},
    "workqueue_depth": {"name", "controller", "priority"},
    "workqueue_adds_total": {"name", "controller"},
    "workqueue_queue_duration_seconds_count": {"name", "controller"},
    "workqueue_work_duration_seconds_count": {"name", "controller"},
    "workqueue_unfinished_work_seconds": {"name", "controller"},
    "workqueue_longest_running_processor_seconds": {"name", "controller"},
    "workqueue_retries_total": {"name", "controller"},
    "rest_client_requests_total": {"code", "method", "host"},
    "rest_client_request_duration_seconds_count": {"verb", "host"},
    "rest_client_request_retries_total": {"code", "verb", "host"},
    "leader_election_master_status": {"name"},
    "leader_election_slowpath_total": {"name"},
    "kubeforge_informer_watch_restarts_total": {"resource"},
    "kubeforge_cache_objects": {"resource"},
}

# controller-runtime pkg/internal/controller/metrics/metrics.go, as written there.
UPSTREAM_RECONCILE_BUCKETS = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
    40, 50, 60,
]  # fmt: skip

# What the Go client writes for ExponentialBuckets(10e-9, 10, 12).
UPSTREAM_QUEUE_LE = [
    "1e-08", "1e-07", "1e-06", "9.999999999999999e-06", "9.999999999999999e-05", "0.001",
    "0.01", "0.1", "1", "10", "100", "1000", "+Inf",
]  # fmt: skip


def render(metrics: Metrics) -> str:
    body, content_type = metrics.render()
    assert content_type == CONTENT_TYPE
    return body.decode()


def samples(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(text: str, sample: str, /, **labels: str) -> float | None:
    return samples(text).get((sample, frozenset(labels.items())))


def le_values(text: str, bucket_name: str) -> list[str]:
    return re.findall(rf'^{bucket_name}\{{[^}}]*le="([^"]+)"\}}', text, re.MULTILINE)


def populated() -> Metrics:
    """A Metrics with one child in every family."""
    m = Metrics()
    m.init_controller("widgets", 4)
    m.controller("widgets").reconciled("success", 0.3)
    queue = m.queue_metrics("widgets")
    queue.add(0)
    queue.depth(0, 1)
    queue.depth(0, -1)
    queue.get(0, 0.01)
    queue.done(0.2)
    queue.retry()
    m.observe_request("GET", "10.0.0.1:6443", 200, 0.05)
    m.observe_retry("GET", "10.0.0.1:6443", 503)
    m.set_leader("widgets-lock", True)
    m.leader_slowpath("widgets-lock")
    m.informer_watch_restarts_total.labels("apps/v1/deployments").inc()
    m.cache_objects.labels("apps/v1/deployments").set(7)
    return m


@pytest.mark.parametrize(("family", "kind"), sorted(EXPECTED_TYPES.items()))
def test_every_family_has_its_type_line(family: str, kind: str) -> None:
    text = render(Metrics())
    assert f"# TYPE {family} {kind}\n" in text
    assert f"# HELP {family} " in text


def test_every_family_carries_upstream_label_names() -> None:
    found: dict[str, set[str]] = {}
    for name, labels in samples(render(populated())):
        if name in EXPECTED_LABELS:
            found.setdefault(name, set()).update(k for k, _ in labels)
    assert found == EXPECTED_LABELS


def test_rendered_output_is_valid_and_has_no_created_series() -> None:
    text = render(populated())
    families = {f.name for f in text_string_to_metric_families(text)}
    assert "workqueue_depth" in families
    assert "_created" not in text
    # Families come sorted by name, as the Go registry gathers them.
    type_lines = re.findall(r"^# TYPE (\S+) ", text, re.MULTILINE)
    assert type_lines == sorted(type_lines)


def test_init_controller_publishes_results_at_zero() -> None:
    m = Metrics()
    m.init_controller("widgets", 3)
    text = render(m)
    for result in ("success", "error", "requeue", "requeue_after"):
        got = value(text, "controller_runtime_reconcile_total", controller="widgets", result=result)
        assert got == 0.0
    for name in (
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_terminal_reconcile_errors_total",
        "controller_runtime_reconcile_panics_total",
        "controller_runtime_reconcile_timeouts_total",
        "controller_runtime_active_workers",
    ):
        assert value(text, name, controller="widgets") == 0.0
    assert value(text, "controller_runtime_max_concurrent_reconciles", controller="widgets") == 3
    # Upstream has no reconcile-time series before the first reconcile.
    assert "controller_runtime_reconcile_time_seconds_count{" not in text
    assert 'controller_runtime_reconcile_total{controller="widgets",result="error"} 0\n' in text


def test_controller_handle_counts_outcomes() -> None:
    m = Metrics()
    m.init_controller("widgets", 1)
    handle = m.controller("widgets")
    assert m.controller("widgets") is handle
    handle.worker_active(1)
    handle.reconciled("requeue_after", 0.02)
    handle.reconciled("error", 0.5)
    handle.error(terminal=True)
    handle.error()
    handle.panic()
    handle.timeout()
    text = render(m)
    assert value(text, "controller_runtime_active_workers", controller="widgets") == 1
    assert (
        value(text, "controller_runtime_reconcile_total", controller="widgets", result="error") == 1
    )
    assert (
        value(
            text, "controller_runtime_reconcile_total", controller="widgets", result="requeue_after"
        )
        == 1
    )
    assert value(text, "controller_runtime_reconcile_errors_total", controller="widgets") == 2
    assert (
        value(text, "controller_runtime_terminal_reconcile_errors_total", controller="widgets") == 1
    )
    assert value(text, "controller_runtime_reconcile_panics_total", controller="widgets") == 1
    assert value(text, "controller_runtime_reconcile_timeouts_total", controller="widgets") == 1
    assert value(text, "controller_runtime_reconcile_time_seconds_count", controller="widgets") == 2
    assert value(
        text, "controller_runtime_reconcile_time_seconds_sum", controller="widgets"
    ) == pytest.approx(0.52)
    bucket = "controller_runtime_reconcile_time_seconds_bucket"
    assert value(text, bucket, controller="widgets", le="0.025") == 1


def test_reconcile_time_buckets_equal_upstream() -> None:
    m = Metrics()
    m.controller("widgets").reconciled("success", 0.001)
    le = le_values(render(m), "controller_runtime_reconcile_time_seconds_bucket")
    assert len(UPSTREAM_RECONCILE_BUCKETS) == 40
    assert [float(b) for b in le] == [*UPSTREAM_RECONCILE_BUCKETS, float("inf")]
    # Written the way Go writes them: integers without ".0".
    assert le[17] == "1"
    assert le[-2:] == ["60", "+Inf"]


def test_queue_duration_buckets_equal_upstream() -> None:
    m = Metrics()
    m.queue_metrics("widgets").get(0, 1.0)
    m.queue_metrics("widgets").done(1.0)
    text = render(m)
    assert le_values(text, "workqueue_queue_duration_seconds_bucket") == UPSTREAM_QUEUE_LE
    assert le_values(text, "workqueue_work_duration_seconds_bucket") == UPSTREAM_QUEUE_LE


def test_rest_client_duration_buckets() -> None:
    m = Metrics()
    m.observe_request("GET", "h", 200, 0.01)
    le = le_values(render(m), "rest_client_request_duration_seconds_bucket")
    assert le == [
        "0.005", "0.025", "0.1", "0.25", "0.5", "1", "2", "4", "8", "15", "30", "60", "+Inf",
    ]  # fmt: skip


def test_two_instances_do_not_conflict() -> None:
    first, second = Metrics(), Metrics()
    first.init_controller("widgets", 2)
    first.queue_metrics("widgets").add(0)
    second.init_controller("gadgets", 5)
    first_text, second_text = render(first), render(second)
    assert 'controller="widgets"' in first_text
    assert 'controller="gadgets"' not in first_text
    assert 'controller="widgets"' not in second_text
    assert value(second_text, "controller_runtime_max_concurrent_reconciles", controller="gadgets")
    assert first.registry is not second.registry


def test_given_registry_is_used_and_existing_process_collector_tolerated() -> None:
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    m = Metrics(registry)
    assert m.registry is registry
    m.set_leader("lock", False)
    assert registry.get_sample_value("leader_election_master_status", {"name": "lock"}) == 0


def test_queue_adapter_calls_reflect_in_rendered_values() -> None:
    m = Metrics()
    queue = m.queue_metrics("widgets")
    assert m.queue_metrics("widgets") is queue
    reporter: QueueMetrics = queue  # the adapter satisfies the protocol structurally
    # The call sequence of the work queue: two items ready at 0, one at -100 ...
    for priority in (0, 0, -100):
        reporter.add(priority)
        reporter.depth(priority, 1)
    # ... a worker takes one at 0 ...
    reporter.depth(0, -1)
    reporter.get(0, 0.5)
    # ... the low-priority item is promoted to 10 ...
    reporter.depth(-100, -1)
    reporter.depth(10, 1)
    # ... the worker finishes, and two items come back with a delay.
    reporter.done(2.0)
    reporter.retry()
    reporter.retry()
    text = render(m)
    q = {"name": "widgets", "controller": "widgets"}
    assert value(text, "workqueue_adds_total", **q) == 3
    assert value(text, "workqueue_depth", priority="0", **q) == 1
    assert value(text, "workqueue_depth", priority="-100", **q) == 0
    assert value(text, "workqueue_depth", priority="10", **q) == 1
    assert value(text, "workqueue_queue_duration_seconds_count", **q) == 1
    assert value(text, "workqueue_queue_duration_seconds_sum", **q) == 0.5
    assert value(text, "workqueue_queue_duration_seconds_bucket", le="0.1", **q) == 0
    assert value(text, "workqueue_queue_duration_seconds_bucket", le="1", **q) == 1
    assert value(text, "workqueue_work_duration_seconds_count", **q) == 1
    assert value(text, "workqueue_work_duration_seconds_sum", **q) == 2.0
    assert value(text, "workqueue_retries_total", **q) == 2


def test_new_queue_series_start_at_zero() -> None:
    m = Metrics()
    m.queue_metrics("widgets")
    text = render(m)
    q = {"name": "widgets", "controller": "widgets"}
    assert value(text, "workqueue_adds_total", **q) == 0
    assert value(text, "workqueue_retries_total", **q) == 0
    assert value(text, "workqueue_unfinished_work_seconds", **q) == 0
    assert value(text, "workqueue_longest_running_processor_seconds", **q) == 0


def test_scrape_time_gauges_come_from_the_source() -> None:
    m = Metrics()
    queue: QueueMetricsAdapter = m.queue_metrics("widgets")
    readings = iter([(3.5, 2.25), (7.0, 4.5)])
    calls: list[int] = []

    def source() -> tuple[float, float]:
        calls.append(1)
        return next(readings)

    queue.set_unfinished_source(source)
    assert calls == []  # nothing is computed until a scrape
    q = {"name": "widgets", "controller": "widgets"}
    first = render(m)
    assert value(first, "workqueue_unfinished_work_seconds", **q) == 3.5
    assert value(first, "workqueue_longest_running_processor_seconds", **q) == 2.25
    second = render(m)
    assert value(second, "workqueue_unfinished_work_seconds", **q) == 7.0
    assert value(second, "workqueue_longest_running_processor_seconds", **q) == 4.5
    assert len(calls) == 2


def test_failing_source_does_not_break_the_scrape() -> None:
    m = Metrics()

    def broken() -> tuple[float, float]:
        raise RuntimeError("queue gone")

    m.queue_metrics("broken").set_unfinished_source(broken)
    m.queue_metrics("fine").set_unfinished_source(lambda: (1.0, 1.0))
    text = render(m)
    assert value(text, "workqueue_unfinished_work_seconds", name="fine", controller="fine") == 1
    assert 'workqueue_unfinished_work_seconds{controller="broken"' not in text


def test_observe_request_labels_and_codes() -> None:
    m = Metrics()
    m.observe_request("GET", "api:6443", 200, 0.01)
    m.observe_request("GET", "api:6443", "200", 0.02)
    m.observe_request("PUT", "api:6443", "<error>", 1.0)
    m.observe_retry("PUT", "api:6443", 429)
    text = render(m)
    assert value(text, "rest_client_requests_total", code="200", method="GET", host="api:6443") == 2
    assert (
        value(text, "rest_client_requests_total", code="<error>", method="PUT", host="api:6443")
        == 1
    )
    assert (
        value(text, "rest_client_request_duration_seconds_count", verb="GET", host="api:6443") == 2
    )
    assert (
        value(text, "rest_client_request_retries_total", code="429", verb="PUT", host="api:6443")
        == 1
    )


def test_leader_election_and_informer_series() -> None:
    m = Metrics()
    m.set_leader("lock", True)
    m.leader_slowpath("lock")
    m.leader_slowpath("lock")
    m.informer_watch_restarts_total.labels("v1/pods").inc()
    m.cache_objects.labels("v1/pods").set(12)
    text = render(m)
    assert value(text, "leader_election_master_status", name="lock") == 1
    assert value(text, "leader_election_slowpath_total", name="lock") == 2
    assert value(text, "kubeforge_informer_watch_restarts_total", resource="v1/pods") == 1
    assert value(text, "kubeforge_cache_objects", resource="v1/pods") == 12
    m.set_leader("lock", False)
    assert value(render(m), "leader_election_master_status", name="lock") == 0


def test_process_and_platform_collectors_are_registered() -> None:
    text = render(Metrics())
    assert "# TYPE python_info gauge\n" in text
    assert "# TYPE python_gc_collections_total counter\n" in text
    # The process collector reads /proc, present wherever these tests run on Linux.
    assert "# TYPE process_cpu_seconds_total counter\n" in text


def test_label_values_are_escaped() -> None:
    m = Metrics()
    m.cache_objects.labels('a"b\\c\nd').set(1)
    text = render(m)
    assert 'kubeforge_cache_objects{resource="a\\"b\\\\c\\nd"} 1\n' in text
    assert value(text, "kubeforge_cache_objects", resource='a"b\\c\nd') == 1


@pytest.mark.parametrize(
    ("number", "go"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-1.0, "-1"),
        (60.0, "60"),
        (0.005, "0.005"),
        (1.25, "1.25"),
        (0.0001, "0.0001"),
        (1e-05, "1e-05"),
        (1e-08, "1e-08"),
        (9.999999999999999e-06, "9.999999999999999e-06"),
        (123456.0, "123456"),
        (1e6, "1e+06"),
        (24076288.0, "2.4076288e+07"),
        (1795241355.41, "1.79524135541e+09"),
        (-2.5, "-2.5"),
        (1e21, "1e+21"),
        (1.5e-300, "1.5e-300"),
        (float("inf"), "+Inf"),
        (float("-inf"), "-Inf"),
        (float("nan"), "NaN"),
    ],
)
def test_format_float_matches_go(number: float, go: str) -> None:
    assert format_float(number) == go
