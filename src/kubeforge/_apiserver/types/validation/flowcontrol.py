"""Validation of flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations,
as pkg/apis/flowcontrol/validation/validation.go checks them for the v1 API."""

from __future__ import annotations

import math
from typing import Any

from kubeforge._api.machinery.access import as_dict, as_int, as_list, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import go_string_slice
from kubeforge._api.machinery.names import is_dns1123_label, is_path_segment_name
from kubeforge._apiserver.types.validation.common import Errors, Obj, go_json

__all__ = [
    "validate_flow_schema",
    "validate_flow_schema_update",
    "validate_priority_level",
    "validate_priority_level_update",
]

_VERBS = frozenset(
    ("create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch")
)
_SUBJECT_KINDS = ("Group", "ServiceAccount", "User")
_DISTINGUISHERS = ("ByNamespace", "ByUser")
_LIMIT_RESPONSES = ("Queue", "Reject")
_ENABLEMENTS = ("Exempt", "Limited")
_MAX_PRECEDENCE = 10000
_MAX_QUEUES = 10 * 1000
# shufflesharding.MaxHashBits: the bits of the hash a hand is dealt from.
_MAX_HASH_BITS = 60
_NS_INTRO = "each member of this list must be '*' or a DNS-1123 label; "
_MEMBER_FIELDS = {"ServiceAccount": "serviceAccount", "User": "user", "Group": "group"}


# -- FlowSchema -------------------------------------------------------------------------------


def _wildcard_list(values: list[Any], path: str, what: str) -> Errors:
    if len(values) > 1 and "*" in values:
        return [
            FieldError.invalid(
                path, go_string_slice(values), f"if '*' is present, must not specify other {what}"
            )
        ]
    return []


def _listed(values: list[Any], path: str, required: str, what: str) -> Errors:
    """A list that must not be empty, and holds '*' only alone."""
    if not values:
        return [FieldError.required(path, required)]
    return _wildcard_list(values, path, what)


def _verbs(rule: Obj, path: str) -> Errors:
    verbs = as_list(rule.get("verbs"))
    errs = _listed(verbs, f"{path}.verbs", "verbs must contain at least one value", "verbs")
    if verbs and "*" not in verbs and not set(verbs) <= _VERBS:
        errs.append(
            FieldError.not_supported(f"{path}.verbs", go_string_slice(verbs), sorted(_VERBS))
        )
    return errs


def _resource_rule(rule: Obj, path: str) -> Errors:
    errs = _verbs(rule, path)
    errs += _listed(
        as_list(rule.get("apiGroups")),
        f"{path}.apiGroups",
        "resource rules must supply at least one api group",
        "api groups",
    )
    errs += _listed(
        as_list(rule.get("resources")),
        f"{path}.resources",
        "resource rules must supply at least one resource",
        "resources",
    )
    namespaces = as_list(rule.get("namespaces"))
    if not namespaces and rule.get("clusterScope") is not True:
        errs.append(
            FieldError.required(
                f"{path}.namespaces",
                "resource rules that are not cluster scoped must supply at least one namespace",
            )
        )
    elif "*" in namespaces:
        errs += _wildcard_list(namespaces, f"{path}.namespaces", "namespaces")
    else:
        for i, namespace in enumerate(namespaces):
            text = as_str(namespace)
            errs += [
                FieldError.invalid(f"{path}.namespaces[{i}]", text, _NS_INTRO + m)
                for m in is_dns1123_label(text)
            ]
    return errs


def _non_resource_rule(rule: Obj, path: str) -> Errors:
    errs = _verbs(rule, path)
    urls = as_list(rule.get("nonResourceURLs"))
    errs += _listed(
        urls,
        f"{path}.nonResourceURLs",
        "nonResourceURLs must contain at least one value",
        "non-resource URLs",
    )
    if "*" not in urls:
        for i, url in enumerate(urls):
            text = as_str(url)
            at = f"{path}.nonResourceURLs[{i}]"
            if not text.startswith("/"):
                errs.append(FieldError.invalid(at, text, "must start with slash"))
            elif "//" in text:
                errs.append(FieldError.invalid(at, text, "must not contain double slash"))
            elif "*" in text[:-1] or (text.endswith("*") and not text.endswith("/*")):
                errs.append(
                    FieldError.invalid(at, text, "wildcard can only do suffix glob matching")
                )
    return errs


def _subject(subject: Obj, path: str) -> Errors:
    kind = subject.get("kind")
    member = _MEMBER_FIELDS.get(kind) if isinstance(kind, str) else None
    if member is None:
        return [FieldError.not_supported(f"{path}.kind", kind, _SUBJECT_KINDS)]
    errs: Errors = []
    for other_kind, other in _MEMBER_FIELDS.items():
        if other != member and subject.get(other) is not None:
            errs.append(
                FieldError.forbidden(
                    f"{path}.{other}",
                    f"{other} is forbidden when subject kind is not '{other_kind}'",
                )
            )
    value = subject.get(member)
    if not isinstance(value, dict):
        return [
            FieldError.required(
                f"{path}.{member}", f"{member} is required when subject kind is '{kind}'"
            ),
            *errs,
        ]
    name = as_str(value.get("name"))
    if not name:
        errs.insert(0, FieldError.required(f"{path}.{member}.name", ""))
    elif member == "serviceAccount" and name != "*":
        errs += [
            FieldError.invalid(f"{path}.{member}.name", name, m) for m in is_path_segment_name(name)
        ]
    if member == "serviceAccount":
        namespace = as_str(value.get("namespace"))
        if not namespace:
            errs.append(
                FieldError.required(
                    f"{path}.serviceAccount.namespace", "must specify namespace for service account"
                )
            )
        else:
            errs += [
                FieldError.invalid(f"{path}.serviceAccount.namespace", namespace, m)
                for m in is_dns1123_label(namespace)
            ]
    return errs


def _rules(rule: Obj, path: str) -> Errors:
    errs: Errors = []
    subjects = as_list(rule.get("subjects"))
    if not subjects:
        errs.append(
            FieldError.required(f"{path}.subjects", "subjects must contain at least one value")
        )
    for i, subject in enumerate(subjects):
        errs += _subject(as_dict(subject), f"{path}.subjects[{i}]")
    resource_rules = as_list(rule.get("resourceRules"))
    non_resource_rules = as_list(rule.get("nonResourceRules"))
    if not resource_rules and not non_resource_rules:
        errs.append(
            FieldError.required(
                path, "at least one of resourceRules and nonResourceRules has to be non-empty"
            )
        )
    for i, r in enumerate(resource_rules):
        errs += _resource_rule(as_dict(r), f"{path}.resourceRules[{i}]")
    for i, r in enumerate(non_resource_rules):
        errs += _non_resource_rule(as_dict(r), f"{path}.nonResourceRules[{i}]")
    return errs


def validate_flow_schema(obj: Obj) -> list[FieldError]:
    """ValidateFlowSchema: a precedence in range, a priority level, well-formed rules."""
    name = as_str(as_dict(obj.get("metadata")).get("name"))
    spec = as_dict(obj.get("spec"))
    errs: Errors = []
    precedence = as_int(spec.get("matchingPrecedence"))
    if precedence is not None:
        path = "spec.matchingPrecedence"
        if precedence <= 0:
            errs.append(FieldError.invalid(path, precedence, "must be a positive value"))
        if precedence > _MAX_PRECEDENCE:
            errs.append(
                FieldError.invalid(path, precedence, f"must not be greater than {_MAX_PRECEDENCE}")
            )
        if precedence == 1 and name != "exempt":
            errs.append(
                FieldError.invalid(
                    path, precedence, "only the schema named 'exempt' may have matchingPrecedence 1"
                )
            )
    method = spec.get("distinguisherMethod")
    if isinstance(method, dict) and method.get("type") not in _DISTINGUISHERS:
        errs.append(
            FieldError.not_supported(
                "spec.distinguisherMethod.type", go_json(method), _DISTINGUISHERS
            )
        )
    level = as_str(as_dict(spec.get("priorityLevelConfiguration")).get("name"))
    if not level:
        errs.append(
            FieldError.required(
                "spec.priorityLevelConfiguration.name", "must reference a priority level"
            )
        )
    else:
        errs += [
            FieldError.invalid("spec.priorityLevelConfiguration.name", level, m)
            for m in is_path_segment_name(level)
        ]
    for i, rule in enumerate(as_list(spec.get("rules"))):
        errs += _rules(as_dict(rule), f"spec.rules[{i}]")
    return errs


def validate_flow_schema_update(obj: Obj, old: Obj) -> list[FieldError]:
    return validate_flow_schema(obj)


# -- PriorityLevelConfiguration ------------------------------------------------------------


def _percent(config: Obj, path: str) -> Errors:
    errs: Errors = []
    lendable = as_int(config.get("lendablePercent"))
    if lendable is not None and not 0 <= lendable <= 100:
        errs.append(
            FieldError.invalid(
                f"{path}.lendablePercent", lendable, "must be between 0 and 100, inclusive"
            )
        )
    return errs


def _queuing(queuing: Obj, path: str) -> Errors:
    errs: Errors = []
    limit = as_int(queuing.get("queueLengthLimit")) or 0
    if limit <= 0:
        errs.append(FieldError.invalid(f"{path}.queueLengthLimit", limit, "must be positive"))
    queues = as_int(queuing.get("queues")) or 0
    if queues <= 0:
        errs.append(FieldError.invalid(f"{path}.queues", queues, "must be positive"))
    elif queues > _MAX_QUEUES:
        errs.append(
            FieldError.invalid(f"{path}.queues", queues, f"must not be greater than {_MAX_QUEUES}")
        )
    hand = as_int(queuing.get("handSize")) or 0
    if hand <= 0:
        errs.append(FieldError.invalid(f"{path}.handSize", hand, "must be positive"))
    elif hand > queues:
        errs.append(
            FieldError.invalid(
                f"{path}.handSize", hand, f"should not be greater than queues ({queues})"
            )
        )
    elif math.ceil(math.log2(queues) * hand) > _MAX_HASH_BITS:
        errs.append(
            FieldError.invalid(
                f"{path}.handSize",
                hand,
                f"required entropy bits of deckSize {queues} and handSize {hand} should not be "
                f"greater than {_MAX_HASH_BITS}",
            )
        )
    return errs


def _shares(config: Obj, path: str) -> Errors:
    shares = as_int(config.get("nominalConcurrencyShares"))
    if shares is not None and shares < 0:
        return [
            FieldError.invalid(
                f"{path}.nominalConcurrencyShares", shares, "must be a non-negative integer"
            )
        ]
    return []


def _limited(limited: Obj, path: str) -> Errors:
    errs = _shares(limited, path)
    response = as_dict(limited.get("limitResponse"))
    kind = response.get("type")
    response_path = f"{path}.limitResponse"
    if kind == "Reject":
        if response.get("queuing") is not None:
            errs.append(
                FieldError.forbidden(
                    f"{response_path}.queuing",
                    "must be nil if limited.limitResponse.type is not Limited",
                )
            )
    elif kind == "Queue":
        queuing = response.get("queuing")
        if not isinstance(queuing, dict):
            errs.append(
                FieldError.required(
                    f"{response_path}.queuing",
                    "must not be empty if limited.limitResponse.type is Limited",
                )
            )
        else:
            errs += _queuing(queuing, f"{response_path}.queuing")
    else:
        errs.append(FieldError.not_supported(f"{response_path}.type", kind, _LIMIT_RESPONSES))
    errs += _percent(limited, path)
    borrowing = as_int(limited.get("borrowingLimitPercent"))
    if borrowing is not None and borrowing < 0:
        errs.append(
            FieldError.invalid(
                f"{path}.borrowingLimitPercent",
                borrowing,
                "if specified, must be a non-negative integer",
            )
        )
    return errs


def validate_priority_level(obj: Obj) -> list[FieldError]:
    """ValidatePriorityLevelConfiguration: `exempt` alone is Exempt; Limited levels queue or
    reject within their bounds."""
    name = as_str(as_dict(obj.get("metadata")).get("name"))
    spec = as_dict(obj.get("spec"))
    kind = spec.get("type")
    errs: Errors = []
    if (name == "exempt") != (kind == "Exempt"):
        errs.append(
            FieldError.invalid(
                "spec.type", kind, "type must be 'Exempt' if and only if name is 'exempt'"
            )
        )
    if kind == "Exempt":
        if spec.get("limited") is not None:
            errs.append(
                FieldError.forbidden("spec.limited", "must be nil if the type is not Limited")
            )
        exempt = spec.get("exempt")
        if isinstance(exempt, dict):
            errs += _shares(exempt, "spec.exempt")
            errs += _percent(exempt, "spec.exempt")
    elif kind == "Limited":
        if spec.get("exempt") is not None:
            errs.append(FieldError.forbidden("spec.exempt", "must be nil if the type is Limited"))
        limited = spec.get("limited")
        if not isinstance(limited, dict):
            errs.append(
                FieldError.required("spec.limited", "must not be empty when type is Limited")
            )
        else:
            errs += _limited(limited, "spec.limited")
    else:
        errs.append(FieldError.not_supported("spec.type", kind, _ENABLEMENTS))
    return errs


def validate_priority_level_update(obj: Obj, old: Obj) -> list[FieldError]:
    return validate_priority_level(obj)
