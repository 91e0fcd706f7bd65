"""The kubeforge pytest plugin: a `testenv` fixture with the project's CRDs installed.

Configure the CRD directories in pytest's ini options (`kubeforge_crd_paths`, default
`config/crd/bases`, relative to the rootdir). Set KUBEFORGE_USE_EXISTING_CLUSTER=1 to run the
same tests against the current kubeconfig's cluster.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeforge.client.client import Client
from kubeforge.testing.env import TestEnv

__all__ = ["kubeforge_client", "pytest_addoption", "testenv"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "kubeforge_crd_paths",
        "directories (or files) of CRDs to install in the kubeforge test environment",
        type="linelist",
        default=["config/crd/bases"],
    )


@pytest.fixture
async def testenv(request: pytest.FixtureRequest) -> AsyncIterator[TestEnv]:
    """A started test environment (a fresh development cluster per test)."""
    root = Path(str(request.config.rootpath))
    paths = [root / p for p in request.config.getini("kubeforge_crd_paths")]
    async with TestEnv(crd_paths=paths) as env:
        yield env


@pytest.fixture
def kubeforge_client(testenv: TestEnv) -> Client:
    """The test environment's client."""
    return testenv.client
