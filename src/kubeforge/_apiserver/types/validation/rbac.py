"""Validation of rbac.authorization.k8s.io/v1: Roles, ClusterRoles and their bindings."""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.access import as_dict, as_list, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import GoValue, go_string_slice
from kubeforge._api.machinery.names import (
    is_dns1123_subdomain,
    is_path_segment_name,
    validate_label_selector,
)
from kubeforge._api.rbac import RBAC_GROUP
from kubeforge._apiserver.types.validation.common import Errors, Obj, each, go_str

__all__ = [
    "RBAC_GROUP",
    "validate_cluster_role",
    "validate_cluster_role_binding",
    "validate_cluster_role_binding_update",
    "validate_cluster_role_update",
    "validate_role",
    "validate_role_binding",
    "validate_role_binding_update",
    "validate_role_update",
]


def _validate_rules(rules: list[Any], namespaced: bool) -> Errors:
    errs: Errors = []
    for i, rule in enumerate(rules):
        rule = as_dict(rule)
        at = f"rules[{i}]"
        if not as_list(rule.get("verbs")):
            errs.append(FieldError.required(f"{at}.verbs", "verbs must contain at least one value"))
        urls = as_list(rule.get("nonResourceURLs"))
        if urls:
            if namespaced:
                errs.append(
                    FieldError.invalid(
                        f"{at}.nonResourceURLs",
                        go_string_slice(urls),
                        "namespaced rules cannot apply to non-resource URLs",
                    )
                )
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                errs.append(
                    FieldError.invalid(
                        f"{at}.nonResourceURLs",
                        go_string_slice(urls),
                        "rules cannot apply to both regular resources and non-resource URLs",
                    )
                )
            continue
        if not as_list(rule.get("apiGroups")):
            errs.append(
                FieldError.required(
                    f"{at}.apiGroups", "resource rules must supply at least one api group"
                )
            )
        if not as_list(rule.get("resources")):
            errs.append(
                FieldError.required(
                    f"{at}.resources", "resource rules must supply at least one resource"
                )
            )
    return errs


def validate_role(obj: Obj) -> list[FieldError]:
    """A Role: every rule names verbs and resources (non-resource URLs are cluster-wide)."""
    return _validate_rules(as_list(obj.get("rules")), namespaced=True)


def validate_role_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a Role."""
    return validate_role(obj)


def validate_cluster_role(obj: Obj) -> list[FieldError]:
    """A ClusterRole: rules as for roles, and an aggregation rule with selectors."""
    errs = _validate_rules(as_list(obj.get("rules")), namespaced=False)
    aggregation = obj.get("aggregationRule")
    if isinstance(aggregation, dict):
        selectors = as_list(aggregation.get("clusterRoleSelectors"))
        if not selectors:
            errs.append(
                FieldError.required(
                    "aggregationRule.clusterRoleSelectors",
                    "at least one clusterRoleSelector required if aggregationRule is non-nil",
                )
            )
        for i, selector in enumerate(selectors):
            errs += validate_label_selector(selector, f"aggregationRule.clusterRoleSelectors[{i}]")
    return errs


def validate_cluster_role_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a ClusterRole."""
    return validate_cluster_role(obj)


def _validate_binding(obj: Obj, namespaced: bool) -> Errors:
    errs: Errors = []
    ref = as_dict(obj.get("roleRef"))
    if ref.get("apiGroup") != RBAC_GROUP:
        errs.append(
            FieldError.not_supported("roleRef.apiGroup", as_str(ref.get("apiGroup")), (RBAC_GROUP,))
        )
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if ref.get("kind") not in kinds:
        errs.append(FieldError.not_supported("roleRef.kind", as_str(ref.get("kind")), kinds))
    name = as_str(ref.get("name"))
    if not name:
        errs.append(FieldError.required("roleRef.name", ""))
    else:
        errs += each(is_path_segment_name(name), "roleRef.name", name)
    for i, subject in enumerate(as_list(obj.get("subjects"))):
        subject = as_dict(subject)
        at = f"subjects[{i}]"
        subject_name = as_str(subject.get("name"))
        if not subject_name:
            errs.append(FieldError.required(f"{at}.name", ""))
        kind = subject.get("kind")
        group = as_str(subject.get("apiGroup"))
        if kind == "ServiceAccount":
            if subject_name:
                errs += each(is_dns1123_subdomain(subject_name), f"{at}.name", subject_name)
            if group:
                errs.append(FieldError.not_supported(f"{at}.apiGroup", group, ("",)))
            if not namespaced and not subject.get("namespace"):
                errs.append(FieldError.required(f"{at}.namespace", ""))
        elif kind in ("User", "Group"):
            if group != RBAC_GROUP:
                errs.append(FieldError.not_supported(f"{at}.apiGroup", group, (RBAC_GROUP,)))
        else:
            errs.append(
                FieldError.not_supported(
                    f"{at}.kind", as_str(kind), ("ServiceAccount", "User", "Group")
                )
            )
    return errs


def _role_ref_value(ref: Obj) -> GoValue:
    return GoValue(
        f"rbac.RoleRef{{APIGroup:{go_str(ref.get('apiGroup'))}, Kind:{go_str(ref.get('kind'))}, "
        f"Name:{go_str(ref.get('name'))}}}"
    )


def _role_ref_fixed(obj: Obj, old: Obj) -> Errors:
    ref, old_ref = as_dict(obj.get("roleRef")), as_dict(old.get("roleRef"))
    if any(as_str(ref.get(k)) != as_str(old_ref.get(k)) for k in ("apiGroup", "kind", "name")):
        return [FieldError.invalid("roleRef", _role_ref_value(ref), "cannot change roleRef")]
    return []


def validate_role_binding(obj: Obj) -> list[FieldError]:
    """A RoleBinding: a Role or ClusterRole reference and well-formed subjects."""
    return _validate_binding(obj, namespaced=True)


def validate_role_binding_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a RoleBinding: the role reference is fixed."""
    return validate_role_binding(obj) + _role_ref_fixed(obj, old)


def validate_cluster_role_binding(obj: Obj) -> list[FieldError]:
    """A ClusterRoleBinding: a ClusterRole reference; service accounts need a namespace."""
    return _validate_binding(obj, namespaced=False)


def validate_cluster_role_binding_update(obj: Obj, old: Obj) -> list[FieldError]:
    """An update of a ClusterRoleBinding: the role reference is fixed."""
    return validate_cluster_role_binding(obj) + _role_ref_fixed(obj, old)
