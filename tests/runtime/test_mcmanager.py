"""The multi-cluster manager: one manager reconciling a kind across several development
clusters, each with its own cache and client; clusters engaged and disengaged while it
runs; a cluster that stops answering leaves the others alone."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

import kubeforge
from kubeforge import Manager
from kubeforge.multicluster import (
    ClusterNotFound,
    ClusterRequest,
    KubeconfigProvider,
    MultiClusterManager,
    current_cluster,
)
from kubeforge.testing import TestEnv, eventually, metric_sum
from tests.support.fleet import (
    CONFIGMAP,
    CopyReconciler,
    configmap,
    connected,
    dev_clusters,
    fleet_on,
    has_copy,
    running,
)


async def test_one_manager_reconciles_a_kind_in_every_cluster() -> None:
    async with dev_clusters("host", "east", "west") as envs:
        for name in ("east", "west"):
            await envs[name].client.create(configmap("app", {"origin": name}))
        manager = Manager(envs["host"].config)
        provider = KubeconfigProvider(
            clusters={"east": envs["east"].config, "west": envs["west"].config}
        )
        fleet = MultiClusterManager(manager, provider)
        copier = CopyReconciler()
        fleet.controller().for_(CONFIGMAP).complete(copier)
        async with running(manager):
            for name in ("east", "west"):
                client = envs[name].client
                data = await eventually(lambda c=client: has_copy(c, "app"))
                # Read from the request's own cluster (origin) and written back there.
                assert data == {"cluster": name, "origin": name}
            # Each cluster's own cache: what is new in one is reconciled there alone.
            await envs["west"].client.create(configmap("late", {"origin": "west"}))
            assert await eventually(lambda: has_copy(envs["west"].client, "late")) == {
                "cluster": "west",
                "origin": "west",
            }
            assert await has_copy(envs["east"].client, "late") is None
            assert await has_copy(envs["host"].client, "app") is None
            assert sorted(map(str, copier.seen)) == [
                "cluster://east/default/app",
                "cluster://west/default/app",
                "cluster://west/default/late",
            ]
            assert fleet.clusters == ["east", "west"]
            assert provider.get("east") is fleet.get_cluster("east")
            # Each cluster's requests are counted by the manager, labelled by its host.
            for name in ("east", "west"):
                host = envs[name].config.server.split("://")[1]
                assert metric_sum(manager, "rest_client_requests_total", host=host) > 0


class ObjectCopier(kubeforge.ObjectReconciler[dict[str, Any]]):
    """An object reconciler: it is given the object, read from the request's cluster."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def reconcile(self, obj: dict[str, Any]) -> kubeforge.Result | None:
        self.seen.append((current_cluster(), obj["metadata"]["name"]))
        return None


class SyncCopier(kubeforge.SyncReconciler):
    """A plain `def` reconciler: its blocking client goes to the request's cluster too."""

    def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        assert isinstance(request, ClusterRequest)
        if request.name.endswith("-sync"):
            return None
        copy = configmap(f"{request.name}-sync", {"cluster": current_cluster()})
        with contextlib.suppress(kubeforge.AlreadyExists):
            self.client.create(copy)
        return None


async def test_object_and_plain_def_reconcilers_work_in_the_requests_cluster() -> None:
    async with dev_clusters("host", "east", "west") as envs:
        for name in ("east", "west"):
            await envs[name].client.create(configmap("app"))
        manager, fleet = fleet_on(envs, "east", "west")
        objects = ObjectCopier()
        fleet.controller().for_(CONFIGMAP).named("objects").complete(objects)
        fleet.controller().for_(CONFIGMAP).named("sync").complete(SyncCopier())
        async with running(manager):
            for name in ("east", "west"):
                client = envs[name].client

                async def copied(c: kubeforge.Client = client) -> Any:
                    try:
                        found = await c.get(CONFIGMAP, "app-sync", namespace="default")
                    except kubeforge.NotFound:
                        return None
                    return found["data"]

                assert await eventually(copied) == {"cluster": name}
            await eventually(lambda: {("east", "app"), ("west", "app")} <= set(objects.seen))


async def test_clusters_engaged_and_disengaged_while_the_manager_runs() -> None:
    async with dev_clusters("host", "east", "west", "north") as envs:
        for name in ("east", "west", "north"):
            await envs[name].client.create(configmap("app"))
        manager = Manager(envs["host"].config)
        provider = KubeconfigProvider(clusters={"east": envs["east"].config})
        fleet = MultiClusterManager(manager, provider)
        copier = CopyReconciler()
        # One worker: while it holds a request, the others wait in the queue.
        controller = (
            fleet.controller()
            .for_(CONFIGMAP)
            .with_options(max_concurrent_reconciles=1)
            .complete(copier)
        )
        async with running(manager):
            await eventually(lambda: has_copy(envs["east"].client, "app"))
            # Added at run time: its objects are reconciled.
            await provider.add("west", envs["west"].config)
            await eventually(lambda: has_copy(envs["west"].client, "app"))
            # Removed at run time: its informers stop and its queued requests are dropped.
            west = fleet.get_cluster("west")
            held: asyncio.Event = asyncio.Event()
            release: asyncio.Event = asyncio.Event()

            async def hold(request: ClusterRequest) -> None:
                if request.cluster == "west" and request.name == "first":
                    held.set()
                    await release.wait()

            copier.hold = hold
            await envs["west"].client.create(configmap("first"))
            await eventually(held.is_set)
            for index in range(3):
                await envs["west"].client.create(configmap(f"queued-{index}"))
            await eventually(
                lambda: (
                    sum(
                        1
                        for r in controller.queue._ready
                        if isinstance(r, ClusterRequest) and r.cluster == "west"
                    )
                    >= 3
                )
            )
            await provider.remove("west")
            release.set()
            assert fleet.clusters == ["east"]
            assert "west" not in controller.clusters
            assert not any(
                isinstance(r, ClusterRequest) and r.cluster == "west"
                for r in (*controller.queue._ready, *controller.queue._waiting)
            )
            assert all(informer.store is not None for informer in west.cache.informers())
            assert all(i._task is None for i in west.cache.informers())
            for informer in west.cache.informers():
                assert informer not in controller.informers
            with_west = len([r for r in copier.seen if r.cluster == "west"])
            await envs["west"].client.create(configmap("after"))
            # East carries on; nothing of west is reconciled any more.
            await envs["east"].client.create(configmap("after"))
            await eventually(lambda: has_copy(envs["east"].client, "after"))
            assert len([r for r in copier.seen if r.cluster == "west"]) == with_west
            for index in range(3):
                assert await has_copy(envs["west"].client, f"queued-{index}") is None
            with pytest.raises(ClusterNotFound, match="west"):
                fleet.get_cluster("west")
            # Engaged again: its objects are listed and reconciled anew.
            await provider.add("north", envs["north"].config)
            await eventually(lambda: has_copy(envs["north"].client, "app"))


async def test_an_unreachable_cluster_does_not_hold_up_the_others() -> None:
    async with dev_clusters("host", "east") as envs:
        west = TestEnv(crd_paths=(), options=kubeforge.cluster.ClusterOptions.bare())
        await west.start()
        assert west.config is not None
        west_config = west.config
        try:
            manager = Manager(envs["host"].config)
            # One that accepts connections and never answers, engaged first.
            silent = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
            port = silent.sockets[0].getsockname()[1]
            gone = kubeforge.ClusterConfig(server=f"https://127.0.0.1:{port}")
            provider = KubeconfigProvider(
                clusters={"silent": gone, "east": envs["east"].config, "west": west_config}
            )
            fleet = MultiClusterManager(manager, provider)
            fleet.controller().for_(CONFIGMAP).complete(CopyReconciler())
            async with running(manager):
                await eventually(lambda: connected(fleet, "east", "west"))
                assert not fleet.controllers[0].connected("silent")
                # West goes away while engaged.
                await west.stop()
                await envs["east"].client.create(configmap("app"))
                await eventually(lambda: has_copy(envs["east"].client, "app"), timeout=5)
            silent.close()
        finally:
            await west.stop()


async def test_reconciles_finish_before_the_clusters_stop() -> None:
    async with dev_clusters("host", "east") as envs:
        await envs["east"].client.create(configmap("app"))
        manager, fleet = fleet_on(envs, "east", graceful_shutdown_timeout=10)
        copier = CopyReconciler()
        started, release = asyncio.Event(), asyncio.Event()

        async def hold(request: ClusterRequest) -> None:
            started.set()
            await release.wait()

        copier.hold = hold
        controller = fleet.controller().for_(CONFIGMAP).complete(copier)
        task = asyncio.create_task(manager.start())
        await eventually(started.is_set)
        manager.stop()
        await eventually(lambda: controller.queue.shutting_down)
        # The manager is stopping; the reconcile it waits for still has its cluster.
        release.set()
        await task
        assert await has_copy(envs["east"].client, "app") == {"cluster": "east"}
        assert fleet.clusters == []
