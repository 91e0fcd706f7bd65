"""One development cluster on virtual time for the sharding tests that need one: each test
works in a namespace of its own (its Leases there too), with rings of its own."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import pytest_asyncio

from kubeforge._cluster.options import ClusterOptions
from kubeforge.testing import TestEnv

_names = itertools.count()


@pytest_asyncio.fixture(scope="package", loop_scope="package")
async def env() -> AsyncIterator[TestEnv]:
    # Bare: no built-in controller reacts to the thousands of writes the tests make.
    options = ClusterOptions.bare()
    async with TestEnv(crd_paths=[], virtual_time=True, options=options) as started:
        yield started


@pytest_asyncio.fixture(loop_scope="package")
async def ns(env: TestEnv) -> str:
    name = f"sharding-{next(_names)}"
    await env.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name
