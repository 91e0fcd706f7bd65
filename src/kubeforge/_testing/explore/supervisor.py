"""The managers of a run and its environment: an `ExploringEnv` is the test's environment
in a run, and every manager it starts (`run_manager`, so the `manager` fixture's too) is
held by a `Supervisor`, which has the run's recorder observe it, its controllers' clients
perturbed (inject.py), and starts a new manager when the perturbation crashes it. The
manager runs in a task of the supervisor's own, which is what the crash point interrupts;
the test's block goes on with the successor, its requests waiting until it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
from collections.abc import AsyncIterator, Sequence
from typing import Any

from kubeforge._client.client import Client
from kubeforge._client.config import ClusterConfig
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.watcher import EventSink
from kubeforge._testing.crashpoints import CrashAfter, ManagerCrashed
from kubeforge._testing.env import TestEnv
from kubeforge._testing.explore.harness import HARNESS, Run, Setup
from kubeforge._testing.explore.inject import HeldEvents, Perturbing
from kubeforge._testing.explore.trace import short_kind
from kubeforge._testing.interceptors import InterceptedCall, Interceptors, intercept

__all__ = ["ExploringEnv", "Supervisor"]


class Supervisor:
    """The manager of one `run_manager` block, restarted when the perturbation crashes
    it: the block goes on with the new one, as with a restarted pod. The manager runs in a
    task of the supervisor's own, which is what a crash point interrupts."""

    def __init__(
        self,
        env: ExploringEnv,
        setup: Setup | None,
        *,
        interceptors: list[Interceptors],
        own_crash: CrashAfter | None,
        **options: Any,
    ) -> None:
        self.env = env
        self.run = env.run
        self.setup = setup
        self.interceptors = interceptors
        self.own_crash = own_crash
        self.options = options
        self.manager: Manager | None = None
        self.incarnation = 0
        self.restarting = False
        self._stopping = asyncio.Event()
        self._ready: asyncio.Future[Manager] | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> Manager:
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        # A context of its own: the managers' tasks must not carry the caller's (a
        # reconcile's, when a crash restarts one), and they are the harness's own.
        context = contextvars.Context()
        context.run(HARNESS.set, True)
        self._task = loop.create_task(self._hold(), context=context)
        try:
            return await asyncio.shield(self._ready)
        except BaseException:
            await self.stop()
            raise

    async def _hold(self) -> None:
        """Run the manager until stopped, starting a new one after a crash."""
        assert self._ready is not None
        wanted = self.run.perturbation
        crash_armed = wanted is not None and wanted.action == "crash"
        while True:
            perturbing = Perturbing(self.run, self._reconciled_kind)
            crash = perturbing.crashes_after if crash_armed else None
            try:
                async with TestEnv.run_manager(
                    self.env,
                    self._setup,
                    interceptors=[perturbing.interceptors, *self.interceptors],
                    crash_after_writes=crash,
                    **self.options,
                ) as manager:
                    self.manager, self.restarting = manager, False
                    self.run.resume()
                    if not self._ready.done():
                        self._ready.set_result(manager)
                    await self._stopping.wait()
                return
            except ManagerCrashed:
                crash_armed = False
                self.manager, self.restarting = None, True
                self.run.recorder.note("phase", detail="a new manager starts")
            except BaseException as exc:
                self.manager, self.restarting = None, False
                self.run.resume()
                if not self._ready.done():
                    self._ready.set_exception(exc)
                    return
                raise

    @contextlib.asynccontextmanager
    async def in_block(self) -> AsyncIterator[Manager]:
        """The manager in the caller's own block, with the caller's crash point (which
        interrupts that block, as the test expects): observed and perturbed, not
        restarted."""
        perturbing = Perturbing(self.run, self._reconciled_kind)
        async with TestEnv.run_manager(
            self.env,
            self._setup,
            interceptors=[perturbing.interceptors, *self.interceptors],
            crash_after_writes=self.own_crash,
            **self.options,
        ) as manager:
            self.manager = manager
            try:
                yield manager
            finally:
                self.manager = None

    def _reconciled_kind(self, controller: str) -> str | None:
        found = self.manager.controllers.get(controller) if self.manager is not None else None
        informer = found.for_informer if found is not None else None
        return informer.name if informer is not None else None

    async def _setup(self, manager: Manager) -> None:
        run = self.run
        run.recorder.attach(manager)
        self.incarnation = run.recorder.incarnation
        self.manager = manager
        if self.setup is not None:
            pending = self.setup(manager)
            if inspect.isawaitable(pending):
                await pending
        wanted = run.perturbation
        if wanted is not None and wanted.action == "coalesce":
            for informer in manager.cache.informers():
                if short_kind(informer.name) == wanted.kind:
                    informer.intercept_events(functools.partial(_held, run=run, kind=informer.name))

    async def stop(self) -> None:
        """End the block: stop the manager (a dead one's error is raised here)."""
        self._stopping.set()
        if self._task is not None:
            try:
                await self._task
            finally:
                self.manager = None


def _held(sink: EventSink, *, run: Run, kind: str) -> EventSink:
    return HeldEvents(sink, run, kind)


class ExploringEnv(TestEnv):
    """The test environment of a run: its managers observed, perturbed and supervised."""

    __test__ = False

    def __init__(self, run: Run, **options: Any) -> None:
        super().__init__(**options)
        self.run = run
        self._gated: Client | None = None

    @property
    def client(self) -> Client:
        """The environment's client, whose calls wait while a crashed manager is being
        replaced: to the test, a restart takes no time (webhooks served by the manager
        are back when its requests go on)."""
        real = super().client
        if self._gated is None or self._gated.wrapped is not real:  # type: ignore[attr-defined]
            self._gated = intercept(real, Interceptors(default=self._wait_steady))
        return self._gated

    async def _wait_steady(self, client: Any, call: InterceptedCall) -> Any:
        await self.run.steady()
        return await call.proceed()

    @contextlib.asynccontextmanager
    async def run_manager(
        self,
        setup: Setup | None = None,
        *,
        config: ClusterConfig | None = None,
        webhooks: bool = True,
        interceptors: Interceptors | Sequence[Interceptors] = (),
        crash_after_writes: CrashAfter | None = None,
        **options: Any,
    ) -> AsyncIterator[Manager]:
        """TestEnv.run_manager, its manager observed, perturbed and restarted after a
        crash. A test that sets its own crash point gets its block interrupted as it
        expects, and no crash of the run's there."""
        layers = [interceptors] if isinstance(interceptors, Interceptors) else list(interceptors)
        supervisor = Supervisor(
            self,
            setup,
            config=config,
            webhooks=webhooks,
            interceptors=layers,
            own_crash=crash_after_writes,
            **options,
        )
        self.run.supervisors.append(supervisor)
        try:
            if crash_after_writes is None:
                yield await supervisor.start()
            else:
                async with supervisor.in_block() as manager:
                    yield manager
        finally:
            await supervisor.stop()
            self.run.supervisors.remove(supervisor)
