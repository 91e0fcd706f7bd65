"""The reconcile contract: a Request in, a Result (or an exception) out.

Two shapes of reconciler, each async or plain `def`:

- `Reconciler` / `SyncReconciler` receive a `Request` (namespace and name) and read what
  they need; the object may be gone.
- `ObjectReconciler[T]` / `SyncObjectReconciler[T]` receive the object itself, read from the
  cache by the runtime; a request for an object that no longer exists is done without
  calling them (controller-runtime's ObjectReconciler, kube-rs's `reconcile(obj)`). Objects
  being deleted are passed (their `metadata.deletionTimestamp` is set): that is where a
  finalizer's cleanup runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kubeforge._client.errors import NotFound
from kubeforge._runtime.logs import ReconcileLogger, reconcile_logger

if TYPE_CHECKING:
    from kubeforge._client.protocols import ObjectClient, SyncObjectClient

__all__ = [
    "ObjectReconciler",
    "Reconciler",
    "Request",
    "Result",
    "SyncObjectReconciler",
    "SyncReconciler",
    "TerminalError",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """Which object to reconcile: its namespace ("" when cluster-scoped) and name.

    A request says nothing about what happened: reconcile reads the current state.
    """

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class Result:
    """What to do after a successful reconcile.

    `requeue_after`: reconcile again after that many seconds (or a timedelta), with the
    failure backoff reset. `requeue`: reconcile again with rate-limited backoff (kept for
    parity with controller-runtime, which deprecates it; prefer requeue_after). Neither:
    done until something changes. `priority` overrides the requeue's queue priority.
    """

    requeue_after: float | timedelta | None = None
    requeue: bool = False
    priority: int | None = None

    @property
    def delay(self) -> float:
        value = self.requeue_after
        if isinstance(value, timedelta):
            return value.total_seconds()
        return float(value or 0.0)


class TerminalError(Exception):
    """An error retrying cannot fix: logged and counted, never requeued."""


class _Logging:
    @property
    def log(self) -> ReconcileLogger:
        """A logger (named after the reconciler's module) whose records carry the running
        reconcile's controller, object kind, namespace and name, and reconcile id."""
        return reconcile_logger(type(self).__module__)


class Reconciler(_Logging):
    """Subclass and implement `async def reconcile(self, request)`.

    The manager sets `client` before the controller starts: reads come from the shared
    cache, writes go to the API server. It is typed as what every client offers
    (`ObjectClient`); the manager's live reader and cache are `manager.api_reader` and
    `manager.cache`, for a reconciler that needs them.
    """

    client: ObjectClient

    async def reconcile(self, request: Request) -> Result | None:
        raise NotImplementedError


class SyncReconciler(_Logging):
    """Like Reconciler, with a plain `def reconcile`: it runs in a worker thread and its
    `client` is a blocking facade over the same cached client (`SyncObjectClient`)."""

    client: SyncObjectClient

    def reconcile(self, request: Request) -> Result | None:
        raise NotImplementedError


class ObjectReconciler(_Logging, Generic[T]):
    """Subclass and implement `async def reconcile(self, obj)`: `obj` is the object of the
    controller's `for_` kind, as the cache holds it (typed for typed kinds)."""

    client: ObjectClient

    async def reconcile(self, obj: T) -> Result | None:
        raise NotImplementedError


class SyncObjectReconciler(_Logging, Generic[T]):
    """Like ObjectReconciler, with a plain `def reconcile` run in a worker thread."""

    client: SyncObjectClient

    def reconcile(self, obj: T) -> Result | None:
        raise NotImplementedError


class ObjectAdapter(Reconciler):
    """Runs an ObjectReconciler as a Reconciler: reads the object, skips it when gone."""

    def __init__(
        self, inner: ObjectReconciler[Any], kind: Any, *, metadata_only: bool = False
    ) -> None:
        self.inner = inner
        self.kind = kind
        self.metadata_only = metadata_only

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "client":
            self.inner.client = value

    async def reconcile(self, request: Request) -> Result | None:
        namespace = request.namespace or None
        try:
            if self.metadata_only:
                obj: Any = await self.client.get_metadata(
                    self.kind, request.name, namespace=namespace
                )
            else:
                obj = await self.client.get(self.kind, request.name, namespace=namespace)
        except NotFound:
            return None
        return await self.inner.reconcile(obj)


class SyncObjectAdapter(SyncReconciler):
    """Runs a SyncObjectReconciler as a SyncReconciler."""

    def __init__(
        self, inner: SyncObjectReconciler[Any], kind: Any, *, metadata_only: bool = False
    ) -> None:
        self.inner = inner
        self.kind = kind
        self.metadata_only = metadata_only

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "client":
            self.inner.client = value

    def reconcile(self, request: Request) -> Result | None:
        namespace = request.namespace or None
        try:
            if self.metadata_only:
                obj: Any = self.client.get_metadata(self.kind, request.name, namespace=namespace)
            else:
                obj = self.client.get(self.kind, request.name, namespace=namespace)
        except NotFound:
            return None
        return self.inner.reconcile(obj)
