"""What the StatefulSet and DaemonSet tests share: a development cluster, a record of every
pod event in order (so tests assert on orderings and on states no poll could catch), and
the official Python client pointed at the cluster."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s, config as k8s_config

from kubeforge import Client
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import TestEnv, eventually

NS = "default"
POD = "v1/Pod"


@dataclass
class Recorder:
    """Every watch event of one kind in the namespace since it started: (type, object)."""

    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def of(self, name: str) -> list[tuple[str, dict[str, Any]]]:
        return [(kind, obj) for kind, obj in self.events if obj["metadata"]["name"] == name]

    def names(self, event_type: str) -> list[str]:
        """Object names in the order they had an event of `event_type`, each once."""
        seen: list[str] = []
        for kind, obj in self.events:
            name = obj["metadata"]["name"]
            if kind == event_type and name not in seen:
                seen.append(name)
        return seen


@contextlib.asynccontextmanager
async def recording(client: Client, kind: str = POD) -> AsyncIterator[Recorder]:
    """Record the events of `kind` in the namespace while the block runs."""
    recorder = Recorder()
    start = (await client.list(kind, namespace=NS)).resource_version

    async def watch() -> None:
        async for event in client.watch(kind, namespace=NS, resource_version=start):
            if event.type in ("ADDED", "MODIFIED", "DELETED"):
                recorder.events.append((event.type, dict(event.object)))

    task = asyncio.create_task(watch())
    try:
        yield recorder
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


@contextlib.asynccontextmanager
async def cluster(nodes: int = 1) -> AsyncIterator[TestEnv]:
    async with TestEnv(crd_paths=(), options=ClusterOptions(nodes=nodes)) as env:
        yield env


@contextlib.contextmanager
def python_client(env: TestEnv, tmp_path: Path) -> Iterator[k8s.ApiClient]:
    """The official client, configured from a kubeconfig as its users configure it."""
    kubeconfig = env.write_kubeconfig(tmp_path / "python-kubeconfig")
    api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    try:
        yield api
    finally:
        api.close()


def is_ready(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


async def pods(client: Client, selector: str) -> list[dict[str, Any]]:
    return sorted(
        (await client.list(POD, namespace=NS, label_selector=selector)).items,
        key=lambda p: p["metadata"]["name"],
    )


async def wait_until(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    return await eventually(check, timeout=timeout)


KUBECTL_VERSIONS = pytest.mark.parametrize("version", ["1.33", "1.29"])
