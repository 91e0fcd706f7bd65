"""A controller: watched events feed a work queue; workers call reconcile and act on the Result.

The queue never hands one key to two workers, so a given object is reconciled by at most
one worker at a time however many run. After each reconcile:

- success: the key's failure backoff is forgotten;
- `Result(requeue_after=d)`: forgotten, then queued again after d seconds;
- `Result(requeue=True)`: queued again with rate-limited backoff;
- an exception: logged with the request, counted, queued again with backoff (5 ms doubling
  to 1000 s), and the worker carries on;
- `TerminalError`: logged and counted, not queued again.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeforge.client.errors import ApiError
from kubeforge.runtime.handler import EventHandler
from kubeforge.runtime.informer import Informer
from kubeforge.runtime.metrics import Metrics
from kubeforge.runtime.predicate import Predicate
from kubeforge.runtime.reconcile import Reconciler, Request, Result, SyncReconciler, TerminalError
from kubeforge.runtime.workqueue import ShutDown, WorkQueue

__all__ = ["Controller", "ControllerOptions"]

log = logging.getLogger("kubeforge.controller")


@dataclass
class ControllerOptions:
    """controller-runtime's controller options, with its defaults."""

    max_concurrent_reconciles: int = 1
    reconcile_timeout: float | None = None
    cache_sync_timeout: float = 120.0
    need_leader_election: bool = True
    recover_panic: bool = True
    queue_max_wait: float | None = 10.0
    extra: dict[str, Any] = field(default_factory=dict)


class _Source:
    """Connects one informer to the controller's queue through a handler and predicates."""

    def __init__(
        self,
        controller: Controller,
        handler: EventHandler,
        predicates: Sequence[Predicate],
    ) -> None:
        self.controller = controller
        self.handler = handler
        self.predicates = tuple(predicates)

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        if all(p.create(obj) for p in self.predicates):
            self.handler.create(obj, self.controller.queue, is_in_initial_list)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if all(p.update(old, new) for p in self.predicates):
            self.handler.update(old, new, self.controller.queue)

    def on_delete(self, obj: dict[str, Any]) -> None:
        if all(p.delete(obj) for p in self.predicates):
            self.handler.delete(obj, self.controller.queue)


class Controller:
    """Runs `reconciler` for the requests its watches produce."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler | SyncReconciler,
        *,
        options: ControllerOptions | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.name = name
        self.reconciler = reconciler
        self.options = options or ControllerOptions()
        self.metrics = metrics or Metrics()
        self._stats = self.metrics.controller(name)
        self.metrics.init_controller(name, self.options.max_concurrent_reconciles)
        queue_metrics = self.metrics.queue_metrics(name)
        self.queue: WorkQueue[Request] = WorkQueue(
            name, metrics=queue_metrics, max_wait=self.options.queue_max_wait
        )
        queue_metrics.set_unfinished_source(
            lambda: (
                self.queue.unfinished_work_seconds(),
                self.queue.longest_running_processor_seconds(),
            )
        )
        self.informers: list[Informer] = []
        self._workers: list[asyncio.Task[None]] = []
        self._sync = not inspect.iscoroutinefunction(reconciler.reconcile)
        self.started = False

    def __repr__(self) -> str:
        return f"Controller({self.name!r})"

    def watch(
        self,
        informer: Informer,
        handler: EventHandler,
        predicates: Sequence[Predicate] = (),
    ) -> None:
        """Feed the queue from `informer` events that pass `predicates`, mapped by `handler`."""
        informer.add_handler(_Source(self, handler, predicates))
        if informer not in self.informers:
            self.informers.append(informer)

    async def wait_for_sync(self) -> None:
        """Wait for the watched informers' first lists (TimeoutError after cache_sync_timeout)."""
        timeout = self.options.cache_sync_timeout
        results = await asyncio.gather(*(i.wait_synced(timeout) for i in self.informers))
        if not all(results):
            raise TimeoutError(f"controller {self.name}: caches did not sync within {timeout}s")

    async def start(self) -> None:
        """Start the workers (after the caches synced)."""
        if self.started:
            return
        await self.wait_for_sync()
        self.started = True
        for i in range(self.options.max_concurrent_reconciles):
            task = asyncio.create_task(self._worker(), name=f"{self.name} worker {i}")
            self._workers.append(task)
        log.info(
            "controller started",
            extra={"controller": self.name, "workers": self.options.max_concurrent_reconciles},
        )

    async def stop(self, timeout: float | None = 30.0) -> None:
        """Stop handing out work, let in-flight reconciles finish (up to `timeout`), stop."""
        if not self.started:
            self.queue.shutdown()
            return
        drained = await self.queue.shutdown_with_drain(timeout)
        if not drained:
            log.warning("controller %s: in-flight reconciles did not finish in time", self.name)
        for task in self._workers:
            task.cancel()
        for task in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._workers.clear()
        self.started = False

    async def _worker(self) -> None:
        while True:
            try:
                request, priority = await self.queue.get()
            except ShutDown:
                return
            self._stats.worker_active(1)
            try:
                await self._process(request, priority)
            finally:
                self._stats.worker_active(-1)
                self.queue.done(request)

    async def _call(self, request: Request) -> Result | None:
        reconciler = self.reconciler
        call: Awaitable[Result | None]
        if isinstance(reconciler, SyncReconciler) or self._sync:
            call = asyncio.to_thread(reconciler.reconcile, request)  # type: ignore[arg-type]
        else:
            call = reconciler.reconcile(request)
        if self.options.reconcile_timeout:
            return await asyncio.wait_for(call, self.options.reconcile_timeout)
        return await call

    async def _process(self, request: Request, priority: int) -> None:
        reconcile_id = uuid.uuid4().hex[:12]
        started = time.perf_counter()
        context = {
            "controller": self.name,
            "object_namespace": request.namespace,
            "object_name": request.name,
            "reconcile_id": reconcile_id,
        }
        try:
            result = await self._call(request) or Result()
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            self._stats.timeout()
            self._stats.error()
            self._stats.reconciled("error", time.perf_counter() - started)
            log.error(
                "reconcile of %s timed out after %ss",
                request,
                self.options.reconcile_timeout,
                extra=context,
            )
            self.queue.add_rate_limited(request, priority)
            return
        except TerminalError as exc:
            self._stats.error(terminal=True)
            self._stats.reconciled("error", time.perf_counter() - started)
            log.error("reconcile of %s failed for good: %s", request, exc, extra=context)
            return
        except Exception as exc:
            self._stats.error()
            self._stats.reconciled("error", time.perf_counter() - started)
            log.error(
                "reconcile of %s failed: %s",
                request,
                exc,
                exc_info=not isinstance(exc, ApiError),  # API errors are routine
                extra=context,
            )
            self.queue.add_rate_limited(request, priority)
            return
        seconds = time.perf_counter() - started
        next_priority = result.priority if result.priority is not None else priority
        if result.delay > 0:
            self.queue.forget(request)
            self.queue.add_after(request, result.delay, next_priority)
            self._stats.reconciled("requeue_after", seconds)
        elif result.requeue:
            self.queue.add_rate_limited(request, next_priority)
            self._stats.reconciled("requeue", seconds)
        else:
            self.queue.forget(request)
            self._stats.reconciled("success", seconds)
