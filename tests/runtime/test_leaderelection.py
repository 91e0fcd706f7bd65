"""Leader election on a Lease against the embedded server, in real (short) time."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubeforge._client.client import Client
from kubeforge._client.config import load_kubeconfig
from kubeforge._runtime.leaderelection import (
    JITTER_FACTOR,
    LEASE_KIND,
    LeaderElector,
    LeadershipLost,
    default_identity,
)
from kubeforge.apiserver import APIServer
from kubeforge.testing import eventually

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")

LEASE_DURATION = 1.5  # stored as 2 whole seconds
LEASE_SECONDS = 2
RENEW_DEADLINE = 1.0
RETRY_PERIOD = 0.2
# The longest a candidate sleeps between attempts; and room for slow requests.
MAX_RETRY = RETRY_PERIOD * (1 + JITTER_FACTOR)
SLACK = 0.4


@pytest.fixture
def kubeconfig_path(server: APIServer, tmp_path: Path) -> Path:
    return server.write_kubeconfig(tmp_path / "kc")


@pytest.fixture
async def api(kubeconfig_path: Path) -> AsyncIterator[Client]:
    async with Client(load_kubeconfig(kubeconfig_path)) as kube:
        yield kube


@dataclass
class Candidate:
    """One process taking part: its own client, elector and run() task."""

    identity: str
    elector: LeaderElector
    client: Client
    log: list[str] = field(default_factory=list)
    leaders: list[str] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run())

    async def crash(self) -> None:
        """Stop taking part without a word to the others."""
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


@pytest.fixture
async def candidates(kubeconfig_path: Path) -> AsyncIterator[Callable[..., Candidate]]:
    made: list[Candidate] = []

    def make(identity: str, **options: Any) -> Candidate:
        client = Client(load_kubeconfig(kubeconfig_path))
        log: list[str] = []
        leaders: list[str] = []
        settings: dict[str, Any] = {
            "name": "operator-lock",
            "namespace": "default",
            "identity": identity,
            "lease_duration": LEASE_DURATION,
            "renew_deadline": RENEW_DEADLINE,
            "retry_period": RETRY_PERIOD,
            "release_on_cancel": False,
            "on_started_leading": lambda: log.append("started"),
            "on_stopped_leading": lambda: log.append("stopped"),
            "on_new_leader": leaders.append,
            "on_leading_changed": lambda leading: log.append(f"leading={leading}"),
        }
        settings.update(options)
        candidate = Candidate(identity, LeaderElector(client, **settings), client, log, leaders)
        made.append(candidate)
        return candidate

    yield make
    for candidate in made:
        if candidate.task is not None and not candidate.task.done():
            await candidate.crash()
        await candidate.client.close()


async def lease(api: Client) -> dict[str, Any]:
    found: dict[str, Any] = await api.get(LEASE_KIND, "operator-lock", namespace="default")
    return found


async def wait_leader(*candidates: Candidate, timeout: float = 10.0) -> Candidate:
    async def one_leads() -> bool:
        return any(c.elector.is_leader for c in candidates)

    await eventually(one_leads, timeout=timeout)
    return next(c for c in candidates if c.elector.is_leader)


async def test_one_of_two_leads_and_the_other_takes_over_after_a_crash(
    api: Client, candidates: Callable[..., Candidate]
) -> None:
    a, b = candidates("a"), candidates("b")
    a.start()
    b.start()
    leader = await wait_leader(a, b)
    follower = b if leader is a else a

    spec = (await lease(api))["spec"]
    assert spec["holderIdentity"] == leader.identity
    assert spec["leaseDurationSeconds"] == LEASE_SECONDS
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["acquireTime"]) and MICRO_TIME.match(spec["renewTime"])
    assert leader.log == ["leading=True", "started"]

    # The leader keeps renewing while the follower keeps waiting.
    first_renewal: str = spec["renewTime"]

    async def renewed() -> bool:
        renew_time: str = (await lease(api))["spec"]["renewTime"]
        return renew_time != first_renewal

    async def follower_sees_leader() -> bool:
        return follower.leaders == [leader.identity]

    await eventually(renewed, timeout=RENEW_DEADLINE)
    await eventually(follower_sees_leader, timeout=2 * MAX_RETRY + 1)
    assert leader.elector.is_leader and not follower.elector.is_leader
    assert follower.elector.leader == leader.identity
    assert follower.log == []

    crashed_at = time.monotonic()
    await leader.crash()
    assert (await lease(api))["spec"]["holderIdentity"] == leader.identity  # not released

    await wait_leader(follower, timeout=LEASE_SECONDS + 2 * MAX_RETRY + 2)
    elapsed = time.monotonic() - crashed_at
    # Not before the lease ran out (its last renewal was at most a retry period earlier);
    # and soon after: the follower saw that renewal within one retry, and tries again
    # within one retry of the expiry.
    assert LEASE_SECONDS - RETRY_PERIOD - 0.15 <= elapsed <= LEASE_SECONDS + 2 * MAX_RETRY + SLACK
    spec = (await lease(api))["spec"]
    assert spec["holderIdentity"] == follower.identity
    assert spec["leaseTransitions"] == 1
    assert follower.log == ["leading=True", "started"]
    assert follower.leaders == [leader.identity, follower.identity]


async def test_a_released_lease_is_taken_over_at_once(
    api: Client, candidates: Callable[..., Candidate]
) -> None:
    a = candidates("a", release_on_cancel=True)
    a.start()
    await wait_leader(a)
    b = candidates("b")
    b.start()

    async def b_watching() -> bool:
        return b.leaders == ["a"]

    await eventually(b_watching)
    released_at = time.monotonic()
    a.elector.stop()
    assert a.task is not None
    await a.task  # stop() ends run() normally
    assert a.log == ["leading=True", "started", "leading=False", "stopped"]
    assert not a.elector.is_leader

    await wait_leader(b, timeout=MAX_RETRY + 2)
    assert time.monotonic() - released_at < MAX_RETRY + SLACK
    spec = (await lease(api))["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert spec["leaseDurationSeconds"] == LEASE_SECONDS
    assert b.leaders == ["a", "b"]


async def test_cancelling_releases_the_lease(
    api: Client, candidates: Callable[..., Candidate]
) -> None:
    a = candidates("a", release_on_cancel=True)
    a.start()
    await wait_leader(a)
    await a.crash()  # a cancellation, with release_on_cancel
    spec = (await lease(api))["spec"]
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert a.log[-2:] == ["leading=False", "stopped"]

    b = candidates("b")
    b.start()
    await wait_leader(b, timeout=MAX_RETRY + 2)
    assert (await lease(api))["spec"]["leaseTransitions"] == 1


async def test_the_lease_carries_the_candidates_labels_through_renewals(
    api: Client, candidates: Callable[..., Candidate]
) -> None:
    # A shard Lease names its ring so (sharding): kept when someone edits the labels.
    a = candidates("a", labels={"ring": "widgets"})
    a.start()
    await wait_leader(a)
    held = await lease(api)
    assert held["metadata"]["labels"] == {"ring": "widgets"}
    held["metadata"]["labels"] = {"ring": "changed", "state": "ready"}
    await api.update(held)

    async def restored() -> bool:
        labels = (await lease(api))["metadata"]["labels"]
        return bool(labels == {"ring": "widgets", "state": "ready"})

    await eventually(restored, timeout=MAX_RETRY + 2)
    assert a.elector.is_leader


async def test_stopping_a_waiting_candidate_ends_its_run(
    api: Client, candidates: Callable[..., Candidate]
) -> None:
    a, b = candidates("a"), candidates("b")
    a.start()
    await wait_leader(a)
    b.start()

    async def b_watching() -> bool:
        return b.leaders == ["a"]

    await eventually(b_watching)
    b.elector.stop()
    assert b.task is not None
    await asyncio.wait_for(b.task, MAX_RETRY + 2)
    assert b.log == []
    assert a.elector.is_leader
    assert (await lease(api))["spec"]["holderIdentity"] == "a"


async def test_a_leader_that_cannot_renew_loses_leadership(
    api: Client, candidates: Callable[..., Candidate]
) -> None:
    work_cancelled = asyncio.Event()

    async def lead() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            work_cancelled.set()
            raise

    a = candidates("a", on_started_leading=lead)
    a.start()
    await wait_leader(a)

    # Someone else takes the lease by force, with a fresh renewal.
    current = await lease(api)
    current["spec"]["holderIdentity"] = "usurper"
    current["spec"]["renewTime"] = current["spec"]["acquireTime"]
    overwritten_at = time.monotonic()
    await api.update(current)

    assert a.task is not None
    with pytest.raises(LeadershipLost, match="leader election lost"):
        await asyncio.wait_for(a.task, RETRY_PERIOD + RENEW_DEADLINE + 2)
    # Renewals fail from the first attempt after the overwrite; the deadline then runs out.
    assert time.monotonic() - overwritten_at <= RETRY_PERIOD + RENEW_DEADLINE + SLACK
    assert work_cancelled.is_set()
    assert a.log == ["leading=True", "leading=False", "stopped"]
    assert not a.elector.is_leader
    assert a.elector.leader == "usurper"
    assert (await lease(api))["spec"]["holderIdentity"] == "usurper"


async def test_an_expired_foreign_lease_is_taken_over_and_counted(
    api: Client, candidates: Callable[..., Candidate]
) -> None:
    await api.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "operator-lock", "namespace": "default"},
            "spec": {
                "holderIdentity": "gone",
                "leaseDurationSeconds": 1,
                "renewTime": "2020-01-01T00:00:00.000000Z",
                "leaseTransitions": 4,
            },
        }
    )
    a = candidates("a")
    started = time.monotonic()
    a.start()
    await wait_leader(a, timeout=1 + MAX_RETRY + 2)
    # The holder's clock is not trusted: the lease counts as live for its full term from
    # when this candidate first saw it.
    assert time.monotonic() - started >= 1.0
    spec = (await lease(api))["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseTransitions"] == 5
    assert a.leaders == ["gone", "a"]


def test_settings_are_checked() -> None:
    def make(**options: Any) -> LeaderElector:
        settings: dict[str, Any] = {
            "name": "x",
            "namespace": "default",
            "on_started_leading": lambda: None,
            "on_stopped_leading": lambda: None,
            **options,
        }
        return LeaderElector(None, **settings)  # type: ignore[arg-type]

    with pytest.raises(ValueError, match="greater than renew_deadline"):
        make(lease_duration=5, renew_deadline=5)
    with pytest.raises(ValueError, match="retry_period"):
        make(renew_deadline=2.4, retry_period=2)
    with pytest.raises(ValueError, match="positive"):
        make(retry_period=0)
    with pytest.raises(ValueError, match="identity"):
        make(identity="")
    elector = make()
    assert (elector.lease_duration, elector.renew_deadline, elector.retry_period) == (15, 10, 2)
    assert re.fullmatch(r".+_[0-9a-f-]{36}", elector.identity)
    assert default_identity() != default_identity()
