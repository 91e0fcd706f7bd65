"""The discovery documents: `/api`, `/apis`, each group and group version, and aggregated
discovery (apidiscovery.k8s.io v2 and v2beta1), as kube-apiserver serves them from the
resources it serves (k8s.io/apiserver pkg/endpoints/discovery)."""

from __future__ import annotations

from typing import Any

from kubeforge._apiserver.types.registry import Registry

__all__ = ["aggregated", "api_group", "api_group_list", "api_resource_list", "api_versions"]


def api_versions(server_address: str) -> dict[str, Any]:
    """`/api`."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    """`/apis/<group>`, or None when the group is not served."""
    for name, versions in registry.groups():
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


def api_group_list(registry: Registry) -> dict[str, Any]:
    """`/apis`."""
    groups = []
    for name, _ in registry.groups():
        if name:
            group = api_group(registry, name)
            assert group is not None
            del group["kind"], group["apiVersion"]
            groups.append(group)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """`/api/v1` or `/apis/<group>/<version>`, or None when not served."""
    types = sorted(
        (rt for rt in registry if rt.group == group and rt.version == version),
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


def aggregated(registry: Registry, legacy: bool, api_version: str) -> dict[str, Any]:
    """Aggregated discovery (`apidiscovery.k8s.io` v2 or v2beta1) for `/api` or `/apis`."""
    items = []
    for name, versions in registry.groups():
        if legacy != (name == ""):
            continue
        version_docs = []
        for v in versions:
            resources = []
            for rt in sorted(
                (t for t in registry if t.group == name and t.version == v),
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
