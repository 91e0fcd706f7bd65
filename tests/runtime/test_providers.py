"""Cluster providers: kubeconfig files and contexts, and kubeconfig Secrets watched in a
namespace of the manager's own cluster (engage, re-engage, disengage, refuse)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeforge import Manager
from kubeforge.client import ConfigError
from kubeforge.multicluster import KubeconfigProvider, KubeconfigSecretProvider, MultiClusterManager
from kubeforge.testing import eventually, metric_value
from tests.support.fleet import (
    CONFIGMAP,
    CopyReconciler,
    configmap,
    dev_clusters,
    has_copy,
    kubeconfig_of,
    kubeconfig_secret,
    running,
)

SECRET = "v1/Secret"


def reconciled(manager: Manager) -> float:
    """How many Secrets the provider's controller has reconciled."""
    labels = {"controller": "kubeconfig-provider", "result": "success"}
    return metric_value(manager, "controller_runtime_reconcile_total", **labels) or 0.0


def write(path: Path, kubeconfig: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(kubeconfig))
    return path


async def test_every_context_of_kubeconfig_files_is_a_cluster(tmp_path: Path) -> None:
    async with dev_clusters("host", "east", "west") as envs:
        fleet_file = write(
            tmp_path / "fleet", kubeconfig_of({n: envs[n] for n in ("east", "west")})
        )
        everything = KubeconfigProvider([fleet_file])
        assert everything.names == ["east", "west"]
        assert KubeconfigProvider([fleet_file], contexts=["west"]).names == ["west"]
        with pytest.raises(ConfigError, match="north"):
            KubeconfigProvider([fleet_file], contexts=["west", "north"])
        # Context names are the clusters' names: one name in two files is refused.
        east_file = write(tmp_path / "east", kubeconfig_of({"east": envs["east"]}))
        with pytest.raises(ValueError, match="'east'"):
            KubeconfigProvider([fleet_file, east_file])

        for name in ("east", "west"):
            await envs[name].client.create(configmap("app"))
        manager = Manager(envs["host"].config)
        fleet = MultiClusterManager(manager, everything)
        fleet.controller().for_(CONFIGMAP).complete(CopyReconciler())
        async with running(manager):
            for name in ("east", "west"):
                client = envs[name].client
                assert await eventually(lambda c=client: has_copy(c, "app")) == {"cluster": name}


async def test_kubeconfig_secrets_engage_reengage_and_disengage_clusters() -> None:
    async with dev_clusters("host", "east", "west", "north") as envs:
        host = envs["host"].client
        for name in ("east", "west", "north"):
            await envs[name].client.create(configmap("app", {"origin": name}))
        await host.create(kubeconfig_secret("east", kubeconfig_of({"east": envs["east"]})))
        # Not labelled: not a cluster.
        await host.create(
            kubeconfig_secret("other", kubeconfig_of({"west": envs["west"]}), labelled=False)
        )
        manager = Manager(envs["host"].config)
        provider = KubeconfigSecretProvider()
        fleet = MultiClusterManager(manager, provider)
        fleet.controller().for_(CONFIGMAP).complete(CopyReconciler())
        async with running(manager):
            # A Secret there at start.
            data = await eventually(lambda: has_copy(envs["east"].client, "app"))
            assert data == {"cluster": "east", "origin": "east"}
            # A Secret added while it runs.
            await host.create(kubeconfig_secret("west", kubeconfig_of({"west": envs["west"]})))
            data = await eventually(lambda: has_copy(envs["west"].client, "app"))
            assert data == {"cluster": "west", "origin": "west"}
            assert fleet.clusters == ["east", "west"]
            # A kubeconfig changed: the cluster named after the Secret is engaged anew, now
            # pointing at another API server.
            before = fleet.get_cluster("west")
            changed = kubeconfig_secret("west", kubeconfig_of({"north": envs["north"]}))
            await host.update({**changed, "metadata": (await host.get(SECRET, "west"))["metadata"]})
            data = await eventually(lambda: has_copy(envs["north"].client, "app"))
            assert data == {"cluster": "west", "origin": "north"}
            assert fleet.get_cluster("west") is not before
            # The first one's informers were stopped.
            assert before.cache.informers()
            assert all(informer._task is None for informer in before.cache.informers())
            # The same kubeconfig written again (a label added) changes nothing.
            current = fleet.get_cluster("west")
            done = reconciled(manager)
            secret = await host.get(SECRET, "west")
            secret["metadata"]["labels"]["team"] = "blue"
            await host.update(secret)
            await eventually(lambda: reconciled(manager) > done)
            assert provider.get("west") is current
            assert fleet.get_cluster("west") is current
            # A Secret deleted: its cluster is disengaged.
            await host.delete(SECRET, "east")
            await eventually(lambda: fleet.clusters == ["west"])
            await envs["east"].client.create(configmap("later"))
            await envs["north"].client.create(configmap("later"))
            await eventually(lambda: has_copy(envs["north"].client, "later"))
            assert await has_copy(envs["east"].client, "later") is None
        assert fleet.clusters == []


@pytest.mark.parametrize(
    ("user", "refused"),
    [
        (
            {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": "touch",
                    "args": ["/tmp/ran"],
                    "interactiveMode": "Never",
                }
            },
            "exec",
        ),
        ({"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}, "tokenFile"),
    ],
)
async def test_a_kubeconfig_secret_may_not_run_commands_or_read_files(
    user: dict[str, Any], refused: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with dev_clusters("host", "east") as envs:
        host = envs["host"].client
        kubeconfig = kubeconfig_of({"east": envs["east"]})
        kubeconfig["users"][0]["user"] = user
        await host.create(kubeconfig_secret("east", kubeconfig))
        await host.create(kubeconfig_secret("west", kubeconfig_of({"west": envs["east"]})))
        manager = Manager(envs["host"].config)
        fleet = MultiClusterManager(manager, KubeconfigSecretProvider())
        fleet.controller().for_(CONFIGMAP).complete(CopyReconciler())
        with caplog.at_level(logging.ERROR, "kubeforge.controller"):
            async with running(manager):
                await eventually(lambda: fleet.clusters == ["west"])
                await eventually(
                    lambda: any(
                        f"{refused} is not allowed" in r.getMessage() for r in caplog.records
                    )
                )
                assert fleet.clusters == ["west"]
