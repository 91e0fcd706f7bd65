"""A controller across clusters: owned objects and mapped kinds queue requests in their own
cluster, owners' scope learnt from each cluster, reconcile_all over every cluster, and
requests of clusters not engaged dropped without a reconcile."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import kubeforge
from kubeforge.multicluster import (
    ClusterRequest,
    current_cluster,
)
from kubeforge.source import Channel
from kubeforge.testing import eventually
from tests.support.fleet import CONFIGMAP, configmap, connected, dev_clusters, fleet_on, running
from tests.support.handlers import QueueAfter

NAMESPACE = "v1/Namespace"


class Recorder(kubeforge.Reconciler):
    def __init__(self) -> None:
        self.seen: list[ClusterRequest] = []

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        assert isinstance(request, ClusterRequest)
        self.seen.append(request)
        return None


def owned_by(namespace: dict[str, Any], name: str) -> dict[str, Any]:
    cm = configmap(name)
    kubeforge.set_controller_reference(namespace, cm)
    return cm


async def test_owned_objects_queue_their_owner_in_their_own_cluster() -> None:
    async with dev_clusters("host", "east", "west") as envs:
        for name in ("east", "west"):
            client = envs[name].client
            team = await client.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
            )
            await client.create(owned_by(team, "settings"))
        manager, fleet = fleet_on(envs, "east", "west")
        recorder = Recorder()
        fleet.controller().for_(NAMESPACE).owns(CONFIGMAP).complete(recorder)
        async with running(manager):
            await eventually(lambda: connected(fleet, "east", "west"))
            await eventually(
                lambda: len({r.cluster for r in recorder.seen if r.name == "team"}) == 2
            )
            recorder.seen.clear()
            settings = await envs["west"].client.get(CONFIGMAP, "settings", namespace="default")
            settings["data"] = {"changed": "yes"}
            await envs["west"].client.update(settings)
            # The owner is cluster-scoped there: its request has no namespace.
            await eventually(lambda: ClusterRequest("", "team", "west") in recorder.seen)
            assert all(r.cluster == "west" for r in recorder.seen)


async def test_map_functions_run_for_their_cluster_and_reconcile_all_spans_clusters() -> None:
    async with dev_clusters("host", "east", "west") as envs:
        for name in ("east", "west"):
            await envs[name].client.create(configmap("app"))
        manager, fleet = fleet_on(envs, "east", "west")
        mapped: list[tuple[str, str]] = []

        def to_app(secret: dict[str, Any]) -> list[tuple[str, str]]:
            mapped.append((current_cluster(), secret["metadata"]["name"]))
            return [("default", "app")]

        recorder = Recorder()
        channel = Channel()
        controller = (
            fleet.controller()
            .for_(CONFIGMAP)
            .watches("v1/Secret", to_app)
            .watches_source(channel)
            .complete(recorder)
        )
        async with running(manager):
            await eventually(lambda: connected(fleet, "east", "west"))
            await eventually(lambda: len(recorder.seen) >= 2)
            recorder.seen.clear()
            await envs["east"].client.create(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "s", "namespace": "default"},
                }
            )
            await eventually(lambda: ClusterRequest("default", "app", "east") in recorder.seen)
            assert ("east", "s") in mapped
            assert all(r.cluster == "east" for r in recorder.seen)

            recorder.seen.clear()
            assert controller.reconcile_all() == 2
            await eventually(
                lambda: (
                    {str(r) for r in recorder.seen}
                    >= {"cluster://east/default/app", "cluster://west/default/app"}
                )
            )

            # Requests from outside: reconciled when they name an engaged cluster, dropped
            # (without a reconcile) when they name another.
            recorder.seen.clear()
            channel.send(ClusterRequest("default", "nowhere", "north"))
            channel.send(ClusterRequest("default", "elsewhere", "west"))
            await eventually(
                lambda: ClusterRequest("default", "elsewhere", "west") in recorder.seen
            )
            await eventually(lambda: len(controller.queue) == 0)
            assert [r for r in recorder.seen if r.cluster == "north"] == []


class Logging(kubeforge.Reconciler):
    def __init__(self) -> None:
        self.seen: list[ClusterRequest] = []

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        assert isinstance(request, ClusterRequest)
        self.seen.append(request)
        self.log.info("reconciled %s", request.name)
        return None


async def test_delayed_requests_keep_their_cluster_and_logs_name_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with dev_clusters("host", "east") as envs:
        manager, fleet = fleet_on(envs, "east")
        reconciler = Logging()
        fleet.controller().for_(CONFIGMAP).watches(
            "v1/Secret", QueueAfter(lambda _secret: kubeforge.Request("default", "app"))
        ).complete(reconciler)
        caplog.set_level(logging.INFO)
        async with running(manager):
            await eventually(lambda: connected(fleet, "east"))
            reconciler.seen.clear()
            secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
            await envs["east"].client.create(secret)
            await eventually(lambda: ClusterRequest("default", "app", "east") in reconciler.seen)
        records = [r for r in caplog.records if r.getMessage() == "reconciled app"]
        assert records and all(getattr(r, "cluster", None) == "east" for r in records)
        assert all(getattr(r, "object_name", None) == "app" for r in records)
