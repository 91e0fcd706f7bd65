"""Discovery lists exactly the built-in resources a Kubernetes 1.33 API server serves.

The reference is tests/data/kube-1.33-discovery.yaml (its header says where it comes from).
Both forms are compared: the legacy documents (/api, /apis, /api/v1, /apis/<g>/<v>) and the
aggregated lists (apidiscovery.k8s.io v2 and v2beta1).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.support import DATA, HTTPClient

REFERENCE = DATA / "kube-1.33-discovery.yaml"
_AGGREGATED = "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"

# (group, version) -> {resource: facts}; the facts compared for each resource.
Facts = dict[str, Any]


def _reference() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load(REFERENCE.read_text())["groups"]
    return groups


def _sub_kind(kind: str, group: str, version: str) -> tuple[str, str, str]:
    """`policy/v1/Eviction` or `Pod` -> (group, version, kind)."""
    parts = kind.split("/")
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    if len(parts) == 2:  # a core kind of another version
        return "", parts[0], parts[1]
    return group, version, kind


def _facts(kind: str, scope: str, resource: dict[str, Any], subresources: Any) -> Facts:
    """What is compared of one resource: its lists in order-free form."""
    return {
        "kind": kind,
        "scope": scope,
        "verbs": sorted(resource["verbs"]),
        "shortNames": sorted(resource.get("shortNames", [])),
        "categories": sorted(resource.get("categories", [])),
        "subresources": subresources,
    }


def _expected() -> dict[tuple[str, str], dict[str, Facts]]:
    out: dict[tuple[str, str], dict[str, Facts]] = {}
    for gv in _reference():
        group, version = gv["group"], gv["version"]
        resources: dict[str, Facts] = {}
        for r in gv["resources"]:
            subs = {
                s["subresource"]: (_sub_kind(s["kind"], group, version), sorted(s["verbs"]))
                for s in r.get("subresources", [])
            }
            resources[r["resource"]] = _facts(r["kind"], r["scope"], r, subs)
        out[(group, version)] = resources
    return out


def _from_legacy(doc: dict[str, Any], group: str, version: str) -> dict[str, Facts]:
    resources: dict[str, Facts] = {}
    subs: list[dict[str, Any]] = []
    for r in doc["resources"]:
        if "/" in r["name"]:
            subs.append(r)
            continue
        assert r["singularName"] == r["kind"].lower(), r
        scope = "Namespaced" if r["namespaced"] else "Cluster"
        resources[r["name"]] = _facts(r["kind"], scope, r, {})
    for s in subs:
        parent, name = s["name"].split("/", 1)
        kind = (s.get("group", group), s.get("version", version), s["kind"])
        assert s["namespaced"] == (resources[parent]["scope"] == "Namespaced"), s
        resources[parent]["subresources"][name] = (kind, sorted(s["verbs"]))
    return resources


def _from_aggregated(version_doc: dict[str, Any], group: str) -> dict[str, Facts]:
    version = version_doc["version"]
    resources: dict[str, Facts] = {}
    for r in version_doc["resources"]:
        kind = r["responseKind"]
        assert (kind["group"], kind["version"]) == (group, version), r
        assert r["singularResource"] == kind["kind"].lower(), r
        subs = {
            s["subresource"]: (_kind_of(s["responseKind"]), sorted(s["verbs"]))
            for s in r.get("subresources", [])
        }
        resources[r["resource"]] = _facts(kind["kind"], r["scope"], r, subs)
    return resources


def _kind_of(response_kind: dict[str, str]) -> tuple[str, str, str]:
    return response_kind["group"], response_kind["version"], response_kind["kind"]


def _diff(expected: dict[str, Facts], actual: dict[str, Facts]) -> list[str]:
    problems = [f"missing {name}" for name in expected if name not in actual]
    problems += [f"not served by kube 1.33: {name}" for name in actual if name not in expected]
    for name in expected.keys() & actual.keys():
        for key, want in expected[name].items():
            if actual[name][key] != want:
                problems.append(f"{name} {key}: {actual[name][key]!r} != {want!r}")
    return problems


async def test_legacy_discovery_matches_kube_1_33(http: HTTPClient) -> None:
    expected = _expected()
    groups = (await http.get("/apis")).json()["groups"]
    # Every group, in the order kube lists them, each with its versions preferred first.
    wanted_groups: dict[str, list[str]] = {}
    for group, version in expected:
        if group:
            wanted_groups.setdefault(group, []).append(version)
    assert [(g["name"], [v["version"] for v in g["versions"]]) for g in groups] == list(
        wanted_groups.items()
    )
    problems: list[str] = []
    for (group, version), resources in expected.items():
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        reply = await http.get(path)
        assert reply.status == 200, path
        actual = _from_legacy(reply.json(), group, version)
        problems += [f"{group}/{version}: {p}" for p in _diff(resources, actual)]
    assert problems == []


@pytest.mark.parametrize("discovery_version", ["v2", "v2beta1"])
async def test_aggregated_discovery_matches_kube_1_33(
    http: HTTPClient, discovery_version: str
) -> None:
    expected = _expected()
    accept = {"Accept": _AGGREGATED.format(v=discovery_version)}
    served: dict[tuple[str, str], dict[str, Facts]] = {}
    for path in ("/api", "/apis"):
        doc = (await http.get(path, headers=accept)).json()
        assert doc["apiVersion"] == f"apidiscovery.k8s.io/{discovery_version}"
        for item in doc["items"]:
            group = item["metadata"].get("name", "")
            for version_doc in item["versions"]:
                served[(group, version_doc["version"])] = _from_aggregated(version_doc, group)
    assert sorted(served) == sorted(expected)
    problems: list[str] = []
    for key, resources in expected.items():
        problems += [f"{key}: {p}" for p in _diff(resources, served[key])]
    assert problems == []
