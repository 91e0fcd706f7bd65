"""TestEnv: a cluster for tests (envtest's role), a development cluster started in-process.

    async with TestEnv(crd_paths=["config/crd/bases"]) as env:
        await env.client.create(...)

It starts a DevCluster on a free port (or, with KUBEFORGE_USE_EXISTING_CLUSTER=1, uses the
current kubeconfig's cluster), installs the CRDs found under `crd_paths` and waits until they
are established, and hands out a client. Unlike envtest's bare API server, garbage
collection, namespace deletion, Deployments, Jobs and pods all work.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from kubeforge.client.client import Client
from kubeforge.client.config import ClusterConfig, load_config
from kubeforge.cluster.options import ClusterOptions

__all__ = ["USE_EXISTING_CLUSTER", "TestEnv"]

USE_EXISTING_CLUSTER = "KUBEFORGE_USE_EXISTING_CLUSTER"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes")


class TestEnv:
    """A cluster to run operator tests against, with the project's CRDs installed."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        *,
        crd_paths: Iterable[str | Path] = ("config/crd/bases",),
        options: ClusterOptions | None = None,
        use_existing_cluster: bool | None = None,
        kubeconfig: str | None = None,
        error_if_crd_path_missing: bool = False,
    ) -> None:
        self.crd_paths = [Path(p) for p in crd_paths]
        self.options = options or ClusterOptions()
        self.use_existing = (
            _truthy(os.environ.get(USE_EXISTING_CLUSTER))
            if use_existing_cluster is None
            else use_existing_cluster
        )
        self.kubeconfig = kubeconfig
        self.error_if_crd_path_missing = error_if_crd_path_missing
        self.cluster: Any = None
        self.config: ClusterConfig | None = None
        self._client: Client | None = None
        self.installed: list[str] = []

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("the test environment is not started")
        return self._client

    def write_kubeconfig(self, path: str | Path) -> Path:
        """A kubeconfig for the started environment (for kubectl or subprocesses)."""
        if self.cluster is not None:
            written: Path = self.cluster.write_kubeconfig(path)
            return written
        raise RuntimeError("an existing cluster has its own kubeconfig")

    async def start(self) -> None:
        if self.use_existing:
            self.config = load_config(kubeconfig=self.kubeconfig)
        else:
            from kubeforge.cluster.devcluster import DevCluster

            self.cluster = DevCluster(self.options)
            await self.cluster.start()
            self.config = self.cluster.cluster_config()
        self._client = Client(self.config, field_manager="kubeforge-testenv")
        await self.install_crds()

    def _crd_documents(self) -> list[dict[str, Any]]:
        docs: list[dict[str, Any]] = []
        for path in self.crd_paths:
            if not path.exists():
                if self.error_if_crd_path_missing:
                    raise FileNotFoundError(f"CRD path {path} does not exist")
                continue
            files = (
                sorted(path.glob("*.y*ml")) + sorted(path.glob("*.json"))
                if path.is_dir()
                else [path]
            )
            for file in files:
                for doc in yaml.safe_load_all(file.read_text()):
                    if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                        docs.append(doc)
        return docs

    async def install_crds(self) -> None:
        """Apply every CRD under `crd_paths` and wait until all are established."""
        docs = self._crd_documents()
        for doc in docs:
            await self.client.apply(doc, field_manager="kubeforge-testenv", force=True)
            self.installed.append(doc["metadata"]["name"])
        if docs:
            await self.client.wait_established([d["metadata"]["name"] for d in docs], timeout=10)

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self.cluster is not None:
            await self.cluster.stop()
            self.cluster = None

    async def __aenter__(self) -> TestEnv:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
