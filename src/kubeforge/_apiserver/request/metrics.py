"""The API server's request metrics, named and labelled as kube-apiserver's.

`GET /metrics` (authenticated like every other path) serves them in the Prometheus text format,
with the process metrics: `apiserver_request_total`, `apiserver_request_duration_seconds`,
`apiserver_current_inflight_requests` and `apiserver_longrunning_requests` carry the names,
labels and buckets of k8s.io/apiserver/pkg/endpoints/metrics (v0.33), and verbs are reported
as kube-apiserver reports them: LIST for collection reads, WATCH, APPLY for server-side apply
patches, CONNECT for exec, attach, port-forward, proxy and logs.

Counting a request costs a few dictionary updates; the families are built only when scraped.
Only resource requests are counted (discovery, OpenAPI, health and /metrics are not), and a
watch or a followed log is counted, with its whole duration, when it ends.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterator
from time import perf_counter
from typing import Final

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from kubeforge._apiserver.http.messages import Request, Response, ResponseStream, Upgraded
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.info import RequestInfo

__all__ = ["CONTENT_TYPE", "REQUEST_DURATION_BUCKETS", "RequestMetrics"]

CONTENT_TYPE: Final = CONTENT_TYPE_PLAIN_0_0_4

# apiserver_request_duration_seconds' bounds in kube-apiserver.
REQUEST_DURATION_BUCKETS: Final[tuple[float, ...]] = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
)  # fmt: skip

_COMPONENT = "apiserver"
_REQUEST_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope")
_LONG_RUNNING_LABELS = ("verb", "group", "version", "resource", "subresource", "scope")
# Subresources kube-apiserver reports as CONNECT, and the long-running ones (with watches).
_CONNECT = frozenset({"log", "exec", "portforward", "attach", "proxy"})
_LONG_RUNNING = frozenset({"attach", "exec", "proxy", "log", "portforward"})
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_BUCKET_BOUNDS = tuple(str(b) for b in REQUEST_DURATION_BUCKETS)
_APPLY_PATCH = "application/apply-patch+yaml"
_REPORTED_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# (verb, dry_run, group, version, resource, subresource, scope)
Labels = tuple[str, str, str, str, str, str, str]
Answer = Response | Awaitable[Response | ResponseStream | Upgraded]


class _Series:
    """The requests of one label set: counts by status code, and their durations."""

    __slots__ = ("buckets", "codes", "seconds")

    def __init__(self) -> None:
        self.codes: dict[int, int] = {}
        # One count per bucket (not cumulative), the last one for +Inf.
        self.buckets = [0] * (len(REQUEST_DURATION_BUCKETS) + 1)
        self.seconds = 0.0


class RequestMetrics:
    """Counters of the requests served; `registry` is what /metrics exposes."""

    def __init__(self) -> None:
        self._series: dict[Labels, _Series] = {}
        self._inflight = {"readOnly": 0, "mutating": 0}
        self._long_running: dict[tuple[str, ...], int] = {}
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)

    def render(self) -> bytes:
        """The text exposition of every metric."""
        return generate_latest(self.registry)

    # counting ---------------------------------------------------------------------------

    def serve(
        self, request: Request, info: RequestInfo, handle: Callable[[Request, RequestInfo], Answer]
    ) -> Answer:
        """Answer a resource request with `handle`, counting it; streams count when they end."""
        started = perf_counter()  # latency is the machine's time on any clock
        labels = _labels(request, info)
        if info.verb == "watch" or info.subresource in _LONG_RUNNING:
            try:
                answer = handle(request, info)
            except StatusError as exc:
                self._done(labels, exc.code, started)
                raise
            except Exception:
                self._done(labels, 500, started)
                raise
            if isinstance(answer, Response):
                self._done(labels, answer.status, started)
                return answer
            return self._stream(labels, answer, started)
        kind = "readOnly" if request.method in _READ_METHODS else "mutating"
        inflight = self._inflight
        inflight[kind] += 1
        try:
            answer = handle(request, info)
        except StatusError as exc:
            self._done(labels, exc.code, started)
            raise
        except Exception:
            self._done(labels, 500, started)
            raise
        finally:
            inflight[kind] -= 1
        if isinstance(answer, Response):
            self._done(labels, answer.status, started)
            return answer
        return self._stream(labels, answer, started)

    async def _stream(
        self,
        labels: Labels,
        answer: Awaitable[Response | ResponseStream | Upgraded],
        started: float,
    ) -> Response | ResponseStream | Upgraded:
        key = (labels[0], *labels[2:])
        gauges = self._long_running
        gauges[key] = gauges.get(key, 0) + 1
        code = 500
        try:
            result = await answer
            # An upgraded connection counts as kube counts it: 101 Switching Protocols.
            code = (
                result.status
                if isinstance(result, Response)
                else 101
                if isinstance(result, Upgraded)
                else 200
            )
            return result
        except StatusError as exc:
            code = exc.code
            raise
        finally:
            gauges[key] -= 1
            self._done(labels, code, started)

    def _done(self, labels: Labels, code: int, started: float) -> None:
        elapsed = perf_counter() - started
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = _Series()
        codes = series.codes
        codes[code] = codes.get(code, 0) + 1
        series.buckets[bisect_left(REQUEST_DURATION_BUCKETS, elapsed)] += 1
        series.seconds += elapsed

    # exposition -------------------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        """The families, built from the counters (prometheus_client's Collector protocol)."""
        totals = CounterMetricFamily(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code.",
            labels=(*_REQUEST_LABELS, "component", "code"),
        )
        all_series = list(self._series.items())
        for labels, series in all_series:
            for code, count in list(series.codes.items()):
                totals.add_metric((*labels, _COMPONENT, str(code)), count)
        yield totals
        durations = HistogramMetricFamily(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, "
            "version, resource, subresource, scope and component.",
            labels=(*_REQUEST_LABELS, "component"),
        )
        for labels, series in all_series:
            buckets = []
            running = 0
            for bound, observed in zip((*_BUCKET_BOUNDS, "+Inf"), series.buckets, strict=True):
                running += observed
                buckets.append((bound, running))
            durations.add_metric((*labels, _COMPONENT), buckets, series.seconds)
        yield durations
        inflight = GaugeMetricFamily(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per "
            "request kind in last second.",
            labels=("request_kind",),
        )
        for kind, count in self._inflight.items():
            inflight.add_metric((kind,), count)
        yield inflight
        long_running = GaugeMetricFamily(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, "
            "version, resource, scope and component. Not all requests are tracked this way.",
            labels=(*_LONG_RUNNING_LABELS, "component"),
        )
        for key, count in list(self._long_running.items()):
            long_running.add_metric((*key, _COMPONENT), count)
        yield long_running


def _labels(request: Request, info: RequestInfo) -> Labels:
    """The request's labels, verb and scope computed as kube-apiserver computes them."""
    if info.name is not None or info.verb == "create":
        scope = "resource"
    elif info.namespace is not None:
        scope = "namespace"
    else:
        scope = "cluster"
    method = request.method.upper()
    subresource = info.subresource or ""
    if info.verb == "watch":
        verb = "WATCH"
    elif subresource in _CONNECT:
        verb = "CONNECT"
    elif method in ("GET", "HEAD"):
        verb = "GET" if scope == "resource" else "LIST"
    elif method == "PATCH" and _media_type(request) == _APPLY_PATCH:
        verb = "APPLY"
    elif method in _REPORTED_METHODS:
        verb = method
    else:
        verb = "other"
    dry_run = request.query.get("dryRun")
    return (
        verb,
        "" if dry_run is None else ("All" if dry_run == "All" else "invalid"),
        info.group,
        info.version,
        info.resource,
        subresource,
        scope,
    )


def _media_type(request: Request) -> str:
    return str(request.headers.get("Content-Type", "")).split(";", 1)[0].strip().lower()
