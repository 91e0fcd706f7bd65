"""Removing what a test made on a cluster that outlives it (KUBEFORGE_USE_EXISTING_CLUSTER).

A test on an existing cluster works in a namespace of its own (docs/decisions/0039): deleting
that namespace removes what the test made there, built-in objects and the project's alike,
through the cluster's own namespace controller, without waiting for the namespace (on a real
cluster a namespace with pods takes as long as their graceful termination). What a namespace
does not hold, objects of the project's cluster-scoped kinds, is found by difference: the
objects of those kinds that were not there when the environment started. The project's
objects, in the namespace and out of it, are deleted one by one and waited for, so the
managers of the next test, which watch every namespace, never see them; once the project's
controllers no longer run, their finalizers are taken off, since nothing else would (the
namespace would stay Terminating).

Only the project's kinds (the CRDs the environment installed) are looked at, and only in the
test's namespace or cluster-wide for cluster-scoped kinds, so suites sharing a cluster do not
touch each other's objects.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubeforge._client.client import Client
from kubeforge._client.errors import Conflict, NotFound
from kubeforge._testing.waiting import eventually

__all__ = ["ProjectKind", "TestObjects", "project_kinds"]


@dataclass(frozen=True)
class ProjectKind:
    """A kind an installed CRD defines, read in its storage version (no conversion)."""

    kind: str  # group/version/Kind
    namespaced: bool


def project_kinds(documents: Iterable[dict[str, Any]]) -> list[ProjectKind]:
    """The kinds the CRD documents define."""
    kinds = []
    for doc in documents:
        spec = doc.get("spec") or {}
        versions = spec.get("versions") or []
        storage = next((v for v in versions if v.get("storage")), versions[0] if versions else {})
        kind = (spec.get("names") or {}).get("kind")
        if spec.get("group") and storage.get("name") and kind:
            namespaced = spec.get("scope", "Namespaced") == "Namespaced"
            kinds.append(ProjectKind(f"{spec['group']}/{storage['name']}/{kind}", namespaced))
    return kinds


@dataclass
class TestObjects:
    """What a test made on an existing cluster: its namespace (when the environment created
    it) and the objects of the project's cluster-scoped kinds made since `snapshot()`."""

    __test__ = False  # not a pytest test class

    client: Client
    kinds: list[ProjectKind]
    namespace: str | None = None
    _before: dict[str, set[str]] = field(default_factory=dict)
    _removed: bool = False

    @property
    def _cluster_scoped(self) -> list[ProjectKind]:
        return [k for k in self.kinds if not k.namespaced]

    async def snapshot(self) -> None:
        """Note the objects of the project's cluster-scoped kinds that exist now."""
        for kind in self._cluster_scoped:
            self._before[kind.kind] = {uid for uid, _ in await self._objects(kind, None)}

    async def _objects(self, kind: ProjectKind, namespace: str | None) -> list[tuple[str, str]]:
        try:
            found = await self.client.list_metadata(kind.kind, namespace=namespace)
        except NotFound:  # the CRD was deleted meanwhile
            return []
        return [(str(o.metadata.uid), str(o.metadata.name)) for o in found]

    async def _made(self) -> dict[ProjectKind, list[tuple[str, str]]]:
        """The test's objects of the project's kinds that still exist."""
        made: dict[ProjectKind, list[tuple[str, str]]] = {}
        for kind in self.kinds:
            if kind.namespaced:
                objects = await self._objects(kind, self.namespace) if self.namespace else []
            elif (before := self._before.get(kind.kind)) is not None:
                objects = [o for o in await self._objects(kind, None) if o[0] not in before]
            else:
                objects = []  # no snapshot (the environment failed to start): nothing is ours
            if objects:
                made[kind] = objects
        return made

    async def remove(self, *, release: bool, timeout: float = 30.0) -> None:
        """Delete the namespace and the cluster-scoped objects made since the snapshot, then
        wait until the project's objects among them are gone (once; later calls do nothing).

        With `release` no controller of the project runs any more, so nothing would take
        its finalizers off those objects: the environment does, and they go. Otherwise the
        running controllers do their finalizers' work first; what is still there after
        `timeout` seconds is named in a warning, and released then."""
        if self._removed:
            return
        self._removed = True
        if self.namespace is not None:
            try:
                await self.client.delete("v1/Namespace", self.namespace)
            except NotFound:
                pass
        # The project's objects one by one too, the namespace's included: so they go even
        # where no namespace controller runs, and the wait below is short.
        for kind, objects in (await self._made()).items():
            namespace = self.namespace if kind.namespaced else None
            for uid, name in objects:
                try:
                    await self.client.delete(
                        kind.kind, name, namespace=namespace, preconditions={"uid": uid}
                    )
                except (NotFound, Conflict):
                    continue
        if release:
            await self._release()
        if await self._gone_within(timeout):
            return
        left = await self._made()
        names = [f"{k.kind} {name}" for k, objects in left.items() for _, name in objects]
        warnings.warn(
            f"still there {timeout:g} s after the test, their finalizers removed now: "
            + ", ".join(names),
            stacklevel=3,
        )
        if not release:
            await self._release()
            await self._gone_within(timeout)

    async def _gone_within(self, timeout: float) -> bool:
        """Whether the test's objects of the project's kinds are gone within `timeout` s."""

        async def gone() -> bool:
            left = await self._made()
            assert not left, left
            return True

        try:
            await eventually(gone, timeout=timeout, interval=0.1)
        except AssertionError:
            return False
        return True

    async def _release(self) -> None:
        """Take the finalizers off the test's objects of the project's kinds."""
        for kind, objects in (await self._made()).items():
            namespace = self.namespace if kind.namespaced else None
            for _, name in objects:
                patch = {"metadata": {"finalizers": None}}
                try:
                    await self.client.patch(kind.kind, name, patch, namespace=namespace)
                except NotFound:
                    continue
