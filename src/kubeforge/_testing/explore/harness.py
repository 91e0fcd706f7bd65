"""One run of a test under exploration, inside the pytest process that runs it.

The `testenv` fixture of a run is an `ExploringEnv` (supervisor.py): every manager it starts
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
import logging
import time
import traceback
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from kubeforge import clock
from kubeforge._client.client import Client
from kubeforge._client.discovery import APIResource
from kubeforge._client.errors import NotFound
from kubeforge._runtime.manager import Manager
from kubeforge._testing.explore.endstate import Snapshot, capture, listable
from kubeforge._testing.explore.inject import HeldEvents
from kubeforge._testing.explore.points import Perturbation
from kubeforge._testing.explore.specchange import other_spec, show_change
from kubeforge._testing.explore.trace import FAILED, ErrorLog, Recorder, short_kind
from kubeforge._testing.kubectl import Kubectl, KubectlResult

__all__ = ["HARNESS", "Environment", "Run", "Setup", "Supervised"]

log = logging.getLogger("kubeforge.testing.explore")

Setup = Callable[[Manager], Any]

QUIET = 0.3
"""Seconds without a reconcile, a delivered event or a write that count as settled."""
SETTLE_TIMEOUT = 10.0

# Set in the tasks of the harness itself (the managers it runs): they never wait on a restart.
HARNESS: contextvars.ContextVar[bool] = contextvars.ContextVar("explore_harness", default=False)
DELETE_TIMEOUT = 20.0


class Supervised(Protocol):
    """What a run needs of the supervisor of one of its managers (supervisor.py)."""

    @property
    def manager(self) -> Manager | None: ...
    @property
    def restarting(self) -> bool: ...
    @property
    def incarnation(self) -> int: ...


class Environment(Protocol):
    """What a run needs of its test environment (supervisor.py's ExploringEnv)."""

    @property
    def namespace(self) -> str: ...
    @property
    def client(self) -> Client: ...
    @property
    def installed(self) -> list[str]: ...
    @property
    def clock(self) -> clock.VirtualClock | clock.RealClock: ...
    def run_manager(self, setup: Setup | None = None) -> AbstractAsyncContextManager[Manager]: ...


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
        self._env: Environment | None = None
        self._abandon: asyncio.Event | None = None
        self._steady = asyncio.Event()
        self.supervisors: list[Supervised] = []
        # Event sinks holding back watch events (coalesce): not settled while they hold.
        self.held: list[HeldEvents] = []
        # The kinds end states list (learned when the test is over).
        self._kinds: list[APIResource] = []
        self._started = time.monotonic()

    # set up by the testenv fixture ----------------------------------------------------------

    def begin(self, env: Environment) -> None:
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
        if not HARNESS.get():
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
    def env(self) -> Environment:
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
            kinds = self._kinds = await listable(self.env.client, self.env.installed)
            if not self._alive():
                started_here = await self._start_for_checks()
            end = await self.settled(kinds)
            wanted = self.perturbation
            if wanted is not None and await self._after_test(wanted, kinds):
                end = await self.settled(kinds)
            self.result["virtual_time"] = isinstance(self.env.clock, clock.VirtualClock)
            self.result["end"] = end.to_json()
            self.result["primaries"] = self._primaries(end)
            self.result["created"] = sorted(self._made_by_managers())
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
            self.result["timeline"] = self.recorder.timeline.document()
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
        """Short kind -> `group/version/Kind` of what the managers' controllers reconcile,
        and of the project's CRDs (a controller written by hand on the manager's informers,
        with a queue of its own, has no Controller to say what it reconciles)."""
        installed = set(self.env.installed)
        kinds = {
            r.kind: f"{r.api_version}/{r.kind}"
            for r in self._kinds
            if f"{r.plural}.{r.group}" in installed
        }
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
        changed = await other_spec(client, resource, name, namespace, original)
        if not changed:
            self.notes.append(f"{target}: no valid change of its spec found")
            return False
        self.applied(f"revert@{target}: spec {show_change(original, changed)}, then back")
        await client.patch(what, name, {"spec": changed}, namespace=namespace)
        await self.settled(kinds)
        back = {field: original.get(field) for field in changed}
        await client.patch(what, name, {"spec": back}, namespace=namespace)
        return True
