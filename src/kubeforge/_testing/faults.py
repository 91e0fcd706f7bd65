"""Injecting failures into a controller, to test that errors are retried and survived."""

from __future__ import annotations

from kubeforge import clock
from kubeforge._client.protocols import ObjectClient
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["FlakyReconciler", "InjectedFailure"]


class InjectedFailure(RuntimeError):
    """The error a FlakyReconciler raises on purpose."""


class FlakyReconciler(Reconciler):
    """Wraps a reconciler: the first `failures` calls raise InjectedFailure, later calls
    reconcile for real. `calls` holds the time of every call (the process's monotonic
    clock: on a virtual clock the gaps are exactly the retry delays)."""

    def __init__(self, inner: Reconciler, failures: int) -> None:
        self.inner = inner
        self.failures = failures
        self.calls: list[float] = []

    @property
    def client(self) -> ObjectClient:
        return self.inner.client

    @client.setter
    def client(self, value: ObjectClient) -> None:
        # The manager hands its client to the reconciler it registers: pass it on.
        self.inner.client = value

    async def reconcile(self, request: Request) -> Result | None:
        self.calls.append(clock.monotonic())
        if len(self.calls) <= self.failures:
            raise InjectedFailure(f"injected failure {len(self.calls)} of {self.failures}")
        return await self.inner.reconcile(request)

    def gaps(self) -> list[float]:
        """Seconds between consecutive calls: the retry delays while failing."""
        return [later - earlier for earlier, later in zip(self.calls, self.calls[1:], strict=False)]
