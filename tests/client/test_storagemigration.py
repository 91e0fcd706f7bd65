"""Storage version migration: every object rewritten in the storage version, storedVersions
trimmed, while another client keeps writing; and `kubeforge migrate-storage` around it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kubeforge import Client
from kubeforge._apiserver.types.resource import GroupResource
from kubeforge._client.client import ObjectList
from kubeforge._client.config import ClusterConfig
from kubeforge._client.storagemigration import (
    MigrationError,
    MigrationProgress,
    find_crd,
    migrate_storage,
)
from kubeforge.apiserver import APIServer
from kubeforge.client import load_kubeconfig
from kubeforge.testing import eventually, metric_sum
from tests.support import HTTPClient
from tests.support.admission import WebhookServer
from tests.support.conversion import CRD_NAME, CRDS, GROUP, V1, gadget, gadget_crd

GADGETS = GroupResource(GROUP, "gadgets")


def same_fields_crd() -> dict[str, Any]:
    """Gadgets whose two versions hold the same fields, converted by apiVersion alone."""
    crd = gadget_crd(WebhookServer())
    crd["spec"]["conversion"] = {"strategy": "None"}
    crd["spec"]["versions"][1] = {**crd["spec"]["versions"][0], "name": "v2", "storage": False}
    return crd


async def install_with_old_objects(http: HTTPClient, count: int) -> None:
    """The CRD with `count` gadgets stored in v1, then v2 made the storage version."""
    assert (await http.post(CRDS, same_fields_crd())).status == 201

    async def served() -> bool:
        return (await http.get(V1)).status == 200

    await eventually(served)
    for i in range(count):
        assert (await http.post(V1, gadget(f"g{i}", "v1"))).status == 201
    crd = (await http.get(f"{CRDS}/{CRD_NAME}")).json()
    for version in crd["spec"]["versions"]:
        version["storage"] = version["name"] == "v2"
    assert (await http.put(f"{CRDS}/{CRD_NAME}", crd)).status == 200


def stored_versions(server: APIServer) -> list[str]:
    return sorted(
        str(s.obj["apiVersion"]).rpartition("/")[2] for s in server.store.current(GADGETS)[0]
    )


async def crd_stored_versions(http: HTTPClient) -> list[str]:
    crd = (await http.get(f"{CRDS}/{CRD_NAME}")).json()
    return list(crd["status"]["storedVersions"])


PageHook = Callable[[ObjectList[Any], str | None], Awaitable[None]]


class ActsBetweenPages(Client):
    """A client after each of whose list pages `after_page` acts on the cluster (given the
    page and the continue token that asked for it) before the page is handed over: another
    writer getting in between the migration's list and its writes, at a chosen moment."""

    def __init__(self, config: ClusterConfig, after_page: PageHook) -> None:
        super().__init__(config)
        self.after_page = after_page

    async def list_page(self, *args: Any, **kwargs: Any) -> ObjectList[Any]:
        page = await super().list_page(*args, **kwargs)
        await self.after_page(page, kwargs.get("continue_token"))
        return page


async def test_every_object_moves_to_the_storage_version_while_others_write(
    server: APIServer, http: HTTPClient, kubeconfig: Path
) -> None:
    await install_with_old_objects(http, 7)
    assert stored_versions(server) == ["v1"] * 7
    pages: list[tuple[int, int]] = []

    def progress(p: MigrationProgress) -> None:
        pages.append((p.seen, p.rewritten + p.current))

    async def keep_writing() -> None:
        # Another writer (a controller) labels the objects all along: its writes are
        # stored in v2 too, and the migration's conflicting writes are retried.
        n = 0
        while True:
            name = f"g{n % 7}"
            body = {"metadata": {"labels": {"n": str(n)}}}
            await http.patch(f"{V1}/{name}", body, "application/merge-patch+json")
            n += 1
            await asyncio.sleep(0)

    async with Client(load_kubeconfig(kubeconfig)) as api:
        assert (await find_crd(api, "gadgets"))["metadata"]["name"] == CRD_NAME
        assert (await find_crd(api, "Gadget"))["metadata"]["name"] == CRD_NAME
        assert (await find_crd(api, f"gadget.{GROUP}"))["metadata"]["name"] == CRD_NAME
        writer = asyncio.create_task(keep_writing())
        try:
            result = await migrate_storage(api, CRD_NAME, chunk_size=3, on_progress=progress)
        finally:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
        assert (result.seen, result.gone) == (7, 0)
        assert result.rewritten + result.current == 7
        assert result.stored_versions_before == ["v1", "v2"]
        assert result.stored_versions == ["v2"] and result.trimmed
        assert [seen for seen, _ in pages] == [3, 6, 7]
        assert stored_versions(server) == ["v2"] * 7
        crd = (await http.get(f"{CRDS}/{CRD_NAME}")).json()
        assert crd["status"]["storedVersions"] == ["v2"]

        # Run again: nothing is written, nothing changes.
        revision = server.store.revision
        again = await migrate_storage(api, CRD_NAME)
        assert (again.rewritten, again.current, again.trimmed) == (0, 7, False)
        assert server.store.revision == revision


async def test_an_interrupted_migration_run_again_finishes_and_trims(
    server: APIServer, http: HTTPClient, kubeconfig: Path
) -> None:
    await install_with_old_objects(http, 7)

    def stop_after_two_pages(p: MigrationProgress) -> None:
        if p.seen == 6:
            # What Ctrl-C does to `kubeforge migrate-storage` (asyncio.run cancels it).
            migration.cancel()

    async with Client(load_kubeconfig(kubeconfig)) as api:
        migration = asyncio.create_task(
            migrate_storage(api, CRD_NAME, chunk_size=3, on_progress=stop_after_two_pages)
        )
        with pytest.raises(asyncio.CancelledError):
            await migration
        # Two pages went through; the third object page was never read.
        assert stored_versions(server) == ["v1"] + ["v2"] * 6
        assert await crd_stored_versions(http) == ["v1", "v2"]

        result = await migrate_storage(api, CRD_NAME, chunk_size=3)
    assert (result.seen, result.rewritten, result.current) == (7, 1, 6)
    assert result.trimmed and result.stored_versions == ["v2"]
    assert stored_versions(server) == ["v2"] * 7
    assert await crd_stored_versions(http) == ["v2"]


async def test_an_expired_continue_token_starts_the_list_over(
    server: APIServer, http: HTTPClient, kubeconfig: Path
) -> None:
    await install_with_old_objects(http, 7)
    pages: list[tuple[int, int, int]] = []

    def compact_after_the_first_page(p: MigrationProgress) -> None:
        pages.append((p.seen, p.rewritten, p.current))
        if len(pages) == 1:
            # etcd compacts the revision the continue token was issued at.
            server.store.compact()

    async with Client(load_kubeconfig(kubeconfig)) as api:
        result = await migrate_storage(
            api, CRD_NAME, chunk_size=3, on_progress=compact_after_the_first_page
        )
    # The second page's list was answered 410 Expired: the listing began again, and the
    # three objects already rewritten were left alone.
    assert pages == [(3, 3, 0), (3, 0, 3), (6, 3, 3), (7, 4, 3)]
    assert (result.seen, result.rewritten, result.current, result.gone) == (7, 4, 3, 0)
    assert result.trimmed
    assert metric_sum(server, "apiserver_request_total", resource="gadgets", code="410") == 1
    assert stored_versions(server) == ["v2"] * 7
    assert await crd_stored_versions(http) == ["v2"]


async def test_a_write_that_conflicts_with_another_writers_is_read_again_and_retried(
    server: APIServer, http: HTTPClient, kubeconfig: Path
) -> None:
    await install_with_old_objects(http, 7)

    async def label_the_first(page: ObjectList[Any], token: str | None) -> None:
        # Another writer changes the page's first object after the migration read it.
        name = page[0]["metadata"]["name"]
        body = {"metadata": {"labels": {"touched": "yes"}}}
        reply = await http.patch(f"{V1}/{name}", body, "application/merge-patch+json")
        assert reply.status == 200, reply.body

    async with ActsBetweenPages(load_kubeconfig(kubeconfig), label_the_first) as api:
        result = await migrate_storage(api, CRD_NAME, chunk_size=3)
    conflicts = metric_sum(
        server, "apiserver_request_total", verb="PUT", resource="gadgets", code="409"
    )
    assert result.conflicts == conflicts == 3
    # The other writer's change is kept: the retry wrote the object read again.
    assert (result.seen, result.rewritten + result.current) == (7, 7)
    assert result.trimmed
    assert stored_versions(server) == ["v2"] * 7
    touched = [
        s.obj["metadata"]["name"]
        for s in server.store.current(GADGETS)[0]
        if (s.obj["metadata"].get("labels") or {}).get("touched") == "yes"
    ]
    assert len(touched) == 3
    assert await crd_stored_versions(http) == ["v2"]


async def test_stored_versions_stay_when_the_storage_version_changes_meanwhile(
    server: APIServer, http: HTTPClient, kubeconfig: Path
) -> None:
    await install_with_old_objects(http, 7)

    async def storage_back_to_v1(page: ObjectList[Any], token: str | None) -> None:
        if token is None:
            return
        crd = (await http.get(f"{CRDS}/{CRD_NAME}")).json()
        for version in crd["spec"]["versions"]:
            version["storage"] = version["name"] == "v1"
        assert (await http.put(f"{CRDS}/{CRD_NAME}", crd)).status == 200

    async with ActsBetweenPages(load_kubeconfig(kubeconfig), storage_back_to_v1) as api:
        with pytest.raises(MigrationError) as failed:
            await migrate_storage(api, CRD_NAME, chunk_size=3)
    assert str(failed.value) == (
        f"the storage version of {CRD_NAME} changed from v2 to v1 during the migration; "
        "run it again"
    )
    # The objects written after the change went to v1: trimming to v2 would hide them.
    assert "v1" in stored_versions(server)
    assert await crd_stored_versions(http) == ["v1", "v2"]

    async with Client(load_kubeconfig(kubeconfig)) as api:
        again = await migrate_storage(api, CRD_NAME)
    assert again.storage_version == "v1" and again.trimmed
    assert stored_versions(server) == ["v1"] * 7
    assert await crd_stored_versions(http) == ["v1"]


async def kubeforge(*args: str, kubeconfig: Path) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kubeforge._cli.main",
        *args,
        "--kubeconfig",
        str(kubeconfig),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode or 0, out.decode(), err.decode()


async def test_the_command_shows_its_progress_and_what_it_changed(
    server: APIServer, http: HTTPClient, kubeconfig: Path
) -> None:
    await install_with_old_objects(http, 5)
    code, out, err = await kubeforge(
        "migrate-storage", "gadgets", "--chunk-size", "2", kubeconfig=kubeconfig
    )
    assert code == 0, err
    assert out.splitlines() == [
        f"migrating {CRD_NAME} to v2 (stored versions: v1, v2)",
        "  2/5 objects  rewritten 2  already v2 0",
        "  4/5 objects  rewritten 4  already v2 0",
        "  5/5 objects  rewritten 5  already v2 0",
        "status.storedVersions: v1, v2 -> v2",
    ]
    assert stored_versions(server) == ["v2"] * 5

    code, out, err = await kubeforge("migrate-storage", "nothing", kubeconfig=kubeconfig)
    assert code == 1
    assert err.strip() == "error: no CustomResourceDefinition is named or serves 'nothing'"
