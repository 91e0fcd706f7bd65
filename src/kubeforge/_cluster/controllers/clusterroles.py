"""The cluster role aggregation controller: ClusterRoles with an `aggregationRule` get the
rules of every other ClusterRole their selectors match.

As kube-controller-manager's clusterrole-aggregation controller: the union of the matched
roles' rules, in the order of the roles' names, each rule once; a change to any ClusterRole
recomputes every aggregated role, and rules written by hand into an aggregated role are
replaced.
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.access import meta_of, name_of
from kubeforge._api.machinery.selectors import selector_from_dict
from kubeforge._client.errors import NotFound
from kubeforge._runtime.manager import Manager
from kubeforge._runtime.reconcile import Reconciler, Request, Result

__all__ = ["AggregationController", "aggregated_rules", "setup"]

CLUSTER_ROLE = "rbac.authorization.k8s.io/v1/ClusterRole"


def aggregated_rules(role: dict[str, Any], roles: list[dict[str, Any]]) -> list[Any]:
    """The rules `role`'s aggregationRule collects from `roles`."""
    selectors = [
        selector_from_dict(s)
        for s in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or ()
        if isinstance(s, dict)
    ]
    name = name_of(role)
    rules: list[Any] = []
    for other in sorted(roles, key=name_of):
        if name_of(other) == name:
            continue
        labels = meta_of(other).get("labels") or {}
        if not any(selector.matches(labels) for selector in selectors):
            continue
        for rule in other.get("rules") or ():
            if rule not in rules:
                rules.append(rule)
    return rules


class AggregationController(Reconciler):
    """Keeps one aggregated ClusterRole's rules equal to what its selectors collect."""

    async def reconcile(self, request: Request) -> Result | None:
        try:
            role = await self.client.get(CLUSTER_ROLE, request.name)
        except NotFound:
            return None
        if not role.get("aggregationRule"):
            return None
        roles = await self.client.list(CLUSTER_ROLE)
        rules = aggregated_rules(role, list(roles))
        if (role.get("rules") or []) != rules:
            await self.client.patch(CLUSTER_ROLE, request.name, {"rules": rules})
        return None


def setup(manager: Manager) -> None:
    """Register the aggregation controller with `manager`."""

    def aggregating_roles(_changed: Any) -> list[Request]:
        # Any role may now match (or stop matching) a selector: recompute every aggregate.
        return [
            Request("", name_of(role))
            for role in manager.cache.list(CLUSTER_ROLE)
            if role.get("aggregationRule")
        ]

    (
        manager.controller()
        .named("clusterrole-aggregation")
        .for_(CLUSTER_ROLE)
        .watches(CLUSTER_ROLE, aggregating_roles)
        .with_options(max_concurrent_reconciles=1)
        .complete(AggregationController())
    )
