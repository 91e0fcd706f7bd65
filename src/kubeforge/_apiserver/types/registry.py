"""The table of served resources: every group/version/plural the server serves, built in or
defined by a CRD (the discovery documents made from it are `discovery/documents.py`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kubeforge._api.machinery.versions import version_priority
from kubeforge._apiserver.types.builtin_types import GROUP_ORDER, builtin_types
from kubeforge._apiserver.types.resource import GroupResource, ResourceType

__all__ = ["Registry"]


class Registry:
    """Resources by group/version/plural; CRD-defined types come and go at run time."""

    def __init__(self, types: Iterable[ResourceType] | None = None) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._generation = 0
        for rt in builtin_types() if types is None else types:
            self.add(rt)

    @property
    def generation(self) -> int:
        """Bumped on every change; caches of derived documents key on it."""
        return self._generation

    def add(self, rt: ResourceType) -> None:
        self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        self._generation += 1

    def remove(self, group: str, version: str, plural: str) -> None:
        if self._by_gvr.pop((group, version, plural), None) is not None:
            self._generation += 1

    def remove_crd(self, crd_name: str) -> None:
        """Forget every version served for one CRD."""
        for key, rt in list(self._by_gvr.items()):
            if rt.crd_name == crd_name:
                del self._by_gvr[key]
        self._generation += 1

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        for rt in self._by_gvr.values():
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None

    def versions_of(self, gr: GroupResource) -> list[ResourceType]:
        """All served types whose objects live in the storage of `gr`."""
        return [rt for rt in self._by_gvr.values() if rt.group_resource == gr]

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._by_gvr.values())

    def groups(self) -> list[tuple[str, list[str]]]:
        """(group, versions in priority order) in discovery order."""
        versions: dict[str, set[str]] = {}
        for rt in self._by_gvr.values():
            versions.setdefault(rt.group, set()).add(rt.version)
        order = {g: i for i, g in enumerate(GROUP_ORDER)}
        names = sorted(versions, key=lambda g: (order.get(g, len(order)), g))
        return [(g, sorted(versions[g], key=version_priority)) for g in names]

    def has_group_version(self, group: str, version: str) -> bool:
        return any(rt.group == group and rt.version == version for rt in self._by_gvr.values())

    def has_group(self, group: str) -> bool:
        return any(rt.group == group for rt in self._by_gvr.values())
