"""How a development cluster's own components reach its API server: its controllers and nodes
hand their whole exchanges to the server in their process, and open their watches over the
server's Unix socket (plain HTTP, no TLS to pay for inside the process), in a directory only
the cluster's user may enter and which goes with the cluster; everyone else (kubeconfigs,
TestEnv's client) over HTTPS as before."""

from __future__ import annotations

import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kubeforge import Client
from kubeforge._cluster import devcluster
from kubeforge._cluster.devcluster import DevCluster
from kubeforge.testing import eventually

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "witness", "namespace": "default"},
    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
}


async def test_components_use_the_servers_unix_socket_and_it_goes_with_the_cluster() -> None:
    cluster = DevCluster()
    await cluster.start()
    try:
        path = cluster.server.config.local_socket
        assert path is not None and stat.S_ISSOCK(path.stat().st_mode)
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        manager = cluster.manager
        assert manager is not None
        assert manager.api_reader.config.unix_socket == str(path)
        assert manager.api_reader.config.in_process is cluster.server
        assert cluster.cluster_config().unix_socket is None
        assert cluster.cluster_config().in_process is None
        assert cluster.kubeconfig_dict()["clusters"][0]["cluster"]["server"].startswith("https")
        async with Client(cluster.cluster_config()) as client:
            await client.create(dict(POD))

            async def running() -> bool:
                pod = await client.get("v1/Pod", "witness", namespace="default")
                return (pod.get("status") or {}).get("phase") == "Running"

            # Scheduled by the controllers, run by the node: their watches over the socket.
            await eventually(running, timeout=30)
        plain = [c for c in cluster.server._http.connections if c.tls is None]  # type: ignore[union-attr]
        assert plain, "no component watched over the Unix socket"
    finally:
        await cluster.stop()
    assert not path.parent.exists()


async def test_a_deep_tmpdir_puts_the_socket_under_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A socket's path has room for about a hundred bytes: under a TMPDIR too deep for it the
    socket goes to a private directory under /tmp, and the cluster works as before."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    cluster = DevCluster()
    await cluster.start()
    try:
        path = cluster.server.config.local_socket
        assert path is not None and stat.S_ISSOCK(path.stat().st_mode)
        assert path.parent.parent == Path("/tmp")
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        async with Client(cluster.cluster_config()) as client:
            await client.create(dict(POD))

            async def running() -> bool:
                pod = await client.get("v1/Pod", "witness", namespace="default")
                return (pod.get("status") or {}).get("phase") == "Running"

            await eventually(running, timeout=30)
    finally:
        await cluster.stop()
    assert not path.parent.exists()
    assert list(deep.iterdir()) == []  # the directory too deep was not left behind


def test_with_no_room_for_a_socket_the_components_use_https(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    monkeypatch.setattr(devcluster, "_SOCKET_PATH_MAX", 10)
    assert devcluster.private_socket_dir() is None
    assert list(deep.iterdir()) == []
