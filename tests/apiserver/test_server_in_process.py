"""A client in the API server's own process (`ClusterConfig.in_process`, `APIServer.exchange`):
its whole exchanges are handed to the server without a socket, authenticated, authorized
and limited as over a connection; its watches still go over one."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeforge import Client
from kubeforge._apiserver.config import ServerConfig
from kubeforge._apiserver.server import APIServer
from kubeforge._client.auth import StaticToken
from kubeforge._client.config import ClusterConfig
from kubeforge._client.errors import ApiError, Forbidden, Unauthorized
from kubeforge._client.transport import Transport

CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "in-process", "namespace": "default"},
    "data": {"key": "value"},
}
# Nothing listens here: a request that went over the network could not be answered.
NOWHERE = "https://127.0.0.1:1"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[APIServer]:
    server = APIServer(
        ServerConfig(local_socket=tmp_path / "apiserver.sock", max_request_bytes=64 * 1024)
    )
    await server.start()
    yield server
    await server.stop()


def in_process_config(server: APIServer, token: str, url: str = NOWHERE) -> ClusterConfig:
    config = ClusterConfig(server=url, ca_data=server.ca_pem, credentials=StaticToken(token))
    config.in_process = server
    return config


async def test_whole_exchanges_need_no_connection(server: APIServer) -> None:
    async with Client(in_process_config(server, server.token)) as client:
        created = await client.create(copy.deepcopy(CONFIG_MAP))
        got = await client.get("v1/ConfigMap", "in-process", namespace="default")
        assert got["metadata"]["uid"] == created["metadata"]["uid"]
        patched = await client.patch(
            "v1/ConfigMap", "in-process", {"data": {"key": "new"}}, namespace="default"
        )
        assert patched["data"] == {"key": "new"}
        listed = await client.list("v1/ConfigMap", namespace="default")
        assert [obj["metadata"]["name"] for obj in listed] == ["in-process"]
        await client.delete("v1/ConfigMap", "in-process", namespace="default")
    assert server._http is not None and not server._http.connections


async def test_watches_go_over_the_socket_beside_them(server: APIServer) -> None:
    config = in_process_config(server, server.token, server.url)
    config.unix_socket = str(server.config.local_socket)
    async with Client(config) as client:
        rv = (await client.list("v1/ConfigMap", namespace="default")).resource_version
        created = await client.create(copy.deepcopy(CONFIG_MAP))
        async for event in client.watch(
            "v1/ConfigMap", namespace="default", resource_version=rv, timeout_seconds=10
        ):
            assert event.type == "ADDED"
            assert event.object["metadata"]["uid"] == created["metadata"]["uid"]
            break
        assert server._http is not None and server._http.connections


async def test_requests_are_authenticated_and_authorized_as_over_a_connection(
    server: APIServer,
) -> None:
    async with Client(in_process_config(server, "not-the-token")) as stranger:
        with pytest.raises(Unauthorized):
            await stranger.get("v1/ConfigMap", "in-process", namespace="default")
    async with Client(in_process_config(server, server.token)) as admin:
        await admin.create(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "nobody", "namespace": "default"},
            }
        )
        issued = await admin.create_subresource(
            "v1/ServiceAccount",
            "nobody",
            "token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
            namespace="default",
        )
    token = issued["status"]["token"]
    async with Client(in_process_config(server, token)) as account:
        with pytest.raises(Forbidden) as refused:
            await account.list("v1/ConfigMap", namespace="default")
    assert "system:serviceaccount:default:nobody" in str(refused.value)


async def test_a_body_over_the_limit_is_refused_as_over_a_connection(server: APIServer) -> None:
    big = copy.deepcopy(CONFIG_MAP)
    big["data"] = {"key": "x" * (65 * 1024)}
    async with Client(in_process_config(server, server.token)) as client:
        with pytest.raises(ApiError) as refused:
            await client.create(big)
    assert refused.value.code == 413


async def test_a_stopped_server_is_not_reached(server: APIServer) -> None:
    transport = Transport(in_process_config(server, server.token), max_retries=0)
    try:
        assert (await transport.request("GET", "/version")).status == 200
        await server.stop()
        with pytest.raises(ConnectionError):
            await transport.request("GET", "/version")
        await server.start()
        assert (await transport.request("GET", "/version")).status == 200
    finally:
        await transport.close()
