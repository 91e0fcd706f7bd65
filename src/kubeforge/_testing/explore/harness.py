"""One run of a test under exploration, inside the pytest process that runs it.

The `testenv` fixture of a run is an `ExploringEnv`: every manager it starts
(`run_manager`, so the `manager` fixture's too) is observed by the run's recorder, gives its
reconcilers the perturbing client, and is kept running by a supervisor that starts a new
one when the perturbation crashes it. The test's body runs as usual (abandoned, for a
`delete`, once the object it made is gone); then, while the managers still run, the run:

1. lets everything settle (no reconcile for a while, the cluster's objects unchanged);
2. for a `revert`, changes the object's spec and changes it back, settling after each; for
   an `advance`, moves the virtual clock past the requeue it names;
3. takes the end state (endstate.py);
4. checks convergence: every controller is asked to reconcile everything again, and what
   that writes, and which reconciles keep failing, are noted;
5. deletes the objects of the reconciled kinds the test made, lets the operator clean up,
   and takes the end state again.

`Run.result` is what is kept of it (the trace, the end states, the checks), as JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from kubeforge import clock
from kubeforge._client.client import Client
from kubeforge._client.config import ClusterConfig
from kubeforge._client.discovery import APIResource
from kubeforge._client.errors import ApiError, Invalid, NotFound
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.watcher import EventSink
from kubeforge._testing.crashpoints import CrashAfter, ManagerCrashed
from kubeforge._testing.env import TestEnv
from kubeforge._testing.explore.endstate import Snapshot, capture, listable
from kubeforge._testing.explore.inject import HeldEvents, Perturbing
from kubeforge._testing.explore.points import Perturbation
from kubeforge._testing.explore.trace import FAILED, ErrorLog, Recorder, short_kind
from kubeforge._testing.interceptors import InterceptedCall, Interceptors, intercept
from kubeforge._testing.kubectl import Kubectl, KubectlResult

__all__ = ["ExploringEnv", "Run"]

log = logging.getLogger("kubeforge.testing.explore")

Setup = Callable[[Manager], Any]

QUIET = 0.3
"""Seconds without a reconcile, a delivered event or a write that count as settled."""
SETTLE_TIMEOUT = 10.0

# Set in the tasks of the harness itself (the managers it runs): they never wait on a restart.
_HARNESS: contextvars.ContextVar[bool] = contextvars.ContextVar("explore_harness", default=False)
DELETE_TIMEOUT = 20.0


class Run:
    """What one run of a test does and keeps (see the module)."""

    def __init__(
        self, perturbation: Perturbation | None, load_setup: Callable[[], Setup] | None
    ) -> None:
        self.perturbation = perturbation
        self.load_setup = load_setup
        self.notes: list[str] = []
        self.errors = ErrorLog()
        self.result: dict[str, Any] = {
            "perturbation": None if perturbation is None else str(perturbation),
        }
        self._recorder: Recorder | None = None
        self._env: ExploringEnv | None = None
        self._abandon: asyncio.Event | None = None
        self._steady = asyncio.Event()
        self.supervisors: list[Supervisor] = []
        # Event sinks holding back watch events (coalesce): not settled while they hold.
        self.held: list[HeldEvents] = []
        self._started = time.monotonic()

    # set up by the testenv fixture ----------------------------------------------------------

    def begin(self, env: ExploringEnv) -> None:
        """Start the run in `env` (on the test's event loop)."""
        self._env = env
        self._recorder = Recorder(env.namespace)
        self._abandon = asyncio.Event()
        self._steady = asyncio.Event()
        self._steady.set()
        logging.getLogger("kubeforge").addHandler(self.errors)

    # a restart, seen from the test ------------------------------------------------------------

    def pause(self) -> None:
        """A manager crashed: the test's requests wait until its successor runs."""
        self._steady.clear()

    def resume(self) -> None:
        self._steady.set()

    async def steady(self) -> None:
        """Wait while a crashed manager is being replaced (not inside the harness's own
        tasks, which do the replacing)."""
        if not _HARNESS.get():
            await self._steady.wait()

    def gate(self, kubectl: Kubectl) -> Kubectl:
        """`kubectl` whose commands wait while a crashed manager is being replaced."""
        run_command = kubectl.run

        async def gated(*args: Any, **options: Any) -> KubectlResult:
            await self.steady()
            return await run_command(*args, **options)

        kubectl.run = gated  # type: ignore[method-assign]
        return kubectl

    def end(self) -> None:
        logging.getLogger("kubeforge").removeHandler(self.errors)
        self.result["seconds"] = round(time.monotonic() - self._started, 2)

    @property
    def recorder(self) -> Recorder:
        assert self._recorder is not None, "the run has not begun"
        return self._recorder

    @property
    def env(self) -> ExploringEnv:
        assert self._env is not None, "the run has not begun"
        return self._env

    # what the perturbations ask (inject.Perturber) ------------------------------------------

    def applied(self, what: str) -> None:
        self.notes.append(what)
        self.recorder.note("perturbation", detail=what)

    async def delete_during_creation(self, kind: str, namespace: str, name: str) -> None:
        with contextlib.suppress(NotFound):
            await self.env.client.delete(kind, name, namespace=namespace or None)
        assert self._abandon is not None
        self._abandon.set()

    # the test's body ------------------------------------------------------------------------

    def wrap(self, test: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """The test function, run as a run runs it (see the module)."""

        @functools.wraps(test)
        async def explored(*args: Any, **kwargs: Any) -> Any:
            body = asyncio.ensure_future(test(*args, **kwargs))
            assert self._abandon is not None
            abandon = asyncio.ensure_future(self._abandon.wait())
            await asyncio.wait({body, abandon}, return_when=asyncio.FIRST_COMPLETED)
            abandon.cancel()
            failure: BaseException | None = None
            if body.done():
                failure = body.exception()
            else:
                body.cancel()
                await asyncio.gather(body, return_exceptions=True)
                self.result["abandoned"] = True
            await self.finish()
            if failure is not None:
                raise failure
            return None

        return explored

    # after the body -------------------------------------------------------------------------

    async def finish(self) -> None:
        """Settle, perturb a spec, take the end states and check convergence (the module's
        steps), keeping what was found in `result`."""
        started_here: contextlib.AsyncExitStack | None = None
        try:
            kinds = await listable(self.env.client, self.env.installed)
            if not self._alive():
                started_here = await self._start_for_checks()
            end = await self.settled(kinds)
            wanted = self.perturbation
            if wanted is not None and await self._after_test(wanted, kinds):
                end = await self.settled(kinds)
            self.result["virtual_time"] = isinstance(self.env.clock, clock.VirtualClock)
            self.result["end"] = end.to_json()
            self.result["primaries"] = self._primaries(end)
            self.result["reconciled_kinds"] = sorted(self._reconciled_kinds())
            if self._alive():
                self.result["convergence"] = await self._converge(kinds, end)
                self.result["deleted"] = await self._delete_primaries(end)
                deleted = await self.settled(kinds, timeout=DELETE_TIMEOUT)
                self.result["end_deleted"] = deleted.to_json()
        except Exception:
            self.result["harness_error"] = traceback.format_exc()
            log.exception("exploration: the run could not be judged")
        finally:
            if started_here is not None:
                await started_here.aclose()
            self.result["applied"] = list(self.notes)
            self.result["steps"] = self.recorder.steps
            self.result["errors"] = list(self.errors.found)
            self.result["namespace"] = self.env.namespace

    def _alive(self) -> list[Manager]:
        return [s.manager for s in self.supervisors if s.manager is not None]

    async def _start_for_checks(self) -> contextlib.AsyncExitStack | None:
        """The test ran its managers itself and stopped them: start the project's for the
        checks that need one (convergence, and finalizers during deletion)."""
        if self.load_setup is None:
            return None
        try:
            setup = self.load_setup()
        except Exception as exc:
            self.notes.append(f"no manager for the checks after the test: {exc}")
            return None
        stack = contextlib.AsyncExitStack()
        await stack.enter_async_context(self.env.run_manager(setup))
        self.result["manager_started_for_checks"] = True
        return stack

    async def quiet(self, *, timeout: float = SETTLE_TIMEOUT) -> bool:
        """Wait until no manager has done anything for QUIET seconds (and none restarts,
        and no watch event is held back)."""
        # Real time: this waits for the system to go quiet, as an I/O timeout does.
        deadline = time.monotonic() + timeout
        while True:
            busy = (
                self.recorder.in_flight > 0
                or any(s.restarting for s in self.supervisors)
                or any(h.holding for h in self.held)
            )
            if not busy and self.recorder.quiet_for() >= QUIET:
                return True
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.05)

    async def settled(
        self, kinds: list[APIResource], *, timeout: float = SETTLE_TIMEOUT
    ) -> Snapshot:
        """The end state once the managers are quiet and two snapshots in a row agree with
        nothing being deleted (or when `timeout` runs out)."""
        deadline = time.monotonic() + timeout
        last: Snapshot | None = None
        while True:
            await self.quiet(timeout=max(deadline - time.monotonic(), 0.0))
            snapshot = await capture(self.env.client, kinds, self.env.namespace)
            if (
                last is not None
                and snapshot.versions == last.versions
                and not snapshot.deleting
                and self.recorder.quiet_for() >= QUIET
            ):
                return snapshot
            if time.monotonic() > deadline:
                self.notes.append(f"the cluster did not settle within {timeout:.0f} s")
                return snapshot
            last = snapshot
            await asyncio.sleep(0.1)

    def _reconciled_kinds(self) -> dict[str, str]:
        """Short kind -> `group/version/Kind` of what the managers' controllers reconcile."""
        kinds = {}
        for manager in self._alive():
            for controller in manager.controllers.values():
                if controller.for_informer is not None:
                    name = controller.for_informer.name
                    kinds[short_kind(name)] = name
        return kinds

    def _made_by_managers(self) -> set[str]:
        return {
            str(step["object"])
            for step in self.recorder.steps
            if step["type"] == "write" and step["verb"] == "create" and not step["error"]
        }

    def _primaries(self, end: Snapshot) -> list[str]:
        """The objects of reconciled kinds in the test's namespace that the test made
        (not the managers), as `Kind/name`."""
        kinds = self._reconciled_kinds()
        made = self._made_by_managers()
        found = []
        for key in end.objects:
            kind, _, rest = key.partition("/")
            where, _, name = rest.partition("/")
            if kind in kinds and where == "<ns>" and f"{kind}/{name}" not in made:
                found.append(f"{kind}/{name}")
        return found

    async def _converge(self, kinds: list[APIResource], end: Snapshot) -> dict[str, Any]:
        """Have every controller reconcile everything once more; what changes then."""
        mark = self.recorder.step_index()
        self.recorder.note("phase", detail="reconcile everything again")
        for manager in self._alive():
            for controller in manager.controllers.values():
                with contextlib.suppress(RuntimeError):
                    controller.reconcile_all()
        await self.quiet()
        after = await capture(self.env.client, kinds, self.env.namespace)
        steps = self.recorder.steps[mark:]
        # A write answered with a version the end state already had changed nothing.
        before = set(end.versions.values())
        writes = [
            s["point"]
            for s in steps
            if s["type"] == "write" and not s["error"] and (not s["rv"] or s["rv"] not in before)
        ]
        changed = sorted(
            key
            for key in set(end.versions) | set(after.versions)
            if end.versions.get(key) != after.versions.get(key)
        )
        last: dict[tuple[str, str], dict[str, Any]] = {}
        current = {s.incarnation for s in self.supervisors if s.manager is not None}
        for step in self.recorder.steps:
            if step["type"] == "reconciled" and step["incarnation"] in current:
                last[(step["controller"], step["request"])] = step
        failing = [
            f"{controller} {request}: {step['outcome']}: {step['error']}"
            for (controller, request), step in sorted(last.items())
            if step["outcome"] in FAILED
        ]
        return {"writes": writes if changed else [], "changed": changed, "failing": failing}

    async def _delete_primaries(self, end: Snapshot) -> list[str]:
        """Delete what the test made of the reconciled kinds (the operator cleans up)."""
        kinds = self._reconciled_kinds()
        self.recorder.note("phase", detail="delete what the test made")
        deleted = []
        for primary in self._primaries(end):
            kind, _, name = primary.partition("/")
            with contextlib.suppress(NotFound):
                await self.env.client.delete(kinds[kind], name, namespace=self.env.namespace)
                deleted.append(primary)
        return deleted

    async def _after_test(self, wanted: Perturbation, kinds: list[APIResource]) -> bool:
        """The perturbations done once the test is over: whether one was."""
        if wanted.action == "revert":
            return await self._revert(wanted, kinds)
        if wanted.action == "advance":
            return await self._advance(wanted)
        return False

    # time passes ----------------------------------------------------------------------------

    async def _advance(self, wanted: Perturbation) -> bool:
        """Move the virtual clock past the requeue the place names (its delay, and a
        second), letting everything that fell due run."""
        if not isinstance(self.env.clock, clock.VirtualClock):
            self.notes.append(f"{wanted}: the test does not run on virtual time")
            return False
        kinds: dict[str, str] = {}
        seen = 0
        for step in self.recorder.steps:
            if step["type"] == "reconcile":
                kinds[str(step["id"])] = str(step["kind"])
            if step["type"] != "reconciled" or step["outcome"] != "requeue_after":
                continue
            where = f"{kinds.get(str(step['id']), '')}/{step['request']}"
            if step["controller"] != wanted.controller or where != wanted.object:
                continue
            seen += 1
            if seen == wanted.number:
                delay = float(step["requeue_after"]) + 1.0
                self.applied(f"{wanted}: the clock moved {delay:g} s")
                await self.env.clock.advance(seconds=delay)
                return True
        return False

    # A -> B -> A ------------------------------------------------------------------------------

    async def _revert(self, wanted: Perturbation, kinds: list[APIResource]) -> bool:
        target = wanted.object
        kind, _, name = target.partition("/")
        resource = next((r for r in kinds if r.kind == kind), None)
        if resource is None:
            self.notes.append(f"{target}: no such kind to change")
            return False
        what = f"{resource.api_version}/{kind}"
        client = self.env.client
        namespace = self.env.namespace if resource.namespaced else None
        try:
            obj = await client.get(what, name, namespace=namespace)
        except NotFound:
            self.notes.append(f"{target}: gone before its spec could be changed")
            return False
        original = dict(obj.get("spec") or {})
        changed = await self._other_spec(client, resource, what, name, namespace, original)
        if not changed:
            self.notes.append(f"{target}: no valid change of its spec found")
            return False
        self.applied(f"revert@{target}: spec {_show(original, changed)}, then back")
        await client.patch(what, name, {"spec": changed}, namespace=namespace)
        await self.settled(kinds)
        back = {field: original.get(field) for field in changed}
        await client.patch(what, name, {"spec": back}, namespace=namespace)
        return True

    async def _other_spec(
        self,
        client: Client,
        resource: APIResource,
        what: str,
        name: str,
        namespace: str | None,
        spec: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Spec fields changed to other values the server accepts (a dry run decides)."""
        schema = await _spec_schema(client, resource)
        candidates = {
            field: value
            for field, prop in (schema.get("properties") or {}).items()
            if (value := _other_value(prop, spec.get(field, prop.get("default")))) is not None
        }

        async def accepted(fields: dict[str, Any]) -> bool:
            try:
                await client.patch(what, name, {"spec": fields}, namespace=namespace, dry_run=True)
            except (Invalid, ApiError):
                return False
            return True

        if candidates and await accepted(candidates):
            return candidates
        return {f: v for f, v in candidates.items() if await accepted({f: v})}


def _show(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{field} {before.get(field)!r} -> {value!r}" for field, value in after.items()
    )


async def _spec_schema(client: Client, resource: APIResource) -> dict[str, Any]:
    """The structural schema of the spec of a CRD's served version ({} for built-ins)."""
    try:
        crd = await client.get(
            "apiextensions.k8s.io/v1/CustomResourceDefinition",
            f"{resource.plural}.{resource.group}",
        )
    except NotFound:
        return {}
    for version in crd["spec"]["versions"]:
        if version["name"] == resource.version:
            root = (version.get("schema") or {}).get("openAPIV3Schema") or {}
            spec: dict[str, Any] = (root.get("properties") or {}).get("spec") or {}
            return spec
    return {}


def _other_value(schema: Mapping[str, Any], value: Any) -> Any:
    """Another value a scalar field's schema allows (None: no simple one)."""
    enum = schema.get("enum")
    if enum:
        others = [choice for choice in enum if choice != value]
        return others[0] if others else None
    kind = schema.get("type")
    if kind == "boolean":
        return not value
    if kind == "integer" and isinstance(value, int):
        up, down = value + 1, value - 1
        if schema.get("maximum") is None or up <= schema["maximum"]:
            return up
        if schema.get("minimum") is None or down >= schema["minimum"]:
            return down
        return None
    if kind == "string" and isinstance(value, str):
        if schema.get("pattern") or schema.get("format"):
            return None
        longest = schema.get("maxLength")
        if longest is None or len(value) < longest:
            return value + "x"
        return value[:-1] if len(value) > int(schema.get("minLength") or 0) else None
    return None


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
        context.run(_HARNESS.set, True)
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
