"""A development cluster in a thread of its own, for tests of exec, attach and port-forward
that drive it with blocking clients (kubectl, the official Python client) from the test's
thread, one cluster per test module."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import kubernetes

from kubeforge._cluster.devcluster import DevCluster
from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import find_kubectl

T = TypeVar("T")

KUBECTL_VERSIONS = ("1.27", "1.29", "1.30", "1.33")


class ClusterThread:
    """`DevCluster(options)` serving from a thread; `kubectl(...)` runs against it."""

    def __init__(self, directory: Path, options: ClusterOptions) -> None:
        self.directory = directory
        self.options = options
        self.cluster: DevCluster | None = None
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name="dev-cluster", daemon=True)
        self.kubeconfig = directory / "kubeconfig"

    def __enter__(self) -> ClusterThread:
        self._thread.start()
        if not self._ready.wait(120) or self._error is not None:
            raise RuntimeError(f"the development cluster did not start: {self._error!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        stopping = self._stopping
        if stopping is not None:
            self.loop.call_soon_threadsafe(stopping.set)
        self._thread.join(60)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._main())

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        try:
            cluster = DevCluster(self.options)
            await cluster.start()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self.cluster = cluster
        cluster.write_kubeconfig(self.kubeconfig)
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            await cluster.stop()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        """Run `coro` on the cluster's event loop and return its result."""
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def env(self) -> dict[str, str]:
        home = self.directory / "home"
        home.mkdir(exist_ok=True)
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig), "HOME": str(home)}

    def kubectl(
        self,
        *args: str,
        version: str | None = None,
        stdin: bytes | None = None,
        timeout: float = 60,
        user: str | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """kubectl (exactly `version` when given) against the cluster."""
        binary = find_kubectl(version, exact=version is not None)
        command = [binary]
        if user is not None:
            command += ["--kubeconfig", str(self.user_kubeconfig(user))]
        command += args
        return subprocess.run(
            command,
            env=self.env(),
            input=stdin if stdin is not None else b"",
            capture_output=True,
            timeout=timeout,
            check=False,
        )

    def apply(self, manifest: str) -> None:
        path = self.directory / "manifest.yaml"
        path.write_text(manifest)
        done = self.kubectl("apply", "-f", str(path))
        assert done.returncode == 0, done.stderr.decode()

    def wait_ready(self, *pods: str) -> None:
        done = self.kubectl(
            "wait", "--for=condition=Ready", *(f"pod/{p}" for p in pods), "--timeout=60s"
        )
        assert done.returncode == 0, done.stderr.decode()

    def user_kubeconfig(self, user: str) -> Path:
        """A kubeconfig for `user` (a client certificate of the cluster's CA)."""
        import yaml

        assert self.cluster is not None
        path = self.directory / f"kubeconfig-{user}"
        if not path.exists():
            path.write_text(yaml.safe_dump(self.cluster.user_kubeconfig_dict(user)))
        return path

    def python_client(self) -> kubernetes.client.ApiClient:
        """The official Python client, configured from the cluster's kubeconfig."""
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(
            config_file=str(self.kubeconfig), client_configuration=configuration
        )
        return kubernetes.client.ApiClient(configuration)
