"""A shard's side (virtual time): a drained object is let go without being reconciled, whatever
the controller's predicates, by async and plain `def` reconcilers alike; requests for objects
the shard does not hold do not reach the reconciler; what it creates of an owned kind is
labelled for it."""

from __future__ import annotations

import contextlib
import threading

import pytest

from kubeforge._runtime.manager import Manager
from kubeforge._runtime.predicate import GenerationChanged
from kubeforge._runtime.reconcile import Reconciler, Request, Result, SyncReconciler
from kubeforge._runtime.sharding.labels import drain_label, shard_label
from kubeforge.testing import TestEnv, eventually, metric_sum
from tests.support.sharding import CM, SECRET, Probe, create_configmaps, replica, ring_of

pytestmark = pytest.mark.asyncio(loop_scope="package")


async def labels_of(env: TestEnv, ns: str, name: str, kind: str = CM) -> dict[str, str]:
    found = await env.client.get(kind, name, namespace=ns)
    labels: dict[str, str] = found["metadata"].get("labels") or {}
    return labels


class Recording(SyncReconciler):
    """A plain `def` reconciler (it runs in a worker thread) that notes the resourceVersion
    and labels of the object each call reads, and the threads it ran in."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.threads: set[int] = set()

    def reconcile(self, request: Request) -> Result | None:
        meta = self.client.get(CM, request.name, namespace=request.namespace)["metadata"]
        self.seen.append((meta["resourceVersion"], dict(meta.get("labels") or {})))
        self.threads.add(threading.get_ident())
        return None


class AsyncRecording(Reconciler):
    """The same, as a coroutine."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []

    async def reconcile(self, request: Request) -> Result | None:
        meta = (await self.client.get(CM, request.name, namespace=request.namespace))["metadata"]
        self.seen.append((meta["resourceVersion"], dict(meta.get("labels") or {})))
        return None


@pytest.mark.parametrize("shape", ["async", "sync"])
async def test_a_drained_object_is_let_go_without_a_reconcile_despite_the_predicates(
    env: TestEnv, ns: str, shape: str
) -> None:
    recording: Recording | AsyncRecording = Recording() if shape == "sync" else AsyncRecording()
    ring = f"drain-{shape}"

    def setup(manager: Manager) -> None:
        builder = manager.controller().for_(CM, predicates=[GenerationChanged()])
        builder.named(ring).sharded(ring=ring).complete(recording)

    async with env.run_manager(
        setup, identity="a", namespace=ns, leader_election_namespace=ns
    ) as manager:
        shard = ring_of(manager, ring).shard
        await create_configmaps(env.client, ns, ["obj-0"])
        await eventually(lambda: len(recording.seen) >= 1, timeout=30)
        assert (await labels_of(env, ns, "obj-0"))[shard_label(ring)] == shard

        # What the sharder does to move it off a live shard. A label change does not
        # change the generation: without the drain rule the predicate would drop it.
        await env.client.patch(
            CM, "obj-0", {"metadata": {"labels": {drain_label(ring): "true"}}}, namespace=ns
        )

        async def acknowledged() -> bool:
            return metric_sum(manager, "kubeforge_sharding_drains_acknowledged_total") == 1

        await eventually(acknowledged, timeout=30)

        # Let go, then assigned again by the sharder (the only shard is this one) and,
        # coming back as a new object of the shard's cache, reconciled again: a reconcile
        # read the version the assignment wrote (how many reconciles it took is timing:
        # an event arriving while a request is worked on queues it once more).
        async def reconciled_again() -> bool:
            meta = (await env.client.get(CM, "obj-0", namespace=ns))["metadata"]
            labels = meta.get("labels") or {}
            assigned = drain_label(ring) not in labels and labels.get(shard_label(ring)) == shard
            return assigned and meta["resourceVersion"] in {rv for rv, _ in recording.seen}

        await eventually(reconciled_again, timeout=30)
        # No reconcile of the user's ran while the object carried the drain label.
        assert not [labels for _, labels in recording.seen if drain_label(ring) in labels]
        if isinstance(recording, Recording):
            assert threading.get_ident() not in recording.threads


async def test_requests_for_objects_the_shard_does_not_hold_are_dropped(
    env: TestEnv, ns: str
) -> None:
    probe = Probe()
    async with replica(env, probe, "a", ns, "hold") as manager:
        await create_configmaps(env.client, ns, ["obj-0"])
        await eventually(lambda: probe.runs["a"] == 1, timeout=30)
        controller = manager.controllers["hold"]
        other = "obj-elsewhere"
        await env.client.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": other,
                    "namespace": ns,
                    "labels": {shard_label("hold"): "another-shard"},
                },
            }
        )
        assert manager.cache.list(CM, namespace=ns)[0]["metadata"]["name"] == "obj-0"
        # Queued by hand, as a requeue or a map function might: not reconciled.
        for name in (other, "no-such-object"):
            controller.queue.add(Request(ns, name))
        await env.clock.settle()
        assert probe.runs["a"] == 1 and set(probe.last) == {"obj-0"}


async def test_what_a_shard_creates_of_an_owned_kind_is_labelled_for_it_at_once(
    env: TestEnv, ns: str
) -> None:
    probe = Probe()
    async with contextlib.AsyncExitStack() as stack:
        manager = await stack.enter_async_context(replica(env, probe, "a", ns, "made", owns=True))
        shard = ring_of(manager, "made").shard
        await create_configmaps(env.client, ns, ["obj-0"])
        await eventually(lambda: probe.owners.get("obj-0") == "a", timeout=30)
        assert (await labels_of(env, ns, "obj-0", SECRET)) == {shard_label("made"): shard}
        # In the shard's cache straight from the create's answer.
        assert manager.cache.get(SECRET, "obj-0", namespace=ns)
        leader = ring_of(manager, "made")
        assert leader.leading
        assert metric_sum(manager, "kubeforge_sharding_assignments_total", kind="Secret") == 0
