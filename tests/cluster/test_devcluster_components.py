"""How a development cluster's own components reach its API server: its controllers and nodes
hand their whole exchanges to the server in their process, and open their watches over the
server's Unix socket (plain HTTP, no TLS to pay for inside the process), in a directory only
the cluster's user may enter and which goes with the cluster; everyone else (kubeconfigs,
TestEnv's client) over HTTPS as before."""

from __future__ import annotations

import stat
from typing import Any

from kubeforge import Client
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
