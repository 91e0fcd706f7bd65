"""A controller: watched events feed a work queue; workers call reconcile and act on the Result.

The queue never hands one key to two workers, so a given object is reconciled by at most
one worker at a time however many run, timeouts included: a plain `def` reconciler that
overruns `reconcile_timeout` keeps its key until its thread returns (a thread cannot be
stopped). After each reconcile:

- success: the key's failure backoff is forgotten;
- `Result(requeue_after=d)`: forgotten, then queued again after d seconds;
- `Result(requeue=True)`: queued again with rate-limited backoff;
- an exception: logged with the request, counted, queued again with backoff (5 ms doubling
  to 1000 s, or the options' `rate_limiter`), and the worker carries on;
- `TerminalError`: logged and counted, not queued again.

A *panic* is an exception of a kind Python raises for programming mistakes (see `PANICS`):
with `recover_panic` (the default) it is logged with its traceback, counted in
`controller_runtime_reconcile_panics_total` and retried like any error; without, it stops
the controller's manager (`Manager.start()` raises it), as an unrecovered panic ends a Go
controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import os
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypedDict

from kubeforge._api.machinery.access import json_form
from kubeforge._client.errors import ApiError
from kubeforge._runtime.handler import EventHandler, handle_generic
from kubeforge._runtime.informer import Informer
from kubeforge._runtime.logs import ReconcileContext, reconciling
from kubeforge._runtime.metrics import Metrics
from kubeforge._runtime.observer import (
    Delivered,
    Observers,
    ReconcileFinished,
    ReconcileStarted,
    Trigger,
)
from kubeforge._runtime.predicate import Predicate
from kubeforge._runtime.ratelimiter import RateLimiter
from kubeforge._runtime.reconcile import Reconciler, Request, Result, SyncReconciler, TerminalError
from kubeforge._runtime.workqueue import LOW_PRIORITY, ShutDown, WorkQueue
from kubeforge.clock import activity

__all__ = ["PANICS", "Controller", "ControllerOptions", "ControllerOptionsArgs"]

log = logging.getLogger("kubeforge.controller")

PANICS: Final[tuple[type[BaseException], ...]] = (
    ArithmeticError,
    AssertionError,
    AttributeError,
    IndexError,
    KeyError,
    NameError,
    NotImplementedError,
    RecursionError,
    TypeError,
)
"""Exceptions counted as panics: what Python raises for a bug (a None where an object was
expected, a missing key or index, a wrong type), as Go panics on a nil dereference or an
index out of range."""


def _random_uuids() -> Iterator[str]:
    """Random (version 4) UUIDs as strings, cut from one os.urandom call per 256: every
    reconcile takes one, and uuid.uuid4() makes a system call and an object for each."""
    while True:
        block = bytearray(os.urandom(16 * 256))
        for i in range(0, len(block), 16):
            block[i + 6] = (block[i + 6] & 0x0F) | 0x40  # version 4
            block[i + 8] = (block[i + 8] & 0x3F) | 0x80  # RFC 4122 variant
        text = block.hex()
        for i in range(0, len(text), 32):
            yield (
                f"{text[i : i + 8]}-{text[i + 8 : i + 12]}-{text[i + 12 : i + 16]}-"
                f"{text[i + 16 : i + 20]}-{text[i + 20 : i + 32]}"
            )


_RECONCILE_IDS = _random_uuids()


# The reasons a queued request keeps for the observers (the latest ones).
_TRIGGERS_KEPT = 8

DEFAULT_WORKERS = 4
"""Workers of an `async def` reconciler when its options do not say (decision 33)."""


@dataclass
class ControllerOptions:
    """controller-runtime's controller options, with its defaults except one: unless
    `max_concurrent_reconciles` says otherwise, an `async def` reconciler gets four workers
    (coroutines; the queue never hands one object to two of them) and a plain `def` one,
    which runs on threads, gets controller-runtime's one (decision 33).

    `need_leader_election=False` runs the controller on every replica, leader or not.
    `rate_limiter` decides the retry delay of failed requests (default: per-request
    exponential backoff, 5 ms doubling to 1000 s). `queue_max_wait`: seconds a low-priority
    request (initial list, resync) waits at most before it competes with live events.
    """

    max_concurrent_reconciles: int | None = None
    reconcile_timeout: float | None = None
    cache_sync_timeout: float = 120.0
    need_leader_election: bool = True
    recover_panic: bool = True
    queue_max_wait: float | None = 10.0
    rate_limiter: RateLimiter[Request] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ControllerOptionsArgs(TypedDict, total=False):
    """The keyword arguments of `Builder.with_options` (the fields of ControllerOptions)."""

    max_concurrent_reconciles: int | None
    reconcile_timeout: float | None
    cache_sync_timeout: float
    need_leader_election: bool
    recover_panic: bool
    queue_max_wait: float | None
    rate_limiter: RateLimiter[Request] | None


class _Queued:
    """The controller's queue as a handler sees it while the controller is observed: the
    requests added are noted, with the event that caused them."""

    def __init__(self, controller: Controller, trigger: Trigger) -> None:
        self.controller = controller
        self.trigger = trigger
        self.requests: list[Request] = []

    def add(self, item: Request, priority: int = 0) -> None:
        self.requests.append(item)
        self.controller.queue.add(item, priority)
        self.controller.note_trigger(item, self.trigger)

    def add_after(self, item: Request, delay_seconds: float, priority: int = 0) -> None:
        self.requests.append(item)
        self.controller.queue.add_after(item, delay_seconds, priority)
        self.controller.note_trigger(item, self.trigger)


class _Source:
    """Connects one informer to the controller's queue through a handler and predicates."""

    def __init__(
        self,
        controller: Controller,
        handler: EventHandler,
        predicates: Sequence[Predicate],
        kind: str,
    ) -> None:
        self.controller = controller
        self.handler = handler
        self.predicates = tuple(predicates)
        self.kind = kind

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        if self.controller.observers:
            self._observed("ADDED", obj, obj, is_in_initial_list)
        elif all(p.create(obj) for p in self.predicates):
            self.handler.create(obj, self.controller.queue, is_in_initial_list)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if self.controller.observers:
            self._observed("MODIFIED", old, new, False)
        elif all(p.update(old, new) for p in self.predicates):
            self.handler.update(old, new, self.controller.queue)

    def on_delete(self, obj: dict[str, Any]) -> None:
        if self.controller.observers:
            self._observed("DELETED", obj, obj, False)
        elif all(p.delete(obj) for p in self.predicates):
            self.handler.delete(obj, self.controller.queue)

    def _observed(self, type: str, old: dict[str, Any], new: dict[str, Any], initial: bool) -> None:
        """Handle an event as the methods above do, and tell the observers about it."""
        meta = new.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        version = str(meta.get("resourceVersion") or "")
        queue = _Queued(
            self.controller, Trigger("event", self.kind, namespace, name, version, type)
        )
        if type == "ADDED":
            if all(p.create(new) for p in self.predicates):
                self.handler.create(new, queue, initial)
        elif type == "MODIFIED":
            if all(p.update(old, new) for p in self.predicates):
                self.handler.update(old, new, queue)
        elif all(p.delete(new) for p in self.predicates):
            self.handler.delete(new, queue)
        self.controller.observers.emit(
            Delivered(
                self.controller.name,
                self.kind,
                type,
                namespace,
                name,
                version,
                tuple(queue.requests),
                initial,
                new,
            )
        )


@dataclass
class _Stream:
    """A source of generic events: an async iterable, its handler and predicates."""

    items: AsyncIterable[Any]
    handler: EventHandler
    predicates: tuple[Predicate, ...]


class Controller:
    """Runs `reconciler` for the requests its watches produce."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler | SyncReconciler,
        *,
        options: ControllerOptions | None = None,
        metrics: Metrics | None = None,
        kind: str = "",
        observers: Observers | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        # Told what the controller does (observer.py); empty, and so free, unless observed.
        self.observers = observers if observers is not None else Observers()
        # While observed: what queued each request since a worker last took it.
        self._triggers: dict[Request, list[Trigger]] = {}
        self.reconciler = reconciler
        self.options = options or ControllerOptions()
        self.metrics = metrics or Metrics()
        self._stats = self.metrics.controller(name)
        self._sync = isinstance(reconciler, SyncReconciler) or not inspect.iscoroutinefunction(
            reconciler.reconcile
        )
        chosen = self.options.max_concurrent_reconciles
        if chosen is not None and chosen < 0:
            raise ValueError(f"max_concurrent_reconciles must not be negative, not {chosen}")
        # None or 0 (controller-runtime's zero value) is the default. Threads run a plain
        # `def` reconciler truly side by side, so it gets one worker unless asked for more.
        self.workers = chosen or (1 if self._sync else DEFAULT_WORKERS)
        self.metrics.init_controller(name, self.workers)
        queue_metrics = self.metrics.queue_metrics(name)
        self.queue: WorkQueue[Request] = WorkQueue(
            name,
            metrics=queue_metrics,
            max_wait=self.options.queue_max_wait,
            rate_limiter=self.options.rate_limiter,
        )
        queue_metrics.set_unfinished_source(
            lambda: (
                self.queue.unfinished_work_seconds(),
                self.queue.longest_running_processor_seconds(),
            )
        )
        self.informers: list[Informer] = []
        # The informer of the reconciled kind, for reconcile_all (the builder sets it).
        self.for_informer: Informer | None = None
        # Told about a panic that was not recovered (the manager stops on it).
        self.on_failure: Callable[[BaseException], None] | None = None
        # What starts the controller in place of the manager (None: the manager, at once or
        # once leading): a shard ring, while this replica holds its shard Lease.
        self.started_by: object | None = None
        self.failure: BaseException | None = None
        self._streams: list[_Stream] = []
        self._workers: list[asyncio.Task[None]] = []
        self._stream_tasks: list[asyncio.Task[None]] = []
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
        informer.add_handler(_Source(self, handler, predicates, informer.name))
        if informer not in self.informers:
            self.informers.append(informer)

    def watch_source(
        self,
        items: AsyncIterable[Any],
        handler: EventHandler,
        predicates: Sequence[Predicate] = (),
    ) -> None:
        """Feed the queue from generic events: each item of `items` (a Channel, any async
        iterable) is a Request, or an object mapped by `handler` after the predicates'
        `generic`. Read from when the controller starts until it stops."""
        self._streams.append(_Stream(items, handler, tuple(predicates)))
        if self.started:
            self._stream_tasks.append(self._consume(self._streams[-1]))

    def reconcile_all(self, priority: int = LOW_PRIORITY) -> int:
        """Queue every object of the reconciled kind the cache holds (a "reconcile
        everything" trigger, e.g. after an external system changed); returns how many.

        Low priority by default, as a resync is: live events are handled first.
        """
        informer = self.for_informer or (self.informers[0] if self.informers else None)
        if informer is None:
            raise RuntimeError(f"controller {self.name} watches no kind to reconcile")
        keys = list(informer.store.keys())
        for key in keys:
            namespace, _, name = key.rpartition("/")
            request = Request(namespace, name)
            self.queue.add(request, priority)
            if self.observers:
                self.note_trigger(request, Trigger("reconcile_all"))
        return len(keys)

    def note_trigger(self, request: Request, trigger: Trigger) -> None:
        """Remember, for the observers, why `request` was queued (the latest few reasons)."""
        if not self.observers:
            return
        noted = self._triggers.setdefault(request, [])
        noted.append(trigger)
        if len(noted) > _TRIGGERS_KEPT:
            del noted[0]

    async def wait_for_sync(self) -> None:
        """Wait for the watched informers' first lists (TimeoutError after cache_sync_timeout)."""
        timeout = self.options.cache_sync_timeout
        results = await asyncio.gather(*(i.wait_synced(timeout) for i in self.informers))
        if not all(results):
            raise TimeoutError(f"controller {self.name}: caches did not sync within {timeout}s")

    async def start(self) -> None:
        """Start the workers (after the caches synced) and the generic event sources."""
        if self.started:
            return
        await self.wait_for_sync()
        self.started = True
        for i in range(self.workers):
            task = asyncio.create_task(self._worker(), name=f"{self.name} worker {i}")
            self._workers.append(task)
        for stream in self._streams:
            self._stream_tasks.append(self._consume(stream))
        log.info(
            "controller started",
            extra={"controller": self.name, "workers": self.workers},
        )

    async def stop(self, timeout: float | None = 30.0) -> None:
        """Stop handing out work, let in-flight reconciles finish (up to `timeout`), stop."""
        for task in self._stream_tasks:
            task.cancel()
        for task in self._stream_tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._stream_tasks.clear()
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

    def kill(self) -> None:
        """Cancel the running reconciles where they stand and take no more work, at once (a
        manager killed as a process is); `stop()` then only collects what was cancelled."""
        self.queue.shutdown()
        for task in (*self._workers, *self._stream_tasks):
            task.cancel()

    # generic events -------------------------------------------------------------------------

    def _consume(self, stream: _Stream) -> asyncio.Task[None]:
        return asyncio.create_task(self._read(stream), name=f"{self.name} source")

    async def _read(self, stream: _Stream) -> None:
        try:
            async for item in stream.items:
                self._generic(stream, item)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("controller %s: a source failed; it is not read any more", self.name)

    def _generic(self, stream: _Stream, item: Any) -> None:
        if isinstance(item, Request):
            self.queue.add(item, 0)
            self.note_trigger(item, Trigger("generic"))
            return
        try:
            obj = item if isinstance(item, Mapping) else json_form(item)
            if all(p.generic(obj) for p in stream.predicates):
                queue = _Queued(self, Trigger("generic")) if self.observers else self.queue
                handle_generic(stream.handler, obj, queue)
        except Exception:
            log.exception("controller %s: a generic event could not be handled", self.name)

    # workers --------------------------------------------------------------------------------

    async def _worker(self) -> None:
        while True:
            try:
                request, priority = await self.queue.get()
            except ShutDown:
                return
            self._stats.worker_active(1)
            try:
                await self._process(request, priority)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a panic with recover_panic off
                self._fail(exc)
                return
            finally:
                self._stats.worker_active(-1)
                self.queue.done(request)

    def _fail(self, exc: BaseException) -> None:
        """An unrecovered panic: take no more work and tell the manager (which stops)."""
        if self.failure is None:
            self.failure = exc
            log.error("controller %s: stopping on an unrecovered panic: %r", self.name, exc)
            if self.on_failure is not None:
                self.on_failure(exc)
        self.queue.shutdown()

    async def _call(self, request: Request) -> Result | None:
        reconciler = self.reconciler
        timeout = self.options.reconcile_timeout
        # reconcile_timeout is the machine's time, as a context deadline is in Go: it guards
        # against work that hangs, whatever clock the cluster runs on.
        if not self._sync:
            call: Awaitable[Result | None] = reconciler.reconcile(request)  # type: ignore[assignment]
            if timeout:
                return await asyncio.wait_for(call, timeout)
            return await call
        # A plain def reconciler runs in a thread, with this reconcile's context (logging).
        context = contextvars.copy_context()
        reconcile: Callable[[Request], Result | None] = reconciler.reconcile  # type: ignore[assignment]
        run = functools.partial(context.run, reconcile, request)
        # Counted while it runs: a virtual clock waits for it before calling the process quiet.
        activity.threads += 1
        try:
            thread = asyncio.get_running_loop().run_in_executor(None, run)
            if not timeout:
                return await thread
            return await self._within(thread, timeout, request)
        finally:
            activity.threads -= 1

    async def _within(
        self, thread: asyncio.Future[Result | None], timeout: float, request: Request
    ) -> Result | None:
        try:
            return await asyncio.wait_for(asyncio.shield(thread), timeout)
        except TimeoutError:
            # The thread cannot be stopped: the key stays held until it returns, so no other
            # reconcile of the same object can start meanwhile.
            log.warning(
                "reconcile of %s timed out after %ss; waiting for its thread to return",
                request,
                timeout,
            )
            with contextlib.suppress(Exception):
                await thread
            raise

    async def _process(self, request: Request, priority: int) -> None:
        context = ReconcileContext(
            self.name,
            self.kind,
            request.namespace,
            request.name,
            next(_RECONCILE_IDS),
            # A multicluster controller's requests name their cluster (ClusterRequest).
            getattr(request, "cluster", ""),
        )
        if not self.observers:
            await self._reconcile(context, request, priority)
            return
        triggers = tuple(self._triggers.pop(request, ()))
        self.observers.emit(ReconcileStarted(context, request, triggers))
        started = time.perf_counter()  # how long the work took: the machine's time
        try:
            outcome = await self._reconcile(context, request, priority)
        except BaseException as exc:  # an unrecovered panic, or the worker cancelled
            outcome = ("panic" if isinstance(exc, PANICS) else "error", 0.0, repr(exc))
            raise
        finally:
            name, delay, error = outcome
            self.observers.emit(
                ReconcileFinished(
                    context, request, name, delay, error, time.perf_counter() - started
                )
            )

    def _requeue(self, request: Request, priority: int, cause: str, delay: float = 0.0) -> None:
        """Queue `request` again after a reconcile: after `delay` seconds, or (no delay)
        after the rate limiter's backoff."""
        if delay > 0:
            self.queue.add_after(request, delay, priority)
        else:
            self.queue.add_rate_limited(request, priority)
        if self.observers:
            self.note_trigger(request, Trigger(cause))

    async def _reconcile(
        self, context: ReconcileContext, request: Request, priority: int
    ) -> tuple[str, float, str | None]:
        """Call the reconciler and act on how it ended; returns the outcome (one of
        ReconcileFinished's), the requeue delay and the error's text."""
        started = time.perf_counter()  # how long the work took: the machine's time
        try:
            with reconciling(context):
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
                extra=context.fields(),
            )
            self._requeue(request, priority, "retry")
            return "timeout", 0.0, "timed out"
        except TerminalError as exc:
            self._stats.error(terminal=True)
            self._stats.reconciled("error", time.perf_counter() - started)
            log.error("reconcile of %s failed for good: %s", request, exc, extra=context.fields())
            return "terminal", 0.0, str(exc)
        except PANICS as exc:
            self._stats.panic()
            self._stats.error()
            self._stats.reconciled("error", time.perf_counter() - started)
            log.error(
                "reconcile of %s panicked: %r", request, exc, exc_info=True, extra=context.fields()
            )
            if not self.options.recover_panic:
                raise
            self._requeue(request, priority, "retry")
            return "panic", 0.0, repr(exc)
        except Exception as exc:
            self._stats.error()
            self._stats.reconciled("error", time.perf_counter() - started)
            log.error(
                "reconcile of %s failed: %s",
                request,
                exc,
                exc_info=not isinstance(exc, ApiError),  # API errors are routine
                extra=context.fields(),
            )
            self._requeue(request, priority, "retry")
            return "error", 0.0, f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - started
        next_priority = result.priority if result.priority is not None else priority
        if result.delay > 0:
            self.queue.forget(request)
            self._requeue(request, next_priority, "requeue_after", result.delay)
            self._stats.reconciled("requeue_after", seconds)
            return "requeue_after", result.delay, None
        if result.requeue:
            self._requeue(request, next_priority, "requeue")
            self._stats.reconciled("requeue", seconds)
            return "requeue", 0.0, None
        self.queue.forget(request)
        self._stats.reconciled("success", seconds)
        return "success", 0.0, None
