"""Storage version migration: every object of a CRD rewritten in its storage version, then
`status.storedVersions` trimmed to that version, so older versions can leave the CRD.

    result = await migrate_storage(client, "ats.cnat.kubeforge.dev")

kube-storage-version-migrator's method, from any client: list the objects page by page and
write each back unchanged. An API server stores every write in the current storage version,
and compares the result with what it has stored (kube-apiserver compares the encoded bytes):
an object stored in an older version differs, so it is written again, in the storage version,
with a new resourceVersion; one already stored in the storage version does not, and nothing
happens to it. The same rule makes a migration safe to interrupt and run again: what was
rewritten is not rewritten twice. An object changed meanwhile (409) is read again and
retried; one deleted meanwhile (404) needs nothing; a list whose continue token expired
(410) starts over. Only when every object went through, and the storage version is still
the one migrated to, is `status.storedVersions` set to it alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubeforge._api.meta import GroupVersionKind
from kubeforge._client.client import Client
from kubeforge._client.errors import Conflict, Gone, NotFound

__all__ = [
    "MigrationError",
    "MigrationProgress",
    "find_crd",
    "migrate_storage",
]

log = logging.getLogger("kubeforge.storagemigration")

CRD_KIND = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
DEFAULT_CHUNK_SIZE = 500
_CONFLICT_RETRIES = 5


class MigrationError(Exception):
    """The migration could not finish; storedVersions is left as it was."""


@dataclass
class MigrationProgress:
    """Where a migration is: objects seen so far (of `total`, when the server says how
    many a list holds), of which `rewritten` were stored in another version, `current`
    already in the storage version, `gone` deleted meanwhile; `conflicts`, the writes another
    writer's change made stale (each read again and retried); `stored_versions` before the
    migration and, once `trimmed`, after it."""

    crd: str
    storage_version: str
    stored_versions_before: list[str] = field(default_factory=list)
    stored_versions: list[str] = field(default_factory=list)
    total: int | None = None
    seen: int = 0
    rewritten: int = 0
    current: int = 0
    gone: int = 0
    conflicts: int = 0
    trimmed: bool = False


def _storage_version(crd: dict[str, Any]) -> str:
    for version in (crd.get("spec") or {}).get("versions") or ():
        if version.get("storage"):
            return str(version["name"])
    raise MigrationError(f"{crd['metadata']['name']} has no storage version")


def _names(crd: dict[str, Any]) -> set[str]:
    """Every name the CRD's objects go by, lower case, alone and with the group."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    plain = {names.get("kind"), names.get("plural"), names.get("singular")}
    plain |= set(names.get("shortNames") or ())
    lowered = {str(n).lower() for n in plain if n}
    group = str(spec.get("group") or "").lower()
    return lowered | {f"{n}.{group}" for n in lowered}


async def find_crd(client: Client, name: str) -> dict[str, Any]:
    """The CRD a name designates: its own name (`ats.cnat.kubeforge.dev`), or its kind,
    plural, singular or short name, alone or followed by `.<group>` (MigrationError when
    none or several match)."""
    crds = await client.list(CRD_KIND)
    matches = [c for c in crds if c["metadata"]["name"] == name]
    if not matches:
        matches = [c for c in crds if name.lower() in _names(c)]
    if not matches:
        raise MigrationError(f"no CustomResourceDefinition is named or serves {name!r}")
    if len(matches) > 1:
        found = ", ".join(sorted(c["metadata"]["name"] for c in matches))
        raise MigrationError(f"{name!r} could be any of {found}: name the CRD")
    found_crd: dict[str, Any] = matches[0]
    return found_crd


async def migrate_storage(
    client: Client,
    crd_name: str,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    on_progress: Callable[[MigrationProgress], None] | None = None,
) -> MigrationProgress:
    """Rewrite every object of the CRD `crd_name` in its storage version and trim its
    `status.storedVersions` to that version; the final progress (MigrationError when it
    cannot finish). `on_progress` is told after each page."""
    crd = await client.get(CRD_KIND, crd_name)
    storage = _storage_version(crd)
    before = list((crd.get("status") or {}).get("storedVersions") or ())
    progress = MigrationProgress(crd_name, storage, before, list(before))
    spec = crd["spec"]
    gvk = GroupVersionKind(spec["group"], _version_to_use(crd, storage), spec["names"]["kind"])
    report = on_progress or (lambda p: None)
    await _rewrite_all(client, gvk, chunk_size, progress, report)
    await _trim(client, crd_name, storage, progress)
    return progress


def _version_to_use(crd: dict[str, Any], storage: str) -> str:
    """The storage version when it is served (nothing to convert), else a served one."""
    served = [v["name"] for v in crd["spec"]["versions"] if v.get("served")]
    if not served:
        raise MigrationError(f"{crd['metadata']['name']} serves no version")
    return storage if storage in served else str(served[0])


async def _rewrite_all(
    client: Client,
    gvk: GroupVersionKind,
    chunk_size: int,
    progress: MigrationProgress,
    report: Callable[[MigrationProgress], None],
) -> None:
    token: str | None = None
    while True:
        try:
            page = await client.list_page(
                gvk, all_namespaces=True, limit=chunk_size, continue_token=token
            )
        except Gone:
            # The continue token expired: start again from the first page; what was
            # rewritten is left alone this time.
            log.info("%s: the list expired; starting over", progress.crd)
            token = None
            progress.seen = progress.rewritten = progress.current = progress.gone = 0
            continue
        if token is None:
            remaining = page.remaining_item_count
            progress.total = len(page) + remaining if remaining is not None else None
        for obj in page:
            await _rewrite(client, obj, progress)
        if progress.total is not None:
            progress.total = max(progress.total, progress.seen)
        report(progress)
        token = page.continue_token
        if not token:
            if progress.total is None:
                progress.total = progress.seen
            return


async def _rewrite(client: Client, obj: dict[str, Any], progress: MigrationProgress) -> None:
    """Write one object back unchanged (a conflict reads it again and retries)."""
    progress.seen += 1
    meta = obj["metadata"]
    for _ in range(_CONFLICT_RETRIES):
        before = meta.get("resourceVersion")
        try:
            written = await client.update(obj)
        except NotFound:
            progress.gone += 1
            return
        except Conflict:
            progress.conflicts += 1
            try:
                obj = await client.get(
                    GroupVersionKind.of(obj["apiVersion"], obj["kind"]),
                    meta["name"],
                    namespace=meta.get("namespace"),
                )
            except NotFound:
                progress.gone += 1
                return
            meta = obj["metadata"]
            continue
        if written["metadata"].get("resourceVersion") == before:
            progress.current += 1
        else:
            progress.rewritten += 1
        return
    where = "/".join(p for p in (meta.get("namespace"), meta.get("name")) if p)
    raise MigrationError(f"{where} kept changing; {_CONFLICT_RETRIES} writes conflicted")


async def _trim(client: Client, crd_name: str, storage: str, progress: MigrationProgress) -> None:
    for _ in range(_CONFLICT_RETRIES):
        crd = await client.get(CRD_KIND, crd_name)
        now = _storage_version(crd)
        if now != storage:
            raise MigrationError(
                f"the storage version of {crd_name} changed from {storage} to {now} during the "
                "migration; run it again"
            )
        status = crd.setdefault("status", {})
        if status.get("storedVersions") == [storage]:
            progress.stored_versions = [storage]
            return
        status["storedVersions"] = [storage]
        try:
            await client.update_status(crd)
        except Conflict:
            continue
        progress.stored_versions = [storage]
        progress.trimmed = True
        return
    raise MigrationError(f"{crd_name} kept changing; could not update status.storedVersions")
