"""The RBAC authorizer, with Kubernetes' semantics, over an index kept up to date on writes.

Roles and bindings are read from the store once and then followed through the write path's
observer: each binding is filed under each of its subjects, so deciding a request looks up
the user's name, groups and service account instead of scanning every binding. Cluster
role bindings apply everywhere; role bindings only in their own namespace, where they may
grant the rules of a Role there or of a ClusterRole.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kubeforge._api.rbac import RBAC_GROUP
from kubeforge._apiserver.auth.attributes import Attributes
from kubeforge._apiserver.auth.rules import Rule, parse_rules
from kubeforge._apiserver.request.user import UserInfo, split_service_account
from kubeforge._apiserver.storage.store import Store, StoredObject
from kubeforge._apiserver.types.resource import GroupResource

__all__ = ["RBAC_GROUP", "Decision", "RBACAuthorizer"]

ROLES = GroupResource(RBAC_GROUP, "roles")
CLUSTER_ROLES = GroupResource(RBAC_GROUP, "clusterroles")
ROLE_BINDINGS = GroupResource(RBAC_GROUP, "rolebindings")
CLUSTER_ROLE_BINDINGS = GroupResource(RBAC_GROUP, "clusterrolebindings")

# A subject as bindings are filed: ("User", name), ("Group", name) or
# ("ServiceAccount", "<namespace>:<name>").
SubjectKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer for one request: allowed, why, and errors met on the way."""

    allowed: bool
    reason: str = ""
    errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Binding:
    kind: str  # RoleBinding or ClusterRoleBinding
    namespace: str
    name: str
    role_kind: str
    role_name: str
    subjects: tuple[tuple[SubjectKey, str], ...]  # (key, display text)


def _subjects(obj: dict[str, Any], namespace: str) -> tuple[tuple[SubjectKey, str], ...]:
    out: list[tuple[SubjectKey, str]] = []
    for subject in obj.get("subjects") or ():
        if not isinstance(subject, dict):
            continue
        kind = subject.get("kind")
        name = str(subject.get("name") or "")
        if kind == "User":
            out.append((("User", name), f'User "{name}"'))
        elif kind == "Group":
            out.append((("Group", name), f'Group "{name}"'))
        elif kind == "ServiceAccount":
            # Without a namespace, a RoleBinding's subject is in the binding's namespace;
            # a ClusterRoleBinding's matches nothing.
            ns = str(subject.get("namespace") or namespace)
            if ns:
                out.append((("ServiceAccount", f"{ns}:{name}"), f'ServiceAccount "{name}/{ns}"'))
    return tuple(out)


def _binding(obj: dict[str, Any], cluster: bool) -> _Binding:
    meta = obj.get("metadata") or {}
    namespace = "" if cluster else str(meta.get("namespace") or "")
    ref = obj.get("roleRef") or {}
    return _Binding(
        "ClusterRoleBinding" if cluster else "RoleBinding",
        namespace,
        str(meta.get("name") or ""),
        str(ref.get("kind") or ""),
        str(ref.get("name") or ""),
        _subjects(obj, namespace),
    )


def subject_keys(user: UserInfo) -> list[SubjectKey]:
    keys: list[SubjectKey] = [("User", user.name)]
    keys.extend(("Group", g) for g in user.groups)
    account = split_service_account(user.name)
    if account is not None:
        keys.append(("ServiceAccount", f"{account[0]}:{account[1]}"))
    return keys


class RBACAuthorizer:
    """Decides requests from the Roles, ClusterRoles and their bindings in `store`."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.roles: dict[tuple[str, str], tuple[Rule, ...]] = {}
        self.cluster_roles: dict[str, tuple[Rule, ...]] = {}
        self.bindings: dict[tuple[str, str, str], _Binding] = {}  # (kind, ns, name)
        # namespace ("" for cluster role bindings) -> subject -> binding key -> (binding,
        # how the binding names the subject)
        self.index: dict[
            str, dict[SubjectKey, dict[tuple[str, str, str], tuple[_Binding, str]]]
        ] = {}
        # Decisions by request, dropped whenever a role or binding changes: a client repeats
        # the same few requests (a controller's list, watch and writes).
        self._decisions: dict[tuple[Any, ...], Decision] = {}
        for gr in (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS):
            for stored in self.store.current(gr)[0]:
                self._put(gr, stored.obj)

    # keeping the index ----------------------------------------------------------------

    def observe(self, gr: GroupResource, event: str, new: StoredObject) -> None:
        """Follow a committed write (a commit observer, filtered to the RBAC group)."""
        self._decisions.clear()
        if event == "DELETED":
            self._remove(gr, new.obj)
        else:
            self._put(gr, new.obj)

    def _put(self, gr: GroupResource, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if gr == CLUSTER_ROLES:
            self.cluster_roles[name] = parse_rules(obj.get("rules"))
        elif gr == ROLES:
            self.roles[str(meta.get("namespace") or ""), name] = parse_rules(obj.get("rules"))
        elif gr in (ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS):
            self._remove(gr, obj)
            binding = _binding(obj, gr == CLUSTER_ROLE_BINDINGS)
            key = (binding.kind, binding.namespace, binding.name)
            self.bindings[key] = binding
            by_subject = self.index.setdefault(binding.namespace, {})
            for subject, text in binding.subjects:
                by_subject.setdefault(subject, {})[key] = (binding, text)

    def _remove(self, gr: GroupResource, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if gr == CLUSTER_ROLES:
            self.cluster_roles.pop(name, None)
        elif gr == ROLES:
            self.roles.pop((str(meta.get("namespace") or ""), name), None)
        elif gr in (ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS):
            cluster = gr == CLUSTER_ROLE_BINDINGS
            namespace = "" if cluster else str(meta.get("namespace") or "")
            key = ("ClusterRoleBinding" if cluster else "RoleBinding", namespace, name)
            old = self.bindings.pop(key, None)
            if old is None:
                return
            by_subject = self.index.get(namespace, {})
            for subject, _ in old.subjects:
                entries = by_subject.get(subject)
                if entries is not None:
                    entries.pop(key, None)
                    if not entries:
                        del by_subject[subject]

    # deciding -------------------------------------------------------------------------

    def _role_rules(self, binding: _Binding) -> tuple[Rule, ...] | str:
        """The rules a binding grants, or the error text when its role cannot be used."""
        if binding.role_kind == "ClusterRole":
            rules = self.cluster_roles.get(binding.role_name)
            if rules is None:
                return f'clusterrole.rbac.authorization.k8s.io "{binding.role_name}" not found'
            return rules
        if binding.role_kind == "Role" and binding.kind == "RoleBinding":
            rules = self.roles.get((binding.namespace, binding.role_name))
            if rules is None:
                return f'role.rbac.authorization.k8s.io "{binding.role_name}" not found'
            return rules
        return f'unsupported role reference kind: "{binding.role_kind}"'

    def _applicable(self, user: UserInfo, namespace: str) -> Iterator[tuple[_Binding, str]]:
        """Bindings that name the user (by name, group or service account): cluster role
        bindings first, then role bindings in `namespace`; each with the matched subject."""
        keys = subject_keys(user)
        scopes = ("", namespace) if namespace else ("",)
        for scope in scopes:
            by_subject = self.index.get(scope)
            if not by_subject:
                continue
            seen: set[tuple[str, str, str]] = set()
            for key in keys:
                entries = by_subject.get(key)
                if not entries:
                    continue
                for bkey, entry in entries.items():
                    if bkey not in seen:
                        seen.add(bkey)
                        yield entry

    def authorize(self, attrs: Attributes) -> Decision:
        user = attrs.user
        key = (
            user.name,
            user.groups,
            attrs.verb,
            attrs.resource_request,
            attrs.group,
            attrs.resource,
            attrs.subresource,
            attrs.namespace,
            attrs.name,
            attrs.path,
        )
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decide(attrs)
            if len(self._decisions) >= 16384:
                self._decisions.clear()
            self._decisions[key] = decision
        return decision

    def _decide(self, attrs: Attributes) -> Decision:
        errors: list[str] = []
        for binding, subject in self._applicable(attrs.user, attrs.namespace):
            rules = self._role_rules(binding)
            if isinstance(rules, str):
                errors.append(rules)
                continue
            for rule in rules:
                if rule.allows(attrs):
                    return Decision(True, _allowed_reason(binding, subject))
        return Decision(False, "", tuple(errors))

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        """Every rule granted to the user in `namespace` ("" : cluster-wide only), and the
        errors met resolving roles."""
        rules: list[Rule] = []
        errors: list[str] = []
        for binding, _ in self._applicable(user, namespace):
            found = self._role_rules(binding)
            if isinstance(found, str):
                errors.append(found)
            else:
                rules.extend(found)
        return rules, errors

    def role_rules(self, kind: str, namespace: str, name: str) -> tuple[Rule, ...] | None:
        if kind == "ClusterRole":
            return self.cluster_roles.get(name)
        if kind == "Role":
            return self.roles.get((namespace, name))
        return None


def _allowed_reason(binding: _Binding, subject: str) -> str:
    if binding.kind == "ClusterRoleBinding":
        where = f'ClusterRoleBinding "{binding.name}"'
    else:
        where = f'RoleBinding "{binding.name}/{binding.namespace}"'
    return f'RBAC: allowed by {where} of {binding.role_kind} "{binding.role_name}" to {subject}'


def all_rules(rules: Iterable[Rule]) -> list[dict[str, list[str]]]:
    return [r.to_dict() for r in rules]
