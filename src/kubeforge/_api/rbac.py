"""RBAC rules declared on reconcilers -> the ClusterRole and Roles a controller runs with.

    @rbac(groups=["apps"], resources=["deployments"], verbs=["get", "list", "watch"])
    @rbac(groups=["apps"], resources=["deployments/status"], verbs=["get", "update", "patch"])
    class MachineReconciler(kubeforge.Reconciler): ...

This is controller-gen's `+kubebuilder:rbac` marker as a class decorator. Rules without a
namespace go into the ClusterRole (`manager-role` unless a rule names another role); rules
with one go into a Role of that name in that namespace. `role_manifests` merges and orders
rules the way controller-gen does, so a project moving between the two keeps its role.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from kubeforge._api.crd import dump_yaml

__all__ = [
    "EVENT_RULES",
    "LEADER_ELECTION_RULES",
    "RBAC_GROUP",
    "RbacRule",
    "normalize_rules",
    "rbac",
    "role_manifests",
    "roles_yaml",
    "rules_of",
    "runtime_rules",
    "shard_rules",
    "watch_rules",
]

C = TypeVar("C", bound=type)

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_API_VERSION = f"{RBAC_GROUP}/v1"
DEFAULT_ROLE_NAME = "manager-role"


@dataclass(frozen=True, slots=True)
class RbacRule:
    """One permission: `verbs` on `resources` of `groups` (or on non-resource `urls`).

    `namespace` None puts the rule in the ClusterRole; `role_name` None uses the default role.
    """

    groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    namespace: str | None = None
    role_name: str | None = None


def _strings(value: str | Iterable[str] | None, what: str) -> tuple[str, ...]:
    # A lone string is one item: `groups="apps"` must not become ("a", "p", "p", "s").
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    items = tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"rbac {what} must be strings, got {item!r}")
    return items


def rbac(
    *,
    groups: str | Iterable[str] | None = None,
    resources: str | Iterable[str] | None = None,
    verbs: str | Iterable[str],
    resource_names: str | Iterable[str] | None = None,
    urls: str | Iterable[str] | None = None,
    namespace: str | None = None,
    role_name: str | None = None,
) -> Callable[[C], C]:
    """Declare that a reconciler needs a permission (stackable; `+kubebuilder:rbac`).

    `groups` defaults to the core group ("") for resource rules; "core" also means it.
    Subresources are written `deployments/status`; `verbs=["*"]` grants every verb.
    """
    rule = RbacRule(
        groups=_strings(groups, "groups"),
        resources=_strings(resources, "resources"),
        verbs=_strings(verbs, "verbs"),
        resource_names=_strings(resource_names, "resource_names"),
        urls=_strings(urls, "urls"),
        namespace=namespace or None,
        role_name=role_name or None,
    )
    if not rule.verbs:
        raise ValueError("rbac needs at least one verb")
    if rule.urls:
        # The API server rejects rules mixing both, and URLs in namespaced Roles.
        if rule.resources or rule.groups:
            raise ValueError("an rbac rule names either resources (of groups) or urls, not both")
        if rule.namespace is not None:
            raise ValueError("rbac urls need a cluster role: drop the namespace")
    elif not rule.resources:
        raise ValueError("rbac needs resources (or urls)")
    elif groups is None:
        rule = replace(rule, groups=("",))
    elif not rule.groups:
        raise ValueError("an rbac rule for resources needs at least one group ('' is core)")

    def decorate(cls: C) -> C:
        # Rules a base class declared stay: a subclass does at least what its base does.
        inherited: tuple[RbacRule, ...] = getattr(cls, "__kubeforge_rbac__", ())
        cls.__kubeforge_rbac__ = (rule, *inherited)  # type: ignore[attr-defined]
        return cls

    return decorate


def rules_of(cls: Any) -> tuple[RbacRule, ...]:
    """The rules declared with @rbac on a class (and its bases), in source order."""
    rules: tuple[RbacRule, ...] = getattr(cls, "__kubeforge_rbac__", ())
    return rules


# What every controller needs at run time --------------------------------------------------

LEADER_ELECTION_RULES: tuple[RbacRule, ...] = (
    RbacRule(
        groups=("coordination.k8s.io",),
        resources=("leases",),
        verbs=("get", "list", "watch", "create", "update", "patch", "delete"),
    ),
)
"""The leader-election lock is a Lease."""

EVENT_RULES: tuple[RbacRule, ...] = (
    RbacRule(groups=("",), resources=("events",), verbs=("create", "patch")),
    RbacRule(groups=("events.k8s.io",), resources=("events",), verbs=("create", "patch")),
)
"""Recording events, through events.k8s.io/v1 or the core v1 API."""


def watch_rules(resources: Iterable[tuple[str, str]]) -> list[RbacRule]:
    """get/list/watch on each (group, plural) an informer lists and watches."""
    return [
        RbacRule(groups=(group,), resources=(plural,), verbs=("get", "list", "watch"))
        for group, plural in resources
    ]


def shard_rules(resources: Iterable[tuple[str, str]]) -> list[RbacRule]:
    """patch on each (group, plural) a sharded controller's ring holds: the sharder labels
    the objects for their shards, and a shard lets a drained one go by removing its labels."""
    return [
        RbacRule(groups=(group,), resources=(plural,), verbs=("patch",))
        for group, plural in resources
    ]


def runtime_rules(
    watched: Iterable[tuple[str, str]] = (), sharded: Iterable[tuple[str, str]] = ()
) -> list[RbacRule]:
    """Leader election (and shard Leases), events, reading the watched (group, plural)
    resources, and labelling the sharded ones."""
    return [*LEADER_ELECTION_RULES, *EVENT_RULES, *watch_rules(watched), *shard_rules(sharded)]


# Merging and ordering (controller-gen's NormalizeRules) ---------------------------------------

_Set = tuple[str, ...]
# groups, resources, resource names, urls: what a policy rule applies to.
_Key = tuple[_Set, _Set, _Set, _Set]


def _sorted_set(items: Iterable[str]) -> _Set:
    return tuple(sorted(set(items)))


def _with(key: _Key, field: int, value: _Set) -> _Key:
    parts = list(key)
    parts[field] = value
    return (parts[0], parts[1], parts[2], parts[3])


def _merge(rules: dict[_Key, _Set], field: int) -> dict[_Key, _Set]:
    """Join rules that differ only in `field` of their key (and have the same verbs)."""
    joined: dict[tuple[_Key, _Set], set[str]] = {}
    for key, verbs in rules.items():
        joined.setdefault((_with(key, field, ()), verbs), set()).update(key[field])
    merged: dict[_Key, _Set] = {}
    for (rest, verbs), values in joined.items():
        key = _with(rest, field, _sorted_set(values))
        previous = merged.get(key)
        # controller-gen keeps one of two colliding rules at random; keeping both verb
        # sets instead never drops a permission.
        merged[key] = verbs if previous is None else _sorted_set((*previous, *verbs))
    return merged


def normalize_rules(rules: Iterable[RbacRule]) -> list[dict[str, list[str]]]:
    """Policy rules merged and sorted exactly as controller-gen writes them.

    One rule per resource; rules on the same groups/resources/names/urls join their verbs;
    then rules with equal verbs join resources, then groups, then urls. Rules are sorted by
    groups, resources, names and urls; a rule holding `*` keeps only `*`.
    """
    by_key: dict[_Key, set[str]] = {}
    for rule in rules:
        groups = _sorted_set("" if g == "core" else g for g in rule.groups)
        names = _sorted_set(rule.resource_names)
        urls = _sorted_set(rule.urls)
        for resource in rule.resources or (None,):
            key: _Key = (groups, () if resource is None else (resource,), names, urls)
            by_key.setdefault(key, set()).update(rule.verbs)
    merged = {key: _sorted_set(verbs) for key, verbs in by_key.items()}
    for field in (1, 0, 3):  # resources, then groups, then urls
        merged = _merge(merged, field)

    def order(key: _Key) -> str:
        return " + ".join("&".join(part) for part in key)

    policy: list[dict[str, list[str]]] = []
    for key in sorted(merged, key=order):
        groups, resources, names, urls = key
        verbs = merged[key]
        entry: dict[str, list[str]] = {}
        if groups:
            entry["apiGroups"] = list(groups)
        if urls:
            entry["nonResourceURLs"] = list(urls)
        if names:
            entry["resourceNames"] = list(names)
        if resources:
            entry["resources"] = list(resources)
        entry["verbs"] = ["*"] if "*" in verbs else list(verbs)
        policy.append(entry)
    return policy


def role_manifests(
    rules: Iterable[RbacRule], *, role_name: str = DEFAULT_ROLE_NAME
) -> list[dict[str, Any]]:
    """The ClusterRole(s) and namespaced Roles for `rules`, ordered by namespace then name."""
    by_role: dict[tuple[str, str], list[RbacRule]] = {}
    for rule in rules:
        by_role.setdefault((rule.namespace or "", rule.role_name or role_name), []).append(rule)
    manifests: list[dict[str, Any]] = []
    for namespace, name in sorted(by_role):
        policy = normalize_rules(by_role[namespace, name])
        if not policy:
            continue
        metadata = {"name": name, "namespace": namespace} if namespace else {"name": name}
        manifests.append(
            {
                "apiVersion": RBAC_API_VERSION,
                "kind": "Role" if namespace else "ClusterRole",
                "metadata": metadata,
                "rules": policy,
            }
        )
    return manifests


# An empty list item: in role manifests, only the core API group.
_EMPTY_ITEM = re.compile(r"^(\s*- )''$", re.MULTILINE)


def roles_yaml(manifests: Sequence[dict[str, Any]]) -> str:
    """role.yaml: the manifests as `---` separated YAML documents, keys sorted.

    The core group is written `""`, as controller-gen writes it, so a role.yaml reads the
    same whichever tool generated it.
    """
    parts = []
    for manifest in manifests:
        text = _EMPTY_ITEM.sub(r'\1""', dump_yaml(manifest))
        parts.append(text if text.startswith("---") else "---\n" + text)
    return "".join(parts)
