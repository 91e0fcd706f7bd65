"""Held events: from the chosen version of an object on, its watch events are held back
until they stop coming, and only the last reaches the store; other objects' events, and
what came before, pass as they are."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeforge._client.errors import ApiError
from kubeforge._runtime.observer import Delivered, Write
from kubeforge._testing.explore import inject
from kubeforge._testing.explore.inject import HeldEvents, Perturbing
from kubeforge._testing.explore.points import Perturbation
from kubeforge._testing.explore.trace import Recorder
from kubeforge._testing.interceptors import InterceptedCall


class Sink:
    """The informer's store and a controller behind it: what reaches it is delivered, as
    the recorder hears of it."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.seen: list[tuple[str, str, str]] = []

    def init(self, scope: str | None) -> None:
        self.seen.append(("init", "", ""))

    def init_page(self, scope: str | None, objects: list[dict[str, Any]]) -> None:
        pass

    def init_done(self, scope: str | None) -> None:
        pass

    def apply(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.seen.append(("apply", meta["name"], meta["resourceVersion"]))
        self.recorder.observe(
            Delivered(
                "c",
                "v1/Pod",
                "MODIFIED",
                meta["namespace"],
                meta["name"],
                meta["resourceVersion"],
                (),
                False,
                obj,
            )
        )

    def delete(self, obj: dict[str, Any]) -> None:
        self.seen.append(("delete", obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))


class Run:
    def __init__(self, perturbation: str) -> None:
        self.perturbation = Perturbation.parse(perturbation)
        self.recorder = Recorder("test-ns")
        self.notes: list[str] = []
        self.held: list[HeldEvents] = []

    def applied(self, what: str) -> None:
        self.notes.append(what)

    def pause(self) -> None:
        raise AssertionError("not asked for")

    async def delete_during_creation(self, kind: str, namespace: str, name: str) -> None:
        raise AssertionError("not asked for")


def pod(name: str, version: int) -> dict[str, Any]:
    meta = {"name": name, "namespace": "test-ns", "resourceVersion": str(version)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


async def test_events_from_the_version_on_are_held_and_coalesced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(inject, "HOLD_SECONDS", 0.05)
    run = Run("coalesce@Pod/w#2")
    sink = Sink(run.recorder)
    held = HeldEvents(sink, run, "v1/Pod")  # type: ignore[arg-type]
    held.apply(pod("w", 10))  # version 1: before the place
    held.apply(pod("other", 11))
    held.apply(pod("w", 12))  # version 2: held from here
    held.apply(pod("other", 13))
    held.apply(pod("w", 14))
    assert sink.seen == [("apply", "w", "10"), ("apply", "other", "11"), ("apply", "other", "13")]
    assert held.holding and run.held == [held]
    await asyncio.sleep(0.2)
    assert not held.holding
    # Only the last of the held ones, once no more came.
    assert sink.seen[-1] == ("apply", "w", "14") and len(sink.seen) == 4
    held.apply(pod("w", 15))  # once delivered, events flow again
    assert sink.seen[-1] == ("apply", "w", "15")
    assert run.notes == [
        "coalesce@Pod/w#2: holding back the events of Pod/w",
        "coalesce@Pod/w#2: delivered only the last held event",
    ]


async def test_a_new_list_drops_what_was_held() -> None:
    run = Run("coalesce@Pod/w#1")
    sink = Sink(run.recorder)
    held = HeldEvents(sink, run, "v1/Pod")  # type: ignore[arg-type]
    held.apply(pod("w", 10))
    held.init(None)  # a re-list brings the current state itself
    await asyncio.sleep(0)
    assert sink.seen == [("init", "", "")]
    held.apply(pod("w", 11))
    assert sink.seen[-1] == ("apply", "w", "11")


class Made:
    """A client that answers writes as the API server would have, telling the recorder."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.calls = 0

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        made = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.calls)}}
        meta = made["metadata"]
        version = meta["resourceVersion"]
        self.recorder.observe(
            Write(
                None,
                "create",
                "v1/Pod",
                meta["namespace"],
                meta["name"],
                version,
                "m",
                201,
                None,
                made,
            )
        )
        return made


async def test_a_write_outside_any_reconcile_is_a_place_too() -> None:
    """A controller written by hand (its own queue and workers on the manager's client)
    makes its writes outside any reconcile: the trace names them for the manager, and an
    `error` at such a place fails exactly that write."""
    run = Run("error@manager:create:Pod/second#1")
    perturbing = Perturbing(run, lambda controller: None)
    client = Made(run.recorder)
    hook = perturbing.interceptors.default
    assert hook is not None

    def call(name: str) -> InterceptedCall:
        obj = pod(name, 0)
        return InterceptedCall("create", "create", "v1/Pod", "test-ns", name, (obj,), {}, client)

    first = await hook(client, call("first"))
    assert first["metadata"]["name"] == "first"
    with pytest.raises(ApiError) as failed:
        await hook(client, call("second"))
    assert failed.value.code == 500
    assert run.notes == [
        f"error@manager:create:Pod/second#1: create Pod/second failed: {failed.value}"
    ]
    # Once done, the retry goes through: the failed write counted as the first.
    assert (await hook(client, call("second")))["metadata"]["name"] == "second"
    points = [s["point"] for s in run.recorder.steps if s["type"] == "write"]
    assert points == ["manager:create:Pod/first#1", "manager:create:Pod/second#2"]
    assert client.calls == 2
