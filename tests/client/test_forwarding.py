"""Each client verb defined once: the cached client's writes are the live client's, and every
`SyncClient` call is the cached client's run to its result on the bound event loop, each
with the parameters of the one definition in `kubeforge._client.protocols`."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Iterator
from typing import Any, cast

import pytest

from kubeforge import Client, ObjectClient, SyncObjectClient
from kubeforge._runtime.cache import Cache
from kubeforge._runtime.cached_client import CachedClient, SyncClient

VERBS = sorted(name for name in dir(ObjectClient) if not name.startswith("_"))


def test_the_blocking_protocols_have_the_verbs_and_parameters_of_the_async_ones() -> None:
    assert sorted(name for name in dir(SyncObjectClient) if not name.startswith("_")) == VERBS
    assert len(VERBS) == 14
    for name in VERBS:
        verb = getattr(ObjectClient, name)
        assert inspect.signature(getattr(SyncObjectClient, name)) == inspect.signature(verb)
        assert inspect.signature(getattr(SyncClient, name)) == inspect.signature(verb), name
        assert inspect.signature(getattr(CachedClient, name)) == inspect.signature(verb), name


class Recorder:
    """Stands in for the client a verb is forwarded to: answers with what it was given."""

    def __init__(self) -> None:
        self.threads: list[str] = []

    def __getattr__(self, name: str) -> Any:
        async def verb(*args: Any, **kwargs: Any) -> Any:
            self.threads.append(threading.current_thread().name)
            return (name, args, kwargs)

        return verb


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running in a thread of its own, as the manager's does."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="loop", daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)
    loop.close()


async def test_the_cached_client_s_writes_are_the_live_client_s() -> None:
    api = Recorder()
    cached = CachedClient(cast(Client, api), cast(Cache, None))
    for name in ("create", "update", "patch", "apply", "delete", "delete_object"):
        assert await getattr(cached, name)("x", dry_run=True) == (name, ("x",), {"dry_run": True})
    for name in ("delete_all_of", "update_status", "patch_status", "apply_status", "scale"):
        assert await getattr(cached, name)("x") == (name, ("x",), {})


def test_every_sync_call_runs_the_cached_one_on_the_bound_loop(
    loop: asyncio.AbstractEventLoop,
) -> None:
    cached = Recorder()
    sync = SyncClient(cast(CachedClient, cached), loop)
    for name in [*VERBS, "scale", "create_subresource"]:
        answer = getattr(sync, name)("kind", "name", namespace="ns")
        assert answer == (name, ("kind", "name"), {"namespace": "ns"})
    assert set(cached.threads) == {"loop"}
