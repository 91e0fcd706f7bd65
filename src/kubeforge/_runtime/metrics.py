"""Prometheus metrics of a manager, named and labelled as controller-runtime names them.

Every metric lives in a registry owned by one :class:`Metrics`, so several managers can run in
one process without clashing. Names, types, labels and histogram buckets are those of
controller-runtime (``controller_runtime_*``, the webhook server's included, ``certwatcher_*``,
``workqueue_*``, ``rest_client_*``, ``leader_election_*``), so existing dashboards and alerts
work unchanged. Two families are kubeforge's own and carry the ``kubeforge_`` prefix: informer
watch restarts and cache sizes.

:meth:`Metrics.render` writes the text exposition format 0.0.4 the way the Go client library
does: families sorted by name, numbers formatted like Go (``1`` rather than ``1.0``), no
``_created`` series.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Timestamp

__all__ = [
    "CONTENT_TYPE",
    "QUEUE_DURATION_BUCKETS",
    "RECONCILE_RESULTS",
    "RECONCILE_TIME_BUCKETS",
    "REST_CLIENT_DURATION_BUCKETS",
    "ControllerMetrics",
    "Metrics",
    "QueueMetricsAdapter",
    "WebhookMetricsAdapter",
    "format_float",
    "render_text",
]

_log = logging.getLogger("kubeforge.runtime.metrics")

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"

RECONCILE_RESULTS: Final = ("success", "error", "requeue", "requeue_after")

# controller-runtime pkg/internal/controller/metrics/metrics.go: 40 explicit bounds.
RECONCILE_TIME_BUCKETS: Final[tuple[float, ...]] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip


def _exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    # Repeated multiplication, not start * factor**i: the rounding must equal the Go
    # client's, whose bounds include 9.999999999999999e-06 rather than 1e-05.
    bounds = []
    for _ in range(count):
        bounds.append(start)
        start *= factor
    return tuple(bounds)


# ExponentialBuckets(10e-9, 10, 12): 10 ns to 1000 s.
QUEUE_DURATION_BUCKETS: Final = _exponential_buckets(10e-9, 10.0, 12)

# client-go's rest_client_request_duration_seconds bounds.
REST_CLIENT_DURATION_BUCKETS: Final[tuple[float, ...]] = (
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
)  # fmt: skip

_UNFINISHED = "workqueue_unfinished_work_seconds"
_LONGEST = "workqueue_longest_running_processor_seconds"
_UNFINISHED_HELP = (
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
    "threads by observing the rate at which this increases."
)
_LONGEST_HELP = "How many seconds has the longest running processor for workqueue been running."
_QUEUE_LABELS = ("name", "controller")


class QueueMetricsAdapter:
    """The workqueue_* series of one controller's queue; children are bound once, up front."""

    __slots__ = (
        "_adds",
        "_depth_children",
        "_depth_vec",
        "_name",
        "_queue_duration",
        "_retries",
        "_unfinished_source",
        "_work_duration",
    )

    def __init__(self, metrics: Metrics, controller: str) -> None:
        self._name = controller
        # controller-runtime puts the controller name in both `name` and `controller`.
        self._adds = metrics.workqueue_adds_total.labels(controller, controller)
        self._queue_duration = metrics.workqueue_queue_duration_seconds.labels(
            controller, controller
        )
        self._work_duration = metrics.workqueue_work_duration_seconds.labels(controller, controller)
        self._retries = metrics.workqueue_retries_total.labels(controller, controller)
        self._depth_vec = metrics.workqueue_depth
        self._depth_children: dict[int, Gauge] = {}
        self._unfinished_source: Callable[[], tuple[float, float]] | None = None

    @property
    def controller(self) -> str:
        """The controller (and queue) name."""
        return self._name

    def _depth_at(self, priority: int) -> Gauge:
        child = self._depth_children.get(priority)
        if child is None:
            child = self._depth_vec.labels(self._name, self._name, str(priority))
            self._depth_children[priority] = child
        return child

    def add(self, priority: int) -> None:
        """Count an add; the queue reports the depth change separately through ``depth``."""
        self._adds.inc()

    def get(self, priority: int, queued_seconds: float) -> None:
        """Record how long the item waited; the depth change comes through ``depth``."""
        self._queue_duration.observe(queued_seconds)

    def done(self, work_seconds: float) -> None:
        """Record how long processing an item took."""
        self._work_duration.observe(work_seconds)

    def retry(self) -> None:
        """Count a delayed re-add."""
        self._retries.inc()

    def depth(self, priority: int, delta: int) -> None:
        """Move the depth at ``priority`` by ``delta``."""
        self._depth_at(priority).inc(delta)

    def set_unfinished_source(self, fn: Callable[[], tuple[float, float]]) -> None:
        """Use ``fn() -> (unfinished_seconds, longest_running_seconds)`` at each scrape."""
        self._unfinished_source = fn

    def unfinished(self) -> tuple[float, float]:
        """Current (unfinished work, longest running processor) seconds; zeros without a source."""
        source = self._unfinished_source
        return (0.0, 0.0) if source is None else source()


class ControllerMetrics:
    """The controller_runtime_* series of one controller, bound once for the reconcile path."""

    __slots__ = (
        "_active",
        "_errors",
        "_max_concurrent",
        "_panics",
        "_results",
        "_terminal",
        "_time",
        "_time_vec",
        "_timeouts",
        "name",
    )

    def __init__(self, metrics: Metrics, name: str) -> None:
        self.name = name
        self._results = {r: metrics.reconcile_total.labels(name, r) for r in RECONCILE_RESULTS}
        self._errors = metrics.reconcile_errors_total.labels(name)
        self._terminal = metrics.terminal_reconcile_errors_total.labels(name)
        self._panics = metrics.reconcile_panics_total.labels(name)
        self._timeouts = metrics.reconcile_timeouts_total.labels(name)
        # Bound on first observation: upstream shows no histogram before the first reconcile.
        self._time_vec = metrics.reconcile_time_seconds
        self._time: Histogram | None = None
        self._max_concurrent = metrics.max_concurrent_reconciles.labels(name)
        self._active = metrics.active_workers.labels(name)

    def set_max_concurrent(self, value: int) -> None:
        """Publish the configured number of workers."""
        self._max_concurrent.set(value)

    def reconciled(self, result: str, seconds: float) -> None:
        """Count one reconcile by ``result`` (see RECONCILE_RESULTS) and record its duration."""
        self._results[result].inc()
        histogram = self._time
        if histogram is None:
            histogram = self._time = self._time_vec.labels(self.name)
        histogram.observe(seconds)

    def error(self, *, terminal: bool = False) -> None:
        """Count a reconcile error; terminal errors are also counted on their own."""
        self._errors.inc()
        if terminal:
            self._terminal.inc()

    def panic(self) -> None:
        """Count an exception that escaped the reconciler and was recovered."""
        self._panics.inc()

    def timeout(self) -> None:
        """Count a reconcile that exceeded its deadline."""
        self._timeouts.inc()

    def worker_active(self, delta: int) -> None:
        """Move the number of busy workers by ``delta`` (+1 on start, -1 on finish)."""
        self._active.inc(delta)


class WebhookMetricsAdapter:
    """The webhook server's series (kubeforge._webhook.metrics.WebhookMetrics)."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def registered(self, path: str) -> None:
        """Publish a webhook's request counts for 200 and 500 and its in-flight gauge at 0,
        as controller-runtime's InstrumentedHook does."""
        m = self._metrics
        m.webhook_requests_total.labels(path, "200")
        m.webhook_requests_total.labels(path, "500")
        m.webhook_requests_in_flight.labels(path)

    def request_started(self, path: str) -> None:
        """One more request in flight at `path`."""
        self._metrics.webhook_requests_in_flight.labels(path).inc()

    def request_finished(self, path: str, code: int, seconds: float) -> None:
        """Count the answered request by HTTP status and record its latency."""
        m = self._metrics
        m.webhook_requests_in_flight.labels(path).dec()
        m.webhook_requests_total.labels(path, str(code)).inc()
        m.webhook_latency_seconds.labels(path).observe(seconds)

    def panic(self) -> None:
        """Count a handler that raised an unexpected exception."""
        self._metrics.webhook_panics_total.inc()

    def conversion_panic(self) -> None:
        """Count a conversion that raised an unexpected exception."""
        self._metrics.conversion_webhook_panics_total.inc()

    def certificate_read(self, ok: bool) -> None:
        """Count a read of the serving certificate, and its failure."""
        self._metrics.certwatcher_read_certificate_total.inc()
        if not ok:
            self._metrics.certwatcher_read_certificate_errors_total.inc()


class _QueueTimesCollector(Collector):
    """Computes the two scrape-time workqueue gauges from each queue's source."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: dict[str, QueueMetricsAdapter] = {}

    def track(self, adapter: QueueMetricsAdapter) -> None:
        with self._lock:
            self._queues[adapter.controller] = adapter

    def describe(self) -> Iterable[Metric]:
        return (
            GaugeMetricFamily(_UNFINISHED, _UNFINISHED_HELP, labels=_QUEUE_LABELS),
            GaugeMetricFamily(_LONGEST, _LONGEST_HELP, labels=_QUEUE_LABELS),
        )

    def collect(self) -> Iterable[Metric]:
        unfinished = GaugeMetricFamily(_UNFINISHED, _UNFINISHED_HELP, labels=_QUEUE_LABELS)
        longest = GaugeMetricFamily(_LONGEST, _LONGEST_HELP, labels=_QUEUE_LABELS)
        with self._lock:
            queues = list(self._queues.values())
        for queue in queues:
            try:
                work, longest_running = queue.unfinished()
            except Exception:
                # One broken source must not fail the whole scrape.
                _log.exception("workqueue %s: unfinished-work source failed", queue.controller)
                continue
            labels = [queue.controller, queue.controller]
            unfinished.add_metric(labels, work)
            longest.add_metric(labels, longest_running)
        return (unfinished, longest)


class Metrics:
    """All metrics of one manager, in a registry of its own (several managers may share a process).

    The prometheus_client objects are public attributes; ``queue_metrics``, ``controller`` and
    ``observe_request`` give hot paths pre-bound children.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = reg = CollectorRegistry() if registry is None else registry
        ctl = ("controller",)
        queue = _QUEUE_LABELS

        # Controller (pkg/internal/controller/metrics).
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ("controller", "result"),
            registry=reg,
        )
        self.reconcile_errors_total = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ctl,
            registry=reg,
        )
        self.terminal_reconcile_errors_total = Counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            ctl,
            registry=reg,
        )
        self.reconcile_panics_total = Counter(
            "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics per controller",
            ctl,
            registry=reg,
        )
        self.reconcile_time_seconds = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ctl,
            buckets=RECONCILE_TIME_BUCKETS,
            registry=reg,
        )
        self.reconcile_timeouts_total = Counter(
            "controller_runtime_reconcile_timeouts_total",
            "Total number of reconciliation timeouts per controller",
            ctl,
            registry=reg,
        )
        self.max_concurrent_reconciles = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ctl,
            registry=reg,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ctl,
            registry=reg,
        )

        # Work queue (pkg/metrics/workqueue.go).
        self.workqueue_depth = Gauge(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            (*queue, "priority"),
            registry=reg,
        )
        self.workqueue_adds_total = Counter(
            "workqueue_adds_total",
            "Total number of adds handled by workqueue",
            queue,
            registry=reg,
        )
        self.workqueue_queue_duration_seconds = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            queue,
            buckets=QUEUE_DURATION_BUCKETS,
            registry=reg,
        )
        self.workqueue_work_duration_seconds = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            queue,
            buckets=QUEUE_DURATION_BUCKETS,
            registry=reg,
        )
        self.workqueue_retries_total = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            queue,
            registry=reg,
        )
        self._queue_times = _QueueTimesCollector()
        reg.register(self._queue_times)

        # Webhook server (pkg/webhook/internal/metrics, admission/metrics, conversion/metrics,
        # certwatcher/metrics).
        self.webhook_requests_total = Counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.",
            ("webhook", "code"),
            registry=reg,
        )
        self.webhook_latency_seconds = Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            ("webhook",),
            buckets=QUEUE_DURATION_BUCKETS,
            registry=reg,
        )
        self.webhook_requests_in_flight = Gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            ("webhook",),
            registry=reg,
        )
        self.webhook_panics_total = Counter(
            "controller_runtime_webhook_panics_total",
            "Total number of webhook panics",
            registry=reg,
        )
        # pkg/webhook/conversion/metrics: no labels, published at zero.
        self.conversion_webhook_panics_total = Counter(
            "controller_runtime_conversion_webhook_panics_total",
            "Total number of conversion webhook panics",
            registry=reg,
        )
        self.certwatcher_read_certificate_total = Counter(
            "certwatcher_read_certificate_total",
            "Total number of certificate reads",
            registry=reg,
        )
        self.certwatcher_read_certificate_errors_total = Counter(
            "certwatcher_read_certificate_errors_total",
            "Total number of certificate read errors",
            registry=reg,
        )
        self.webhook = WebhookMetricsAdapter(self)

        # Leader election (client-go leaderelection metrics).
        self.leader_election_master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            ("name",),
            registry=reg,
        )
        self.leader_election_slowpath_total = Counter(
            "leader_election_slowpath_total",
            "Total number of slow path exercised in renewing leader leases. 'name' is the "
            "string used to identify the lease. Please make sure to group by name.",
            ("name",),
            registry=reg,
        )

        # REST client (client-go tools/metrics as controller-runtime registers them).
        self.rest_client_requests_total = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ("code", "method", "host"),
            registry=reg,
        )
        self.rest_client_request_duration_seconds = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ("verb", "host"),
            buckets=REST_CLIENT_DURATION_BUCKETS,
            registry=reg,
        )
        self.rest_client_request_retries_total = Counter(
            "rest_client_request_retries_total",
            "Number of request retries, partitioned by status code, verb, and host.",
            ("code", "verb", "host"),
            registry=reg,
        )

        # Informer health: kubeforge's own, hence the prefix.
        self.informer_watch_restarts_total = Counter(
            "kubeforge_informer_watch_restarts_total",
            "Total number of times an informer re-established its watch, per resource",
            ("resource",),
            registry=reg,
        )
        self.cache_objects = Gauge(
            "kubeforge_cache_objects",
            "Number of objects held in the informer cache, per resource",
            ("resource",),
            registry=reg,
        )

        _register_runtime_collectors(reg)

        self._controllers: dict[str, ControllerMetrics] = {}
        self._queues: dict[str, QueueMetricsAdapter] = {}
        self._requests: dict[tuple[str, str, str], Counter] = {}
        self._durations: dict[tuple[str, str], Histogram] = {}
        self._bind_lock = threading.Lock()

    # -- controllers -------------------------------------------------------------------------

    def controller(self, name: str) -> ControllerMetrics:
        """The pre-bound series of controller ``name`` (created on first use)."""
        handle = self._controllers.get(name)
        if handle is None:
            with self._bind_lock:
                handle = self._controllers.get(name)
                if handle is None:
                    handle = self._controllers[name] = ControllerMetrics(self, name)
        return handle

    def init_controller(self, name: str, max_concurrent: int) -> None:
        """Publish a controller's series at 0 before its first reconcile, as upstream does."""
        # Binding the children (ControllerMetrics does so) is what makes them appear at 0.
        handle = self.controller(name)
        handle.set_max_concurrent(max_concurrent)
        self.active_workers.labels(name).set(0)

    # -- work queues -------------------------------------------------------------------------

    def queue_metrics(self, controller: str) -> QueueMetricsAdapter:
        """The QueueMetrics (the work queue's protocol) of ``controller``'s queue; the same
        adapter for the same name."""
        adapter = self._queues.get(controller)
        if adapter is None:
            with self._bind_lock:
                adapter = self._queues.get(controller)
                if adapter is None:
                    adapter = self._queues[controller] = QueueMetricsAdapter(self, controller)
                    self._queue_times.track(adapter)
        return adapter

    # -- leader election ---------------------------------------------------------------------

    def set_leader(self, name: str, leading: bool) -> None:
        """Record whether this process holds lease ``name`` (1) or is a backup (0)."""
        self.leader_election_master_status.labels(name).set(1 if leading else 0)

    def leader_slowpath(self, name: str) -> None:
        """Count a lease renewal that needed the slow path (a full get and update)."""
        self.leader_election_slowpath_total.labels(name).inc()

    # -- REST client -------------------------------------------------------------------------

    def observe_request(self, method: str, host: str, code: int | str, seconds: float) -> None:
        """Count one HTTP request and record its latency; ``code`` "<error>" means no response."""
        code_s = code if isinstance(code, str) else str(code)
        key = (code_s, method, host)
        counter = self._requests.get(key)
        if counter is None:
            counter = self._requests[key] = self.rest_client_requests_total.labels(*key)
        counter.inc()
        dkey = (method, host)
        histogram = self._durations.get(dkey)
        if histogram is None:
            histogram = self._durations[dkey] = self.rest_client_request_duration_seconds.labels(
                *dkey
            )
        histogram.observe(seconds)

    def observe_retry(self, verb: str, host: str, code: int | str) -> None:
        """Count a retried request (``code`` of the response that caused the retry)."""
        self.rest_client_request_retries_total.labels(str(code), verb, host).inc()

    # -- exposition --------------------------------------------------------------------------

    def render(self) -> tuple[bytes, str]:
        """The registry in text exposition format 0.0.4, and its content type."""
        return render_text(self.registry.collect()), CONTENT_TYPE


def _register_runtime_collectors(registry: CollectorRegistry) -> None:
    """Process, platform and garbage-collector metrics: the Python analogue of the Go collectors."""
    factories: Sequence[Callable[[CollectorRegistry], object]] = (
        lambda r: ProcessCollector(registry=r),
        lambda r: PlatformCollector(registry=r),
        lambda r: GCCollector(registry=r),
    )
    for factory in factories:
        try:
            factory(registry)
        except ValueError:
            # The registry already has them (e.g. prometheus_client's global registry).
            pass


# -- text exposition -------------------------------------------------------------------------


def format_float(value: float) -> str:
    """Format a sample value or bucket bound as the Go client does (strconv 'g', shortest)."""
    if value == 0:
        return "0"
    if value == 1:
        return "1"
    if value == -1:
        return "-1"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(float(value))
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    # Reduce Python's shortest repr to its significant digits and decimal exponent.
    if "e" in text:
        mantissa, _, exp_text = text.partition("e")
        exponent = int(exp_text)
        digits = mantissa.replace(".", "")
    else:
        whole, _, frac = text.partition(".")
        if whole != "0":
            digits = whole + frac
            exponent = len(whole) - 1
        else:
            significant = frac.lstrip("0")
            exponent = len(significant) - len(frac) - 1
            digits = significant
    digits = digits.rstrip("0") or "0"
    # Shortest 'g' in Go decides with a precision of 6: exponent form below 1e-4 and from 1e6.
    if exponent < -4 or exponent >= 6:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        exp_sign = "-" if exponent < 0 else "+"
        return f"{sign}{head}e{exp_sign}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole_len = exponent + 1
    if len(digits) <= whole_len:
        return sign + digits + "0" * (whole_len - len(digits))
    return f"{sign}{digits[:whole_len]}.{digits[whole_len:]}"


def _escape_label(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _exposed(family: Metric) -> tuple[str, str]:
    """The name and TYPE a family is written under in the 0.0.4 text format."""
    kind = family.type
    if kind == "counter":
        return family.name + "_total", "counter"
    if kind == "info":
        return family.name + "_info", "gauge"
    if kind == "stateset":
        return family.name, "gauge"
    if kind == "gaugehistogram":
        return family.name, "histogram"
    if kind == "unknown":
        return family.name, "untyped"
    return family.name, kind


def _sample_line(
    name: str, labels: dict[str, str], value: float, timestamp: float | Timestamp | None
) -> str:
    if labels:
        le = labels.get("le")
        # Go writes label pairs sorted by name, with a histogram's `le` last.
        pairs = [f'{k}="{_escape_label(v)}"' for k, v in sorted(labels.items()) if k != "le"]
        if le is not None:
            pairs.append(f'le="{le}"')
        head = f"{name}{{{','.join(pairs)}}}"
    else:
        head = name
    if timestamp is None:
        return f"{head} {format_float(value)}\n"
    millis = int(float(timestamp) * 1000)
    return f"{head} {format_float(value)} {millis}\n"


def render_text(families: Iterator[Metric] | Iterable[Metric]) -> bytes:
    """Write metric families in text format 0.0.4, sorted by name and without ``_created``."""
    exposed = sorted(((*_exposed(f), f) for f in families), key=lambda item: item[0])
    out: list[str] = []
    for name, kind, family in exposed:
        out.append(f"# HELP {name} {_escape_help(family.documentation)}\n")
        out.append(f"# TYPE {name} {kind}\n")
        created = family.name + "_created"
        extras: dict[str, list[str]] = {}
        for sample in family.samples:
            if sample.name == created:
                continue  # an OpenMetrics-only series the Go client never writes
            labels = sample.labels
            # Bounds and quantiles are numbers written as label values: format them like Go.
            if "le" in labels:
                labels = {**labels, "le": format_float(float(labels["le"]))}
            elif "quantile" in labels:
                labels = {**labels, "quantile": format_float(float(labels["quantile"]))}
            line = _sample_line(sample.name, labels, sample.value, sample.timestamp)
            if (
                kind == "histogram"
                and family.type == "gaugehistogram"
                and (sample.name.endswith(("_gsum", "_gcount")))
            ):
                extras.setdefault(sample.name, []).append(line)
            else:
                out.append(line)
        for extra_name, lines in sorted(extras.items()):
            out.append(f"# HELP {extra_name} {_escape_help(family.documentation)}\n")
            out.append(f"# TYPE {extra_name} gauge\n")
            out.extend(lines)
    return "".join(out).encode()
