"""Several development clusters in one test, for the multi-cluster runtime: bare API servers
(no built-in controllers, no nodes: about 0.03 s each), a Manager on the first, and a small
reconciler that records which cluster each request came from."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import yaml

import kubeforge
from kubeforge.cluster import ClusterOptions
from kubeforge.multicluster import (
    ClusterRequest,
    KubeconfigProvider,
    MultiClusterManager,
    current_cluster,
)
from kubeforge.testing import TestEnv, eventually

CONFIGMAP = "v1/ConfigMap"

__all__ = [
    "CONFIGMAP",
    "CopyReconciler",
    "configmap",
    "connected",
    "dev_clusters",
    "fleet_on",
    "has_copy",
    "kubeconfig_of",
    "kubeconfig_secret",
    "running",
]


@contextlib.asynccontextmanager
async def dev_clusters(*names: str) -> AsyncIterator[dict[str, TestEnv]]:
    """A started bare development cluster for each name (namespace `default`)."""
    async with contextlib.AsyncExitStack() as stack:
        envs: dict[str, TestEnv] = {}
        for name in names:
            env = TestEnv(crd_paths=(), options=ClusterOptions.bare())
            envs[name] = await stack.enter_async_context(env)
        yield envs


@contextlib.asynccontextmanager
async def running(manager: kubeforge.Manager) -> AsyncIterator[kubeforge.Manager]:
    """`manager` started, until the block ends."""
    task = asyncio.create_task(manager.start())
    try:
        await eventually(lambda: manager.running.is_set() or task.done(), timeout=10)
        if task.done():
            task.result()
        yield manager
    finally:
        manager.stop()
        await task


def connected(fleet: MultiClusterManager, *names: str) -> bool:
    """Whether every controller of `fleet` reconciles in each of the clusters `names`."""
    return all(c.connected(n) for c in fleet.controllers for n in names)


def fleet_on(
    envs: Mapping[str, TestEnv], *members: str, **options: Any
) -> tuple[kubeforge.Manager, MultiClusterManager]:
    """A Manager on cluster `host` and a MultiClusterManager over `members` (the provider a
    KubeconfigProvider of their settings); `options` go to the Manager."""
    manager = kubeforge.Manager(envs["host"].config, **options)
    provider = KubeconfigProvider(clusters={name: envs[name].config for name in members})
    return manager, MultiClusterManager(manager, provider)


def configmap(name: str, data: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data or {},
    }


class CopyReconciler(kubeforge.Reconciler):
    """For each ConfigMap `x` (not itself a copy), writes ConfigMap `x-copy` in the same
    cluster saying which cluster it was reconciled for; `seen` lists the requests."""

    def __init__(self) -> None:
        self.seen: list[ClusterRequest] = []
        self.hold: Callable[[ClusterRequest], Any] | None = None

    async def reconcile(self, request: kubeforge.Request) -> kubeforge.Result | None:
        assert isinstance(request, ClusterRequest)
        assert current_cluster() == request.cluster
        if request.name.endswith("-copy"):
            return None
        self.seen.append(request)
        if self.hold is not None:
            await self.hold(request)
        source = await self.client.get(CONFIGMAP, request.name, namespace=request.namespace)
        copy = configmap(
            f"{request.name}-copy", {"cluster": request.cluster, **(source.get("data") or {})}
        )
        try:
            await self.client.create(copy)
        except kubeforge.AlreadyExists:
            pass
        return None


async def has_copy(client: kubeforge.Client, name: str) -> dict[str, str] | None:
    """The data of ConfigMap `<name>-copy`, or None when it is not there."""
    try:
        found = await client.get(CONFIGMAP, f"{name}-copy", namespace="default")
    except kubeforge.NotFound:
        return None
    data: dict[str, str] = found.get("data") or {}
    return data


def kubeconfig_of(envs: Mapping[str, TestEnv]) -> dict[str, Any]:
    """One kubeconfig with a context (and cluster and user) per started cluster, each named
    as in `envs`, credentials inline; its current context is the first."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config"}
    for name, env in envs.items():
        assert env.cluster is not None
        single = env.cluster.server.kubeconfig_dict(context=name)
        for section in ("clusters", "users", "contexts"):
            merged.setdefault(section, []).extend(single[section])
        merged.setdefault("current-context", name)
    return merged


def kubeconfig_secret(
    name: str, kubeconfig: Mapping[str, Any], *, labelled: bool = True
) -> dict[str, Any]:
    """A Secret in `default` holding `kubeconfig` as the Secret provider reads it."""
    labels = {"kubeforge.dev/multicluster-kubeconfig": "true"} if labelled else {}
    text = yaml.safe_dump(dict(kubeconfig)).encode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "data": {"kubeconfig": base64.b64encode(text).decode()},
    }
