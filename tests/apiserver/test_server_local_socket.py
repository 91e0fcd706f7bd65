"""The API server's Unix socket (`ServerConfig.local_socket`): the same API in plain HTTP for
clients on this machine that may open it, authenticated as over TCP, and the client's
`ClusterConfig.unix_socket` that uses it for whole exchanges and watches alike."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from kubeforge import Client
from kubeforge._apiserver.config import ServerConfig
from kubeforge._apiserver.server import APIServer
from kubeforge._client.auth import StaticToken
from kubeforge._client.config import ClusterConfig
from kubeforge._client.errors import Unauthorized

CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "over-the-socket", "namespace": "default"},
    "data": {"key": "value"},
}


@pytest.fixture
async def socket_server(tmp_path: Path) -> AsyncIterator[APIServer]:
    server = APIServer(ServerConfig(local_socket=tmp_path / "apiserver.sock"))
    await server.start()
    yield server
    await server.stop()


def socket_client(server: APIServer, token: str) -> Client:
    assert server.config.local_socket is not None
    return Client(
        ClusterConfig(
            server=server.url,
            ca_data=server.ca_pem,
            credentials=StaticToken(token),
            unix_socket=str(server.config.local_socket),
        )
    )


async def raw_exchange(path: Path, request: bytes) -> bytes:
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(65536), 10)
    finally:
        writer.close()


async def test_the_socket_speaks_plain_http_and_asks_for_credentials(
    socket_server: APIServer,
) -> None:
    path = socket_server.config.local_socket
    assert path is not None
    ask = b"GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\n"
    refused = await raw_exchange(path, ask + b"\r\n")
    assert refused.startswith(b"HTTP/1.1 401 ")
    answered = await raw_exchange(
        path, ask + b"Authorization: Bearer " + socket_server.token.encode() + b"\r\n\r\n"
    )
    head, _, body = answered.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert orjson.loads(body)["kind"] == "ConfigMapList"


async def test_a_client_writes_reads_and_watches_through_the_socket(
    socket_server: APIServer,
) -> None:
    async with socket_client(socket_server, socket_server.token) as client:
        rv = (await client.list("v1/ConfigMap", namespace="default")).resource_version
        created = await client.create(copy.deepcopy(CONFIG_MAP))
        assert (await client.get("v1/ConfigMap", "over-the-socket", namespace="default"))[
            "data"
        ] == {"key": "value"}
        async for event in client.watch(
            "v1/ConfigMap", namespace="default", resource_version=rv, timeout_seconds=10
        ):
            assert event.type == "ADDED"
            assert event.object["metadata"]["uid"] == created["metadata"]["uid"]
            break
    async with socket_client(socket_server, "not-the-token") as stranger:
        with pytest.raises(Unauthorized):
            await stranger.get("v1/ConfigMap", "over-the-socket", namespace="default")


async def test_the_tls_port_serves_as_before_beside_the_socket(socket_server: APIServer) -> None:
    config = ClusterConfig(
        server=socket_server.url,
        ca_data=socket_server.ca_pem,
        credentials=StaticToken(socket_server.token),
    )
    assert config.server.startswith("https://")
    async with Client(config) as client:
        await client.create(copy.deepcopy(CONFIG_MAP))
        assert await client.get("v1/ConfigMap", "over-the-socket", namespace="default")
