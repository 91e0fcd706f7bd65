"""RBAC policy rules: matching a request, and one rule set covering another.

Semantics follow Kubernetes' RBAC (rbac/v1 evaluation helpers and the escalation checks of
the rbac registry): `*` matches any verb, group, resource or URL; `*/<sub>` matches that
subresource of any resource; a resource without subresource does not match its
subresources; rules with resourceNames never match a request without a name; URLs ending
in `*` match by prefix.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubeforge._apiserver.auth.attributes import Attributes

__all__ = ["Rule", "compact", "covers", "parse_rules", "rule_string", "uncovered"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One PolicyRule, its lists kept as given (order matters only for display)."""

    verbs: tuple[str, ...]
    groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()

    def allows(self, attrs: Attributes) -> bool:
        verbs = self.verbs
        if attrs.verb not in verbs and "*" not in verbs:
            return False
        if not attrs.resource_request:
            return _url_matches(self.urls, attrs.path)
        groups = self.groups
        if attrs.group not in groups and "*" not in groups:
            return False
        if not _resource_matches(self.resources, attrs.resource, attrs.subresource):
            return False
        return not self.names or attrs.name in self.names

    def to_dict(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {"verbs": list(self.verbs)}
        if self.groups or self.resources:
            out["apiGroups"] = list(self.groups)
        if self.resources:
            out["resources"] = list(self.resources)
        if self.names:
            out["resourceNames"] = list(self.names)
        if self.urls:
            out["nonResourceURLs"] = list(self.urls)
        return out


def _resource_matches(resources: tuple[str, ...], resource: str, subresource: str) -> bool:
    if "*" in resources:
        return True
    if not subresource:
        return resource in resources
    if f"{resource}/{subresource}" in resources:
        return True
    return f"*/{subresource}" in resources


def _url_matches(urls: tuple[str, ...], path: str) -> bool:
    for url in urls:
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, str))


def parse_rules(items: Any) -> tuple[Rule, ...]:
    """The rules of a Role or ClusterRole (`rules` as stored)."""
    if not isinstance(items, list):
        return ()
    rules = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        rules.append(
            Rule(
                verbs=_strings(item.get("verbs")),
                groups=_strings(item.get("apiGroups")),
                resources=_strings(item.get("resources")),
                names=_strings(item.get("resourceNames")),
                urls=_strings(item.get("nonResourceURLs")),
            )
        )
    return tuple(rules)


# Coverage (escalation prevention) ---------------------------------------------------------


def _atoms(rule: Rule) -> Iterator[Rule]:
    """A rule broken into rules of one verb, group, resource and name (or one verb and URL)."""
    for verb in rule.verbs:
        for url in rule.urls:
            yield Rule((verb,), urls=(url,))
        for group in rule.groups:
            for resource in rule.resources:
                if rule.names:
                    for name in rule.names:
                        yield Rule((verb,), (group,), (resource,), (name,))
                else:
                    yield Rule((verb,), (group,), (resource,))


def _has(owner: tuple[str, ...], value: str) -> bool:
    return "*" in owner or value in owner


def _rule_covers(owner: Rule, atom: Rule) -> bool:
    if not _has(owner.verbs, atom.verbs[0]):
        return False
    if atom.urls:
        url = atom.urls[0]
        for own in owner.urls:
            if own == "*" or own == url or (own.endswith("*") and url.startswith(own[:-1])):
                return True
        return False
    if not _has(owner.groups, atom.groups[0]):
        return False
    resource = atom.resources[0]
    if not _has(owner.resources, resource):
        sub = resource.partition("/")[2]
        if not (sub and f"*/{sub}" in owner.resources):
            return False
    if not owner.names:
        return True
    return bool(atom.names) and atom.names[0] in owner.names


def uncovered(owner: Iterable[Rule], wanted: Iterable[Rule]) -> list[Rule]:
    """The single-permission rules of `wanted` that no rule of `owner` covers."""
    owned = list(owner)
    missing: list[Rule] = []
    for rule in wanted:
        for atom in _atoms(rule):
            if not any(_rule_covers(o, atom) for o in owned):
                missing.append(atom)
    return missing


def covers(owner: Iterable[Rule], wanted: Iterable[Rule]) -> bool:
    return not uncovered(owner, wanted)


def compact(rules: Iterable[Rule]) -> list[Rule]:
    """Join single-group, single-resource rules that differ only in their verbs."""
    joined: dict[tuple[str, str], list[str]] = {}
    others: list[Rule] = []
    for rule in rules:
        if len(rule.groups) == 1 and len(rule.resources) == 1 and not rule.names and not rule.urls:
            verbs = joined.setdefault((rule.groups[0], rule.resources[0]), [])
            verbs.extend(v for v in rule.verbs if v not in verbs)
        else:
            others.append(rule)
    out = [Rule(tuple(v), (g,), (r,)) for (g, r), v in joined.items()]
    return out + others


def _quoted(values: tuple[str, ...]) -> str:
    return (
        "["
        + " ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
        + "]"
    )


def rule_string(rule: Rule) -> str:
    """A rule as the API server prints it: `{APIGroups:["apps"], Resources:["x"], Verbs:[...]}`."""
    parts = []
    if rule.groups:
        parts.append(f"APIGroups:{_quoted(rule.groups)}")
    if rule.resources:
        parts.append(f"Resources:{_quoted(rule.resources)}")
    if rule.urls:
        parts.append(f"NonResourceURLs:{_quoted(rule.urls)}")
    if rule.names:
        parts.append(f"ResourceNames:{_quoted(rule.names)}")
    parts.append(f"Verbs:{_quoted(rule.verbs)}")
    return "{" + ", ".join(parts) + "}"
