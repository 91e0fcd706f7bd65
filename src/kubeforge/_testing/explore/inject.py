"""How a perturbation is done inside a run (points.py says what each one is).

The managers a run starts have their controllers' clients go through `Perturbing`'s hooks
(client interceptors, interceptors.py), which fail a chosen write (`error`: 409 Conflict for
an update, 500 for any other write), delete the reconciled object right after one
(`delete`), or serve an older version of an object from the cache (`stale`); a `crash` is
the crash point after a chosen write (crashpoints.py, `crashes_after`), and the run starts a
new manager. `HeldEvents` sits between an informer's watchers and its store and holds back
the events of one object (`coalesce`), as a watch that coalesces events would.

Everything is keyed by the names the run's recorder gives (trace.py), so a place found in
one run is found in the next.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kubeforge._client.client import to_dict
from kubeforge._runtime.logs import ReconcileContext, current_reconcile
from kubeforge._runtime.observer import object_version
from kubeforge._runtime.watcher import EventSink
from kubeforge._testing.explore.points import Perturbation
from kubeforge._testing.explore.trace import (
    OUTSIDE_RECONCILE,
    Recorder,
    Step,
    may_be_stale,
    short_kind,
    write_key,
)
from kubeforge._testing.interceptors import (
    InterceptedCall,
    Interceptors,
    conflict,
    not_found,
    server_error,
)

__all__ = ["HeldEvents", "Perturber", "Perturbing"]

log = logging.getLogger("kubeforge.testing.explore")

HOLD_SECONDS = 2.5
"""How long held events wait for another before the last of them is delivered."""
HOLD_AT_MOST = 8.0


class Perturber(Protocol):
    """What the perturbing client needs of the run it belongs to (harness.py)."""

    @property
    def perturbation(self) -> Perturbation | None: ...
    @property
    def recorder(self) -> Recorder: ...
    @property
    def held(self) -> list[HeldEvents]: ...
    def applied(self, what: str) -> None: ...
    def pause(self) -> None: ...
    async def delete_during_creation(self, kind: str, namespace: str, name: str) -> None: ...


def _version(obj: Any) -> str:
    return object_version(obj)[2]


class Perturbing:
    """The run's perturbation as hooks on its managers' clients (`interceptors`, for
    `run_manager(interceptors=...)`), and the write a crash follows (`crashes_after`, for
    `run_manager(crash_after_writes=...)`)."""

    def __init__(self, run: Perturber, reconciled_kind: Callable[[str], str | None]) -> None:
        self._run = run
        self._reconciled_kind = reconciled_kind
        self._done = False
        # The reconcile that is served stale reads, once one is.
        self._stale_reconcile: str | None = None
        # The write each task made last, as the trace names it (its point).
        self._written: dict[asyncio.Task[Any] | None, str] = {}
        run.recorder.listeners.append(self._heard)
        self.interceptors = Interceptors(default=self._hook)

    def _heard(self, step: Step) -> None:
        if step.get("type") == "write" and not step.get("error"):
            self._written[asyncio.current_task()] = str(step["point"])

    def _wrote_the_point(self) -> bool:
        """Whether the write this task just made is the perturbation's place."""
        wanted = self._run.perturbation
        made = self._written.pop(asyncio.current_task(), None)
        return wanted is not None and not self._done and made == wanted.point

    def crashes_after(self, call: InterceptedCall) -> bool:
        """Whether the manager crashes after this write (it is the `crash` place)."""
        if not self._wrote_the_point():
            return False
        self._done = True
        self._run.applied(f"{self._run.perturbation}: the manager crashed after it")
        self._run.pause()
        return True

    async def _hook(self, client: Any, call: InterceptedCall) -> Any:
        wanted = self._run.perturbation
        context = current_reconcile()
        if wanted is None or self._done:
            return await call.proceed()
        if context is not None and wanted.action == "stale" and call.verb in ("get", "list"):
            return await self._read(context, call)
        if not call.write or wanted.action not in ("error", "delete"):
            return await call.proceed()
        if context is None and wanted.action == "delete":
            return await call.proceed()  # no reconciled object to delete
        # A write outside any reconcile (a controller written by hand on the manager's
        # client) is a place too, named as the trace names it.
        controller = context.controller if context is not None else OUTSIDE_RECONCILE
        recorder = self._run.recorder
        shown = f"{short_kind(call.kind)}/{recorder.name_of(call.namespace or '', _name(call))}"
        key = write_key(controller, call.verb, shown)
        if wanted.action == "error":
            if f"{key}#{recorder.writes[key] + 1}" != wanted.point:
                return await call.proceed()
            self._done = True
            make = conflict() if call.verb.startswith("update") else server_error()
            error = make(call)
            self._run.applied(f"{wanted}: {call.verb} {shown} failed: {error}")
            recorder.writes[key] += 1
            raise error
        result = await call.proceed()
        assert context is not None
        if self._wrote_the_point():
            self._done = True
            kind = self._reconciled_kind(context.controller)
            if kind is not None:
                self._run.applied(f"{wanted}: deleted {short_kind(kind)}/{context.name} meanwhile")
                await self._run.delete_during_creation(kind, context.namespace, context.name)
        return result

    # stale reads ------------------------------------------------------------------------------

    async def _read(self, context: ReconcileContext, call: InterceptedCall) -> Any:
        wanted = self._run.perturbation
        assert wanted is not None
        result = await call.proceed()
        kind = short_kind(call.kind)
        if context.controller != wanted.controller or kind != wanted.kind:
            return result
        if call.verb == "get":
            stale = self._stale_version(context, kind, result)
            if stale is None:
                return result
            exists, obj = stale
            if not exists:
                raise not_found()(call)
            return _as(result, obj)
        kept = []
        for item in result:
            stale = self._stale_version(context, kind, item)
            if stale is None:
                kept.append(item)
            elif stale[0]:
                kept.append(_as(item, stale[1]))
        result[:] = kept
        return result

    def _stale_version(
        self, context: ReconcileContext, kind: str, item: Any
    ) -> tuple[bool, Mapping[str, Any] | None] | None:
        """The older version to serve in place of `item`, if this read is the one."""
        wanted = self._run.perturbation
        assert wanted is not None
        recorder = self._run.recorder
        namespace, name, _ = object_version(item)
        if f"{kind}/{recorder.name_of(namespace, name)}" != wanted.object:
            return None
        if self._stale_reconcile not in (None, context.reconcile_id):
            return None
        if context.name == name and context.kind == kind:
            return None  # the reconciled object itself is as new as the event that queued it
        versions = recorder.versions.get((kind, namespace, name))
        if versions is None or versions.ordinal(_version(item)) != wanted.number:
            return None
        triggers = recorder.reconciles.get(context.reconcile_id)
        if not may_be_stale(triggers, wanted.object, wanted.number):
            return None
        if self._stale_reconcile is None:
            self._stale_reconcile = context.reconcile_id
            self._run.applied(f"{wanted}: {context.controller} read the version before")
        return versions.before(_version(item))


def _name(call: InterceptedCall) -> str:
    """The object's name, or its generated name's prefix and `*`."""
    if call.name:
        return call.name
    obj = call.obj
    if obj is None:
        return ""
    prefix = (to_dict(obj).get("metadata") or {}).get("generateName")
    return f"{prefix}*" if prefix else ""


def _as(like: Any, obj: Mapping[str, Any] | None) -> Any:
    """`obj` in the form `like` has (a dict, or the same typed class)."""
    assert obj is not None
    if isinstance(like, Mapping):
        return dict(obj)
    from_dict = getattr(type(like), "from_dict", None)
    return from_dict(dict(obj)) if callable(from_dict) else like


class HeldEvents:
    """An informer's event sink that holds back the watch events of one object from its
    version `number` on, until none came for HOLD_SECONDS, and then delivers only the last:
    what a watcher that coalesces events would see."""

    def __init__(self, inner: EventSink, run: Perturber, kind: str) -> None:
        self._inner = inner
        self._run = run
        self._kind = short_kind(kind)
        self._held: tuple[bool, dict[str, Any]] | None = None
        run.held.append(self)
        self._timer: asyncio.TimerHandle | None = None
        self._holding_since = 0.0
        self._done = False

    @property
    def holding(self) -> bool:
        """Whether events are held back now (the run is not settled while they are)."""
        return self._held is not None

    def init(self, scope: str | None) -> None:
        self._drop()
        self._inner.init(scope)

    def init_page(self, scope: str | None, objects: list[dict[str, Any]]) -> None:
        self._inner.init_page(scope, objects)

    def init_done(self, scope: str | None) -> None:
        self._inner.init_done(scope)

    def apply(self, obj: dict[str, Any]) -> None:
        if not self._hold(obj, deleted=False):
            self._inner.apply(obj)

    def delete(self, obj: dict[str, Any]) -> None:
        if not self._hold(obj, deleted=True):
            self._inner.delete(obj)

    def _hold(self, obj: dict[str, Any], *, deleted: bool) -> bool:
        wanted = self._run.perturbation
        if wanted is None or self._done:
            return False
        recorder = self._run.recorder
        namespace, name, _ = object_version(obj)
        if f"{self._kind}/{recorder.name_of(namespace, name, obj)}" != wanted.object:
            return False
        loop = asyncio.get_running_loop()
        if self._held is None:
            versions = recorder.versions.get((self._kind, namespace, name))
            number = versions.ordinal(_version(obj)) if versions is not None else 1
            if number < wanted.number:
                return False
            self._holding_since = loop.time()
            self._run.applied(f"{wanted}: holding back the events of {wanted.object}")
        self._held = (deleted, obj)
        if self._timer is not None:
            self._timer.cancel()
        wait = min(HOLD_SECONDS, max(self._holding_since + HOLD_AT_MOST - loop.time(), 0.0))
        self._timer = loop.call_later(wait, self._flush)
        return True

    def _flush(self) -> None:
        held, self._held, self._timer = self._held, None, None
        self._done = True
        if held is None:
            return
        deleted, obj = held
        self._run.applied(f"{self._run.perturbation}: delivered only the last held event")
        if deleted:
            self._inner.delete(obj)
        else:
            self._inner.apply(obj)

    def _drop(self) -> None:
        """A new list brings the current state: what was held is not needed any more."""
        if self._timer is not None:
            self._timer.cancel()
        if self._held is not None:
            self._done = True
        self._held = self._timer = None
