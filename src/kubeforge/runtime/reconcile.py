"""The reconcile contract: a Request in, a Result (or an exception) out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubeforge.runtime.cached_client import CachedClient, SyncClient

__all__ = ["Reconciler", "Request", "Result", "SyncReconciler", "TerminalError"]


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


class Reconciler:
    """Subclass and implement `async def reconcile(self, request)`.

    The manager sets `client` before the controller starts: reads come from the shared
    cache, writes go to the API server.
    """

    client: CachedClient

    async def reconcile(self, request: Request) -> Result | None:
        raise NotImplementedError


class SyncReconciler:
    """Like Reconciler, with a plain `def reconcile`: it runs in a worker thread and its
    `client` is a blocking facade over the same cached client."""

    client: SyncClient

    def reconcile(self, request: Request) -> Result | None:
        raise NotImplementedError
