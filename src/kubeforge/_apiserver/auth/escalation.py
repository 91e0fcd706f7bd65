"""Escalation prevention: nobody grants, through a role or a binding, what they do not hold.

Creating or updating a Role or ClusterRole is allowed to system:masters, to whoever may
`escalate` roles (asked about the request's own name, which a create does not have yet), and
to a user whose own rules (in the role's namespace; cluster-wide for a ClusterRole) cover
every rule of the role. Setting, changing or removing a ClusterRole's aggregationRule, which
can gather any rule, also needs every right there is. Creating or updating a binding is
allowed to system:masters, to whoever may `bind` the referenced role, and to a user whose own
rules cover the role's. Refusals are 403 with kube-apiserver's message, listing the missing
permissions one per line. Follows kubernetes pkg/registry/rbac/escalation_check.go and the
policybased storages of pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeforge._apiserver.auth.attributes import Attributes
from kubeforge._apiserver.auth.rbac import RBAC_GROUP, RBACAuthorizer
from kubeforge._apiserver.auth.rules import Rule, compact, parse_rules, rule_string, uncovered
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.user import UserInfo

__all__ = ["EscalationCheck"]

_ROLE_KINDS = {"roles": "Role", "clusterroles": "ClusterRole"}
_BINDING_KINDS = {"rolebindings", "clusterrolebindings"}
# Only these may change on a binding without a new check (garbage collection's fields).
_GC_FIELDS = ("ownerReferences", "finalizers")
_FULL_AUTHORITY = (Rule(("*",), ("*",), ("*",)), Rule(("*",), urls=("*",)))


class EscalationCheck:
    """An admitter of the write pipeline (handlers/writes.py) for writes of RBAC objects."""

    def __init__(
        self, rbac: RBACAuthorizer, allowed: Callable[[Attributes], tuple[bool, str]]
    ) -> None:
        self.rbac = rbac
        self.allowed = allowed

    def __call__(self, call: Call, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        rt = call.rt
        user = call.user
        if rt.group != RBAC_GROUP or user is None or user.privileged:
            return
        if call.info.subresource:
            return
        namespace = call.namespace
        name = str(obj["metadata"].get("name") or "")
        if rt.plural in _ROLE_KINDS:
            # RoleEscalationAuthorized asks with the request's name: none on a create, so
            # `escalate` limited by resourceNames never lets a role of that name be created.
            if self._may(user, "escalate", rt.plural, namespace, call.name):
                return
            if old is not None and _only_gc_changes(old, obj):
                return
            self._require(user, namespace, parse_rules(obj.get("rules")), rt.plural, name)
            # As clusterrole/policybased/storage.go: an aggregation rule can gather anything
            # and, removed or changed, stop gathering what it did; the old one counts too.
            if _aggregates(obj) or (old is not None and _aggregates(old)):
                owned, _ = self.rbac.rules_for(user, namespace)
                if uncovered(owned, _FULL_AUTHORITY):
                    raise StatusError.forbidden(
                        RBAC_GROUP,
                        rt.plural,
                        name,
                        "must have cluster-admin privileges to use the aggregationRule",
                    )
        elif rt.plural in _BINDING_KINDS:
            if old is not None and _only_gc_changes(old, obj):
                return
            ref = obj.get("roleRef") or {}
            kind = str(ref.get("kind") or "")
            role = str(ref.get("name") or "")
            role_namespace = namespace if kind == "Role" else ""
            resource = "roles" if kind == "Role" else "clusterroles"
            if self._may(user, "bind", resource, namespace, role):
                return
            rules = self.rbac.role_rules(kind, role_namespace, role)
            if rules is None:
                what = "role" if kind == "Role" else "clusterrole"
                raise StatusError.forbidden(
                    RBAC_GROUP,
                    rt.plural,
                    name,
                    f'{what}.rbac.authorization.k8s.io "{role}" not found',
                )
            self._require(user, namespace, rules, rt.plural, name)

    def _may(self, user: UserInfo, verb: str, resource: str, namespace: str, name: str) -> bool:
        attrs = Attributes(user, verb, True, RBAC_GROUP, "v1", resource, "", namespace, name)
        return self.allowed(attrs)[0]

    def _require(
        self, user: UserInfo, namespace: str, wanted: tuple[Rule, ...], plural: str, name: str
    ) -> None:
        owned, errors = self.rbac.rules_for(user, namespace)
        missing = uncovered(owned, wanted)
        if not missing:
            return
        lines = sorted(rule_string(r) for r in compact(missing))
        groups = " ".join(f'"{g}"' for g in user.groups)
        text = (
            f'user "{user.name}" (groups=[{groups}]) is attempting to grant RBAC permissions '
            "not currently held:\n" + "\n".join(lines)
        )
        if errors:
            text += f"; resolution errors: [{', '.join(errors)}]"
        raise StatusError.forbidden(RBAC_GROUP, plural, name, text)


def _aggregates(role: dict[str, Any]) -> bool:
    """Whether a ClusterRole has an aggregation rule that selects anything."""
    rule = role.get("aggregationRule")
    return isinstance(rule, dict) and bool(rule.get("clusterRoleSelectors"))


def _only_gc_changes(old: dict[str, Any], new: dict[str, Any]) -> bool:
    def stripped(obj: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _GC_FIELDS}
        meta.pop("resourceVersion", None)
        meta.pop("managedFields", None)
        meta.pop("generation", None)
        rest = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
        return {"meta": meta, **rest}

    return stripped(old) == stripped(new)
