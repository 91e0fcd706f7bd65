"""How a perturbation is done inside a run (points.py says what each one is).

The managers a run starts give their reconcilers a `PerturbingClient` in front of the cached
client, which fails a chosen write (`error`), stops the manager after one (`crash`: the
reconcile gets `Crashed`, every later call of that manager too, and the run starts another
manager), deletes the reconciled object after one (`delete`), or serves an older version of
an object from the cache (`stale`). `HeldEvents` sits between an informer's watchers and its
store and holds back the events of one object (`coalesce`).

Everything is keyed by the names the run's recorder gives (trace.py), so a place found in
one run is found in the next.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from kubeforge._api.meta import gvk_of
from kubeforge._client.errors import ApiError, NotFound, error_from_status
from kubeforge._runtime.cache import kind_key
from kubeforge._runtime.cached_client import CachedClient
from kubeforge._runtime.logs import ReconcileContext, current_reconcile
from kubeforge._runtime.watcher import EventSink
from kubeforge._testing.explore.points import Perturbation
from kubeforge._testing.explore.trace import (
    Recorder,
    Step,
    may_be_stale,
    short_kind,
    write_key,
)

__all__ = ["Crashed", "HeldEvents", "Perturber", "PerturbingClient"]

log = logging.getLogger("kubeforge.testing.explore")

# The client's calls that write, and how the trace names each (the client's call names).
_WRITES_OF_OBJECTS = {
    "create": "create",
    "update": "update",
    "update_status": "update_status",
    "apply": "apply",
    "apply_status": "apply_status",
    "delete_object": "delete",
}
_WRITES_BY_NAME = {
    "patch": "patch",
    "patch_status": "patch_status",
    "delete": "delete",
    "scale": "scale",
}
_READS = frozenset({"get", "list", "get_metadata", "list_metadata"})

HOLD_SECONDS = 2.5
"""How long held events wait for another before the last of them is delivered."""
HOLD_AT_MOST = 8.0


class Crashed(Exception):
    """The manager crashed (a perturbation): its reconciles' calls fail from then on."""


class Perturber(Protocol):
    """What the perturbing client needs of the run it belongs to (harness.py)."""

    @property
    def perturbation(self) -> Perturbation | None: ...
    @property
    def recorder(self) -> Recorder: ...
    def applied(self, what: str) -> None: ...
    def crash(self, incarnation: int) -> None: ...
    async def delete_during_creation(self, kind: str, namespace: str, name: str) -> None: ...


def object_kind(obj: Any) -> str:
    """An object's kind as the cache keys it (`group/version/Kind`)."""
    if isinstance(obj, Mapping):
        return str(gvk_of(obj))
    return kind_key(type(obj))


def _meta(obj: Any) -> tuple[str, str, str]:
    """(namespace, name, generateName) of a dict or typed object."""
    if isinstance(obj, Mapping):
        meta = obj.get("metadata") or {}
        return (
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(meta.get("generateName") or ""),
        )
    meta = getattr(obj, "metadata", None)
    return (
        str(getattr(meta, "namespace", None) or ""),
        str(getattr(meta, "name", None) or ""),
        str(getattr(meta, "generate_name", None) or ""),
    )


def _version(obj: Any) -> str:
    if isinstance(obj, Mapping):
        return str((obj.get("metadata") or {}).get("resourceVersion") or "")
    return str(getattr(getattr(obj, "metadata", None), "resource_version", None) or "")


def injected_error(verb: str, what: str) -> ApiError:
    """The error a failed write gets: Conflict for an update, 500 for the rest."""
    code = 409 if verb.startswith("update") else 500
    reason = "Conflict" if code == 409 else "InternalError"
    message = f"{verb} {what}: injected by exploration ({reason})"
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return error_from_status(code, status)


class PerturbingClient:
    """A manager's cached client with the run's perturbation applied to its reconcilers'
    calls. Anything else is the cached client's."""

    def __init__(
        self,
        inner: CachedClient,
        run: Perturber,
        incarnation: int,
        for_kinds: Callable[[str], str | None],
    ) -> None:
        self._inner = inner
        self._run = run
        self._incarnation = incarnation
        self._for_kinds = for_kinds
        self.dead = False
        self._done = False
        # The reconcile that is served stale reads, once one is.
        self._stale_reconcile: str | None = None

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name in _READS:
            return self._reader(name, attribute)
        if name in _WRITES_OF_OBJECTS:
            return self._object_writer(_WRITES_OF_OBJECTS[name], attribute)
        if name in _WRITES_BY_NAME:
            return self._name_writer(_WRITES_BY_NAME[name], attribute)
        if name in ("delete_all_of", "create_subresource"):
            return self._guarded(attribute)
        return attribute

    # writes ---------------------------------------------------------------------------------

    def _object_writer(self, verb: str, call: Callable[..., Awaitable[Any]]) -> Any:
        async def write(obj: Any, *args: Any, **options: Any) -> Any:
            namespace, name, prefix = _meta(obj)
            namespace = str(options.get("namespace") or namespace)
            shown = f"{prefix}*" if not name and prefix else name
            return await self._write(
                verb, object_kind(obj), namespace, shown, call, obj, args, options
            )

        return write

    def _name_writer(self, verb: str, call: Callable[..., Awaitable[Any]]) -> Any:
        async def write(kind: Any, name: str, *args: Any, **options: Any) -> Any:
            namespace = str(options.get("namespace") or "")
            return await self._write(
                verb, kind_key(kind), namespace, name, call, kind, (name, *args), options
            )

        return write

    def _guarded(self, call: Callable[..., Awaitable[Any]]) -> Any:
        async def write(*args: Any, **options: Any) -> Any:
            self._check_alive()
            return await call(*args, **options)

        return write

    def _check_alive(self) -> None:
        if self.dead:
            raise Crashed(f"manager {self._incarnation} crashed")

    async def _write(
        self,
        verb: str,
        kind: str,
        namespace: str,
        name: str,
        call: Callable[..., Awaitable[Any]],
        first: Any,
        args: tuple[Any, ...],
        options: dict[str, Any],
    ) -> Any:
        self._check_alive()
        wanted = self._run.perturbation
        context = current_reconcile()
        if (
            wanted is None
            or self._done
            or context is None
            or wanted.action not in ("crash", "error", "delete")
        ):
            return await call(first, *args, **options)
        recorder = self._run.recorder
        shown = f"{short_kind(kind)}/{recorder.name_of(namespace, name)}"
        key = write_key(context.controller, verb, shown)
        if wanted.action == "error":
            if f"{key}#{recorder.writes[key] + 1}" != wanted.point:
                return await call(first, *args, **options)
            self._done = True
            error = injected_error(verb, shown)
            self._run.applied(f"{wanted}: {verb} {shown} answered {error.code}")
            recorder.writes[key] += 1
            raise error
        hit: list[Step] = []

        def listen(step: Step) -> None:
            if (
                step.get("type") == "write"
                and step.get("point") == wanted.point
                and not step.get("error")
            ):
                hit.append(step)

        recorder.listeners.append(listen)
        try:
            result = await call(first, *args, **options)
        finally:
            recorder.listeners.remove(listen)
        if not hit or self._done:
            return result
        self._done = True
        if wanted.action == "crash":
            self._run.applied(f"{wanted}: the manager crashed after {hit[0]['point']}")
            self.dead = True
            self._run.crash(self._incarnation)
            raise Crashed(f"manager {self._incarnation} crashed after {hit[0]['point']}")
        await self._delete_reconciled(context)
        return result

    async def _delete_reconciled(self, context: ReconcileContext) -> None:
        kind = self._for_kinds(context.controller)
        if kind is None:
            return
        self._run.applied(
            f"{self._run.perturbation}: deleted {short_kind(kind)}/{context.name} being reconciled"
        )
        await self._run.delete_during_creation(kind, context.namespace, context.name)

    # reads ----------------------------------------------------------------------------------

    def _reader(self, verb: str, call: Callable[..., Awaitable[Any]]) -> Any:
        async def read(*args: Any, **options: Any) -> Any:
            self._check_alive()
            wanted = self._run.perturbation
            if wanted is None or wanted.action != "stale":
                return await call(*args, **options)
            context = current_reconcile()
            if context is None or context.controller != wanted.controller:
                return await call(*args, **options)
            kind = short_kind(kind_key(args[0]))
            if kind != wanted.kind:
                return await call(*args, **options)
            if verb.startswith("get"):
                return await self._stale_get(context, kind, call, args, options)
            result = await call(*args, **options)
            kept = []
            for item in result:
                stale = self._stale_version(context, kind, item)
                if stale is None:
                    kept.append(item)
                elif stale[0]:
                    kept.append(self._as(item, stale[1]))
            result[:] = kept
            return result

        return read

    async def _stale_get(
        self,
        context: ReconcileContext,
        kind: str,
        call: Callable[..., Awaitable[Any]],
        args: tuple[Any, ...],
        options: dict[str, Any],
    ) -> Any:
        found = await call(*args, **options)
        stale = self._stale_version(context, kind, found)
        if stale is None:
            return found
        exists, obj = stale
        if not exists:
            raise NotFound(
                {
                    "kind": "Status",
                    "status": "Failure",
                    "reason": "NotFound",
                    "message": f'{kind.lower()} "{args[1]}" not found',
                    "code": 404,
                },
                404,
            )
        return self._as(found, obj)

    def _stale_version(
        self, context: ReconcileContext, kind: str, item: Any
    ) -> tuple[bool, Mapping[str, Any] | None] | None:
        """The older version to serve in place of `item`, if this read is the one."""
        wanted = self._run.perturbation
        assert wanted is not None
        recorder = self._run.recorder
        namespace, name, _ = _meta(item)
        if f"{kind}/{recorder.name_of(namespace, name)}" != wanted.object:
            return None
        if self._stale_reconcile not in (None, context.reconcile_id):
            return None
        if context.name == name and context.kind == kind:
            return None  # the reconciled object itself is as new as the event that queued it
        versions = recorder.versions.get((kind, namespace, name))
        if versions is None or versions.ordinal(_version(item)) != wanted.number:
            return None
        if not may_be_stale(
            recorder.reconciles.get(context.reconcile_id), wanted.object, wanted.number
        ):
            return None
        if self._stale_reconcile is None:
            self._stale_reconcile = context.reconcile_id
            self._run.applied(f"{wanted}: {context.controller} read the version before")
        return versions.before(_version(item))

    @staticmethod
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
        self._timer: asyncio.TimerHandle | None = None
        self._holding_since = 0.0
        self._done = False

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
        namespace, name, _ = _meta(obj)
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
