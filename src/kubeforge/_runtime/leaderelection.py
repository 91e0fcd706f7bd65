"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Candidates race to hold one Lease. The holder renews `renewTime` every `retry_period`;
the others retry every `retry_period` (plus up to 120% jitter) and take the Lease over once
it has gone unrenewed for `leaseDurationSeconds`, counting the change in
`leaseTransitions`. Expiry is judged by the local monotonic clock from the moment this
candidate last saw the Lease change, never by comparing the holder's clock with ours.

Every wait and deadline here reads the process's clock (kubeforge.clock): on a virtual clock a
lease expires, and a candidate takes over, when the clock has been advanced past its term.
Every write carries the resourceVersion read, so of two candidates racing only one wins.

A leader that cannot renew within `renew_deadline` has lost: `on_stopped_leading` runs and
`run()` raises LeadershipLost; the process should then stop its work at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import random
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubeforge import clock
from kubeforge._api.machinery.timestamps import now_micro_time
from kubeforge._client.client import Client
from kubeforge._client.errors import NotFound

__all__ = ["JITTER_FACTOR", "LEASE_KIND", "LeaderElector", "LeadershipLost", "default_identity"]

log = logging.getLogger("kubeforge.leaderelection")

LEASE_KIND: Final = "coordination.k8s.io/v1/Lease"
JITTER_FACTOR: Final = 1.2

Callback = Callable[[], Awaitable[None] | None]


class LeadershipLost(Exception):
    """The lease could not be renewed in time: another candidate may lead now."""


def default_identity() -> str:
    """`<hostname>_<uuid>`, unique per process."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass
class _Record:
    """The election state a Lease's spec holds (client-go's LeaderElectionRecord)."""

    holder: str
    duration: int
    acquire_time: str | None
    renew_time: str | None
    transitions: int

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> _Record:
        return cls(
            str(spec.get("holderIdentity") or ""),
            int(spec.get("leaseDurationSeconds") or 0),
            spec.get("acquireTime"),
            spec.get("renewTime"),
            int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }


async def _call(callback: Callable[..., Any] | None, *args: Any) -> None:
    if callback is None:
        return
    try:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("leader election callback %r failed", callback)


class LeaderElector:
    """One candidate for the Lease `namespace/name`; `await run()` takes part in the election."""

    def __init__(
        self,
        client: Client,
        *,
        name: str,
        namespace: str,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        on_started_leading: Callback,
        on_stopped_leading: Callback,
        on_new_leader: Callable[[str], Awaitable[None] | None] | None = None,
        on_leading_changed: Callable[[bool], Awaitable[None] | None] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        if not name or not namespace:
            raise ValueError("leader election needs the Lease's name and namespace")
        if min(lease_duration, renew_deadline, retry_period) <= 0:
            raise ValueError("lease_duration, renew_deadline and retry_period must be positive")
        if lease_duration <= renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError(f"renew_deadline must be greater than retry_period*{JITTER_FACTOR}")
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity if identity is not None else default_identity()
        if not self.identity:
            raise ValueError("leader election needs a non-empty identity")
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self.on_leading_changed = on_leading_changed
        # Kept on the Lease (a shard Lease names its ring so: sharding/labels.py).
        self.labels = dict(labels or {})
        # The Lease stores whole seconds; rounding up never shortens the configured term.
        self._duration_seconds = max(1, math.ceil(lease_duration))
        self._lease: dict[str, Any] | None = None
        self._observed: _Record | None = None
        self._observed_spec: dict[str, Any] | None = None
        self._observed_time = 0.0
        self._reported_leader = ""
        self._leading = False
        self._running = False
        self._stopping = asyncio.Event()
        self._background: set[asyncio.Task[Any]] = set()

    # state ----------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """Whether this candidate currently leads."""
        return self._leading and self._holds()

    @property
    def leader(self) -> str:
        """The holder identity last seen on the Lease ("" when none)."""
        return self._observed.holder if self._observed else ""

    def stop(self) -> None:
        """End `run()` gracefully: it releases the Lease (with release_on_cancel) and returns."""
        self._stopping.set()

    def _holds(self) -> bool:
        return self._observed is not None and self._observed.holder == self.identity

    def _now(self) -> float:
        return clock.monotonic()

    def _set_observed(self, record: _Record) -> None:
        self._observed = record
        self._observed_time = self._now()

    # the election ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Campaign until leading, then lead until stop() or cancellation (releasing the Lease
        when release_on_cancel) or until leadership is lost (raising LeadershipLost)."""
        if self._running:
            raise RuntimeError("this LeaderElector is already running")
        self._running = True
        try:
            if await self._acquire():
                await self._lead()
        finally:
            self._running = False

    async def _acquire(self) -> bool:
        """Retry until the Lease is ours (True) or stop() is called (False)."""
        log.info("attempting to acquire leader lease %s/%s", self.namespace, self.name)
        while not self._stopping.is_set():
            acquired = await self._try_acquire_or_renew()
            self._report_transition()
            if acquired:
                log.info("successfully acquired lease %s/%s", self.namespace, self.name)
                return True
            delay = self.retry_period * (1 + random.random() * JITTER_FACTOR)
            if await self._wait_stop(delay):
                break
        return False

    async def _lead(self) -> None:
        self._leading = True
        await _call(self.on_leading_changed, True)
        work: asyncio.Task[Any] | None = None
        try:
            started = self.on_started_leading()
            if inspect.isawaitable(started):
                work = asyncio.ensure_future(started)
                work.add_done_callback(_log_failure)
        except Exception:
            log.exception("on_started_leading failed")
        lost = False
        try:
            lost = await self._renew()
        finally:
            # Also reached on cancellation. The work stops before the Lease is handed back,
            # so two leaders never work at once.
            self._leading = False
            if work is not None and not work.done():
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await work
            if self.release_on_cancel:
                await self._release()
            await _call(self.on_leading_changed, False)
            await _call(self.on_stopped_leading)
        if lost:
            raise LeadershipLost("leader election lost")

    async def _renew(self) -> bool:
        """Renew until stop() (False) or until a renewal misses its deadline (True)."""
        while True:
            deadline = self._now() + self.renew_deadline
            while True:
                remaining = deadline - self._now()
                renewed = False
                if remaining > 0:
                    try:
                        async with clock.timeout(remaining):
                            renewed = await self._try_acquire_or_renew()
                    except TimeoutError:
                        renewed = False
                self._report_transition()
                if renewed:
                    break
                remaining = deadline - self._now()
                if remaining <= 0:
                    log.info("failed to renew lease %s/%s in time", self.namespace, self.name)
                    return True
                if await self._wait_stop(min(self.retry_period, remaining)):
                    return False
            if await self._wait_stop(self.retry_period):
                return False

    async def _wait_stop(self, delay: float) -> bool:
        """Sleep `delay` seconds; True when stop() was called meanwhile."""
        if self._stopping.is_set():
            return True
        with contextlib.suppress(TimeoutError):
            await clock.wait_for(self._stopping.wait(), delay)
        return self._stopping.is_set()

    async def _try_acquire_or_renew(self) -> bool:
        now = now_micro_time()
        record = _Record(self.identity, self._duration_seconds, now, now, 0)

        # Fast path: a leader whose view is fresh writes straight over the Lease it knows.
        observed = self._observed
        if observed is not None and self._holds() and self._lease_valid():
            record.acquire_time = observed.acquire_time
            record.transitions = observed.transitions
            try:
                await self._update(record)
            except Exception as exc:
                log.debug("optimistic lease renewal failed, reading it again: %s", exc)
            else:
                self._set_observed(record)
                return True

        try:
            lease = await self.client.get(LEASE_KIND, self.name, namespace=self.namespace)
        except NotFound:
            try:
                await self._create(record)
            except Exception as exc:
                log.debug("could not create lease %s/%s: %s", self.namespace, self.name, exc)
                return False
            self._set_observed(record)
            return True
        except Exception as exc:
            log.warning("could not read lease %s/%s: %s", self.namespace, self.name, exc)
            return False

        self._lease = lease
        spec = lease.get("spec") or {}
        current = _Record.from_spec(spec)
        if spec != self._observed_spec:
            # The record changed since last seen: its expiry counts from now, by our clock.
            self._observed_spec = spec
            self._set_observed(current)
        expired = self._observed_time + current.duration < self._now()
        if current.holder and not expired and not self._holds():
            return False
        if self._holds():
            record.acquire_time = current.acquire_time
            record.transitions = current.transitions
        else:
            record.transitions = current.transitions + 1
        try:
            await self._update(record)
        except Exception as exc:
            log.debug("could not update lease %s/%s: %s", self.namespace, self.name, exc)
            return False
        self._set_observed(record)
        return True

    def _lease_valid(self) -> bool:
        duration = self._observed.duration if self._observed else 0
        return self._observed_time + duration > self._now()

    async def _create(self, record: _Record) -> None:
        lease: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        if self.labels:
            lease["metadata"]["labels"] = dict(self.labels)
        created: dict[str, Any] = await self.client.create(lease)
        self._lease = created
        self._observed_spec = created.get("spec")

    async def _update(self, record: _Record) -> None:
        if self._lease is None:
            raise RuntimeError("the lease has not been read yet")
        # The resourceVersion read last goes along: a Lease changed meanwhile is a Conflict.
        lease = {**self._lease, "spec": {**(self._lease.get("spec") or {}), **record.to_spec()}}
        if self.labels:
            metadata = dict(self._lease.get("metadata") or {})
            metadata["labels"] = {**(metadata.get("labels") or {}), **self.labels}
            lease["metadata"] = metadata
        updated: dict[str, Any] = await self.client.update(lease)
        self._lease = updated
        self._observed_spec = updated.get("spec")

    async def _release(self) -> None:
        """Hand the Lease back (empty holder, one-second term) so a successor need not wait."""
        if not self._holds() or self._observed is None:
            return
        now = now_micro_time()
        record = _Record("", 1, now, now, self._observed.transitions)
        try:
            # The machine's time: this bounds a last request on the way out.
            await asyncio.wait_for(self._update(record), self.renew_deadline)
        except Exception as exc:
            log.warning("failed to release lease %s/%s: %s", self.namespace, self.name, exc)
            return
        self._set_observed(record)
        log.info("released lease %s/%s", self.namespace, self.name)

    def _report_transition(self) -> None:
        holder = self.leader
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        if self.on_new_leader is not None:
            task = asyncio.ensure_future(_call(self.on_new_leader, holder))
            self._background.add(task)
            task.add_done_callback(self._background.discard)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the leading work failed", exc_info=task.exception())
