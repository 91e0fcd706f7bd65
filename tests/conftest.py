"""Fixtures shared by the whole suite."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from kubeforge.apiserver import APIServer
from kubeforge.client import Client as KubeClient
from kubeforge.client import load_kubeconfig
from tests.support import Client, Kubectl


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    """A fresh embedded API server on a free port."""
    async with APIServer() as srv:
        yield srv


@pytest.fixture
async def client(server: APIServer) -> AsyncIterator[Client]:
    """Raw HTTPS access to `server`, trusting its CA and carrying its token."""
    assert server.certificates is not None
    ctx: ssl.SSLContext = server.certificates.client_context()
    connector = aiohttp.TCPConnector(ssl=ctx)
    async with aiohttp.ClientSession(connector=connector) as session:
        yield Client(server, session)


@pytest.fixture
def kubeconfig(server: APIServer, tmp_path: Path) -> Path:
    return server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def kubectl(kubeconfig: Path, tmp_path: Path) -> Kubectl:
    """The default kubectl, pointed at `server`."""
    cache = tmp_path / "kube-cache"
    cache.mkdir()
    return Kubectl(kubeconfig, cache)


@pytest.fixture
async def api(kubeconfig: Path) -> AsyncIterator[KubeClient]:
    """A kubeforge Client for `server`, configured from its kubeconfig."""
    async with KubeClient(load_kubeconfig(kubeconfig)) as kube:
        yield kube
