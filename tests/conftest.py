"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeforge import Client as KubeClient
from kubeforge._apiserver.config import ServerConfig
from kubeforge.apiserver import APIServer
from kubeforge.client import load_kubeconfig
from kubeforge.testing import Kubectl
from tests.support import HTTPClient, connect, kubectl_for


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    """A fresh embedded API server on a free port."""
    async with APIServer() as srv:
        yield srv


@pytest.fixture
async def http(server: APIServer) -> AsyncIterator[HTTPClient]:
    """Raw HTTPS access to `server`, trusting its CA and carrying its token."""
    async with connect(server) as raw:
        yield raw


@pytest.fixture
def kubeconfig(server: APIServer, tmp_path: Path) -> Path:
    return server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def kubectl(kubeconfig: Path, tmp_path: Path) -> Kubectl:
    """The default kubectl, pointed at `server`, with a private cache (and HOME) directory."""
    return kubectl_for(kubeconfig, tmp_path / "kube-cache")


@pytest.fixture
async def api(kubeconfig: Path) -> AsyncIterator[KubeClient]:
    """A kubeforge Client for `server`, configured from its kubeconfig."""
    async with KubeClient(load_kubeconfig(kubeconfig)) as kube:
        yield kube


@pytest.fixture
async def gc_server() -> AsyncIterator[APIServer]:
    """An API server that collects garbage and empties deleted namespaces, as a cluster does."""
    async with APIServer(ServerConfig(garbage_collection=True)) as srv:
        yield srv


@pytest.fixture
async def gc_http(gc_server: APIServer) -> AsyncIterator[HTTPClient]:
    async with connect(gc_server) as raw:
        yield raw


@pytest.fixture
def gc_kubectl(gc_server: APIServer, tmp_path: Path) -> Kubectl:
    kubeconfig = gc_server.write_kubeconfig(tmp_path / "gc-kubeconfig")
    return kubectl_for(kubeconfig, tmp_path / "kube-cache")


@pytest.fixture(scope="session")
def fleet_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fleet, a project kubeforge 0.1.0.dev0 scaffolded and its user then edited, in git
    (tests/support/scaffolds.py); tests copy it before changing it."""
    from tests.support.scaffolds import old_fleet  # the CLI, imported by these tests only

    return old_fleet(tmp_path_factory.mktemp("old") / "fleet")


@pytest.fixture(scope="session")
def fleet_scaffold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fleet's scaffold as this release writes it, without the user's edits."""
    from tests.support.scaffolds import FLEET_COMMANDS, current_scaffold

    return current_scaffold(tmp_path_factory.mktemp("current") / "fleet", FLEET_COMMANDS)
