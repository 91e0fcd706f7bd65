"""The table of served resources, and the discovery documents built from it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from kubeforge.api.machinery.versions import version_priority
from kubeforge.apiserver.builtin_types import GROUP_ORDER, builtin_types
from kubeforge.apiserver.resource import GroupResource, ResourceType

__all__ = ["Registry", "version_priority"]


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

    # Discovery documents ---------------------------------------------------------------

    def api_versions(self, server_address: str) -> dict[str, Any]:
        """`/api`."""
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
            ],
        }

    def api_group(self, group: str) -> dict[str, Any] | None:
        """`/apis/<group>`, or None when the group is not served."""
        for name, versions in self.groups():
            if name == group and name:
                entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
                return {
                    "kind": "APIGroup",
                    "apiVersion": "v1",
                    "name": name,
                    "versions": entries,
                    "preferredVersion": entries[0],
                }
        return None

    def api_group_list(self) -> dict[str, Any]:
        """`/apis`."""
        groups = []
        for name, _ in self.groups():
            if name:
                group = self.api_group(name)
                assert group is not None
                del group["kind"], group["apiVersion"]
                groups.append(group)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        """`/api/v1` or `/apis/<group>/<version>`, or None when not served."""
        types = sorted(
            (rt for rt in self._by_gvr.values() if rt.group == group and rt.version == version),
            key=lambda rt: rt.plural,
        )
        if not types:
            return None
        resources: list[dict[str, Any]] = []
        for rt in types:
            entry: dict[str, Any] = {
                "name": rt.plural,
                "singularName": rt.singular,
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": sorted(rt.verbs),
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            resources.append(entry)
            for sub in sorted(rt.subresources, key=lambda s: s.name):
                sub_entry: dict[str, Any] = {
                    "name": f"{rt.plural}/{sub.name}",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "kind": sub.kind or rt.kind,
                    "verbs": sorted(sub.verbs),
                }
                if sub.group is not None:
                    sub_entry["group"] = sub.group
                    sub_entry["version"] = sub.version
                resources.append(sub_entry)
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    def aggregated(self, legacy: bool, api_version: str) -> dict[str, Any]:
        """Aggregated discovery (`apidiscovery.k8s.io` v2 or v2beta1) for `/api` or `/apis`."""
        items = []
        for name, versions in self.groups():
            if legacy != (name == ""):
                continue
            version_docs = []
            for v in versions:
                resources = []
                for rt in sorted(
                    (t for t in self._by_gvr.values() if t.group == name and t.version == v),
                    key=lambda t: t.plural,
                ):
                    doc: dict[str, Any] = {
                        "resource": rt.plural,
                        "responseKind": {"group": rt.group, "version": v, "kind": rt.kind},
                        "scope": "Namespaced" if rt.namespaced else "Cluster",
                        "singularResource": rt.singular,
                        "verbs": sorted(rt.verbs),
                    }
                    if rt.short_names:
                        doc["shortNames"] = list(rt.short_names)
                    if rt.categories:
                        doc["categories"] = list(rt.categories)
                    if rt.subresources:
                        doc["subresources"] = [
                            {
                                "subresource": s.name,
                                "responseKind": {
                                    "group": rt.group if s.group is None else s.group,
                                    "version": v if s.version is None else s.version,
                                    "kind": s.kind or rt.kind,
                                },
                                "verbs": sorted(s.verbs),
                            }
                            for s in sorted(rt.subresources, key=lambda s: s.name)
                        ]
                    resources.append(doc)
                version_docs.append({"version": v, "resources": resources, "freshness": "Current"})
            items.append({"metadata": {"name": name}, "versions": version_docs})
        return {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": api_version,
            "metadata": {},
            "items": items,
        }
