"""The logs of a development cluster's own components, as their mirror pods serve them.

kube-apiserver, kube-controller-manager and kube-scheduler run inside the kubeforge process.
Each runs its tasks in a context that names it (`ComponentLogs.running_as`, `context`), and
every record one of kubeforge's loggers writes from that context becomes a line of that
component's container log (PodLogs, bounded as any container's log is), which
`kubectl logs -n kube-system kube-scheduler-<node>` reads. A record written while the
`scheduler` controller reconciles belongs to kube-scheduler, a program of its own in a real
cluster; the garbage collector, which runs inside the API server here, writes to
kube-controller-manager's log, whose controller it is.

Lines read as klog writes them (`I0612 10:00:00.123456    4242 scheduler.py:311] ...`).
A component logs at INFO even when the process logs only warnings: while a cluster collects
its components' logs, kubeforge's loggers are enabled at INFO, and each record goes on to the
process's own handlers only when its configuration asked for it, so a program's console
shows what it showed before.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson

from kubeforge._cluster.podlogs import PodLogs
from kubeforge._runtime.logs import current_reconcile, extra_fields

__all__ = [
    "KUBE_APISERVER",
    "KUBE_CONTROLLER_MANAGER",
    "KUBE_SCHEDULER",
    "NAMESPACE",
    "ComponentLogs",
]

KUBE_APISERVER = "kube-apiserver"
KUBE_CONTROLLER_MANAGER = "kube-controller-manager"
KUBE_SCHEDULER = "kube-scheduler"
NAMESPACE = "kube-system"

# The scheduler's controller name (controllernames.SCHEDULER): its reconciles are kube-scheduler's.
_SCHEDULER_CONTROLLER = "scheduler"
# Loggers of kube-controller-manager's controllers that run inside the API server.
_CONTROLLER_MANAGER_LOGGERS = ("kubeforge.apiserver.gc",)
_ROOT_LOGGER = "kubeforge"
# The level kubeforge's logger is given while components' logs are collected: INFO passes,
# and a level no configuration uses tells it apart from one a program set meanwhile.
_COLLECTING = logging.INFO - 1


@dataclass(frozen=True, slots=True)
class _Running:
    logs: ComponentLogs
    component: str


_running: contextvars.ContextVar[_Running | None] = contextvars.ContextVar(
    "kubeforge_component", default=None
)


def _klog_line(record: logging.LogRecord) -> bytes:
    """A record as klog's text format writes it: level letter, date and time, process id,
    source file and line, then the message, its fields as `key="value"` (and a traceback,
    line by line)."""
    stamp = datetime.fromtimestamp(record.created, UTC)
    level = record.levelno
    letter = "I" if level < logging.WARNING else "W" if level < logging.ERROR else "E"
    if level >= logging.CRITICAL:
        letter = "F"
    head = (
        f"{letter}{stamp:%m%d %H:%M:%S.%f} {record.process or os.getpid():>7} "
        f"{record.filename}:{record.lineno}] "
    )
    text = head + record.getMessage()
    for key, value in extra_fields(record).items():
        shown = value if isinstance(value, int | float) else orjson.dumps(str(value)).decode()
        text += f" {key}={shown}"
    if record.exc_info and record.exc_info[1] is not None:
        text += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
    return (text + "\n").encode(errors="replace")


class ComponentLogs:
    """The container logs of a cluster's components on its control-plane node `node`:
    container `<component>` of pod `kube-system/<component>-<node>`."""

    def __init__(self, logs: PodLogs, node: str) -> None:
        self.logs = logs
        self.node = node
        self._components: set[str] = set()

    def pod_name(self, component: str) -> str:
        """The mirror pod of `component` (the kubelet names a static pod `<name>-<node>`)."""
        return f"{component}-{self.node}"

    def begin(self, component: str) -> None:
        """Start `component`'s log (its container's run), and collect records for it."""
        self.logs.start(NAMESPACE, self.pod_name(component), component)
        if not self._components:
            _collector.start_collecting()
        self._components.add(component)

    def close(self) -> None:
        """Stop collecting (the cluster stops); the logs stay readable as they are."""
        for component in self._components:
            self.logs.end(NAMESPACE, self.pod_name(component), component)
        if self._components:
            self._components.clear()
            _collector.stop_collecting()

    @contextmanager
    def running_as(self, component: str) -> Iterator[None]:
        """Mark the code inside, and the tasks it starts, as `component`'s."""
        token = _running.set(_Running(self, component))
        try:
            yield
        finally:
            _running.reset(token)

    def context(self, component: str) -> contextvars.Context:
        """A context for tasks that run as `component` (asyncio.create_task(context=...))."""
        context = contextvars.copy_context()
        context.run(_running.set, _Running(self, component))
        return context

    def write(self, component: str, record: logging.LogRecord) -> None:
        if component in self._components:
            self.logs.write(NAMESPACE, self.pod_name(component), component, _klog_line(record))


def _component_of(running: _Running, record: logging.LogRecord) -> str:
    if running.component == KUBE_APISERVER and record.name in _CONTROLLER_MANAGER_LOGGERS:
        return KUBE_CONTROLLER_MANAGER
    if running.component == KUBE_CONTROLLER_MANAGER:
        reconcile = current_reconcile()
        if reconcile is not None and reconcile.controller == _SCHEDULER_CONTROLLER:
            return KUBE_SCHEDULER
    return running.component


class _Collector(logging.Handler):
    """On kubeforge's logger while any cluster collects its components' logs: gives each
    record to the component it was written for, and passes on to the root logger's handlers
    the records the process's logging configuration asks for."""

    def __init__(self) -> None:
        super().__init__()
        self._users = 0
        self._guard = threading.Lock()
        self._saved: tuple[int, bool] = (logging.NOTSET, True)

    def start_collecting(self) -> None:
        with self._guard:
            self._users += 1
            if self._users > 1:
                return
            logger = logging.getLogger(_ROOT_LOGGER)
            self._saved = (logger.level, logger.propagate)
            if logger.level == logging.NOTSET or logger.level > logging.INFO:
                logger.setLevel(_COLLECTING)
            logger.propagate = False
            logger.addHandler(self)

    def stop_collecting(self) -> None:
        with self._guard:
            self._users -= 1
            if self._users > 0:
                return
            logger = logging.getLogger(_ROOT_LOGGER)
            logger.removeHandler(self)
            level, propagate = self._saved
            if logger.level == _COLLECTING:
                logger.setLevel(level)
            logger.propagate = propagate

    def emit(self, record: logging.LogRecord) -> None:
        running = _running.get()
        if running is not None:
            running.logs.write(_component_of(running, record), record)
        if record.levelno >= self._threshold(record.name):
            # A handler also on kubeforge's own logger has had the record already (pytest
            # puts its capturing handlers on loggers that do not propagate).
            own = logging.getLogger(_ROOT_LOGGER).handlers
            handlers = logging.getLogger().handlers
            for handler in handlers:
                if handler not in own and record.levelno >= handler.level:
                    handler.handle(record)
            # With no handler configured, Python's last resort prints warnings to stderr.
            last = logging.lastResort
            if not handlers and last is not None and record.levelno >= last.level:
                last.handle(record)

    def _threshold(self, name: str) -> int:
        """The level a record of logger `name` needed before collecting began."""
        logger: logging.Logger | None = logging.getLogger(name)
        while logger is not None and logger.name != _ROOT_LOGGER:
            if logger.level:
                return logger.level
            logger = logger.parent
        own = logger.level if logger is not None else logging.NOTSET
        if own == _COLLECTING:
            own = self._saved[0]
        return own or logging.getLogger().getEffectiveLevel()


_collector = _Collector()
