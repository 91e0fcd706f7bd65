"""Which requests a webhook or policy applies to: rules, match policy, selectors.

Follows k8s.io/apiserver pkg/admission/plugin/webhook/predicates (rules, namespace, object),
webhook/generic/webhook.go (ShouldCallHook: rules first, then equivalent resources under
`matchPolicy: Equivalent`) and policy/matching/matching.go (resourceNames, exclusions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeforge._api.machinery.selectors import LabelSelector, SelectorError, selector_from_dict
from kubeforge._apiserver.admission.attributes import GVK, Attributes
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.types.resource import ResourceType

__all__ = [
    "Match",
    "Matcher",
    "Rule",
    "Selector",
    "subresource_kind",
]

_ALL = "*"


def _strings(value: Any) -> frozenset[str]:
    return frozenset(str(v) for v in value) if isinstance(value, list) else frozenset()


@dataclass(frozen=True, slots=True)
class Rule:
    """One RuleWithOperations (or NamedRuleWithOperations of a policy)."""

    operations: frozenset[str]
    groups: frozenset[str]
    versions: frozenset[str]
    # (resource, subresource) pairs: ("pods", ""), ("pods", "status"), ("*", "scale"), ...
    resources: tuple[tuple[str, str], ...]
    scope: str
    names: frozenset[str]

    @classmethod
    def parse(cls, raw: Any) -> Rule:
        raw = raw if isinstance(raw, Mapping) else {}
        resources = []
        for item in raw.get("resources") or ():
            res, _, sub = str(item).partition("/")
            resources.append((res, sub))
        return cls(
            operations=_strings(raw.get("operations")),
            groups=_strings(raw.get("apiGroups")),
            versions=_strings(raw.get("apiVersions")),
            resources=tuple(resources),
            scope=str(raw.get("scope") or _ALL),
            names=_strings(raw.get("resourceNames")),
        )

    def may_match(self, operation: str, rt: ResourceType, subresource: str) -> bool:
        """Everything but the scope, which depends on the request's namespace."""
        return (
            (_ALL in self.operations or operation in self.operations)
            and (_ALL in self.groups or rt.group in self.groups)
            and (_ALL in self.versions or rt.version in self.versions)
            and any(
                res in (_ALL, rt.plural) and sub in (_ALL, subresource)
                for res, sub in self.resources
            )
        )

    def matches(self, attrs: Attributes, rt: ResourceType) -> bool:
        """Whether the request matches, with `rt` standing for the requested resource."""
        if not self.may_match(attrs.operation, rt, attrs.subresource):
            return False
        if self.scope == "Namespaced":
            return not attrs.is_namespace and attrs.namespace != ""
        if self.scope == "Cluster":
            return attrs.is_namespace or attrs.namespace == ""
        return self.scope == _ALL


@dataclass(frozen=True, slots=True)
class Match:
    """The resource (the request's own or an equivalent version) and kind a rule matched."""

    rt: ResourceType
    kind: GVK


def subresource_kind(rt: ResourceType, subresource: str) -> GVK:
    """The kind objects of `rt` (or of one of its subresources) are sent as."""
    if subresource:
        sub = rt.subresource(subresource)
        if sub is not None and sub.kind:
            return (
                rt.group if sub.group is None else sub.group,
                rt.version if sub.version is None else (sub.version or ""),
                sub.kind,
            )
    return (rt.group, rt.version, rt.kind)


class Matcher:
    """Rules with a match policy, as webhooks and policies declare them."""

    __slots__ = ("equivalent", "exclude", "rules")

    def __init__(
        self, rules: Sequence[Rule], equivalent: bool, exclude: Sequence[Rule] = ()
    ) -> None:
        self.rules = tuple(rules)
        self.equivalent = equivalent
        self.exclude = tuple(exclude)

    def may_match(
        self,
        operation: str,
        rt: ResourceType,
        subresource: str,
        equivalents: Callable[[ResourceType, str], list[ResourceType]],
    ) -> bool:
        """A quick test on what a request's route shows (no namespace, objects or names)."""
        if any(r.may_match(operation, rt, subresource) for r in self.rules):
            return True
        if not self.equivalent:
            return False
        return any(
            r.may_match(operation, other, subresource)
            for r in self.rules
            for other in equivalents(rt, subresource)
        )

    def match(
        self,
        attrs: Attributes,
        equivalents: Callable[[ResourceType, str], list[ResourceType]],
        names: bool = False,
    ) -> Match | None:
        """The first rule that matches the request itself, else (Equivalent) the first that
        matches one of its other versions; `names` also checks policies' resourceNames."""
        if names and self.exclude and _first(self.exclude, attrs, [attrs.rt], names):
            return None
        if _first(self.rules, attrs, [attrs.rt], names):
            return Match(attrs.rt, attrs.kind)
        if not self.equivalent:
            return None
        others = equivalents(attrs.rt, attrs.subresource)
        found = _first(self.rules, attrs, others, names)
        if found is None:
            return None
        return Match(found, subresource_kind(found, attrs.subresource))


def _first(
    rules: Sequence[Rule], attrs: Attributes, candidates: Sequence[ResourceType], names: bool
) -> ResourceType | None:
    for rule in rules:
        for rt in candidates:
            if rule.matches(attrs, rt) and (
                not names or not rule.names or attrs.name in rule.names
            ):
                return rt
    return None


def _object_labels(obj: Mapping[str, Any] | None) -> dict[str, str] | None:
    """The labels of an object with metadata; None for what has none (options, absent)."""
    if not isinstance(obj, Mapping):
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    labels = meta.get("labels")
    return labels if isinstance(labels, dict) else {}


@dataclass(frozen=True, slots=True)
class Selector:
    """A namespaceSelector or objectSelector: None when it selects everything."""

    selector: LabelSelector | None
    error: str | None = None

    @classmethod
    def parse(cls, raw: Any) -> Selector:
        if not isinstance(raw, Mapping) or not raw:
            return cls(None)
        try:
            parsed = selector_from_dict(raw)
        except (SelectorError, KeyError, TypeError) as exc:
            return cls(None, str(exc))
        return cls(None if parsed.empty else parsed)

    @property
    def everything(self) -> bool:
        return self.selector is None and self.error is None

    def matches_object(self, attrs: Attributes) -> bool:
        """objectSelector: the new or the old object has matching labels."""
        if self.error is not None:
            raise StatusError.internal(self.error)
        if self.selector is None:
            return True
        for obj in (attrs.object, attrs.old_object):
            labels = _object_labels(obj)
            if labels is not None and self.selector.matches(labels):
                return True
        return False

    def matches_namespace(
        self, attrs: Attributes, namespace_labels: Callable[[str], dict[str, str] | None]
    ) -> bool:
        """namespaceSelector: the labels of the request's namespace; a Namespace written by
        the request is judged by its own new labels; other cluster-scoped objects always
        match. A namespace that does not exist is a 404, as upstream."""
        if attrs.namespace == "" and not attrs.is_namespace:
            return True
        if self.error is not None:
            raise StatusError.internal(self.error)
        if self.selector is None:
            return True
        if attrs.is_namespace and not attrs.subresource and attrs.operation in ("CREATE", "UPDATE"):
            labels = _object_labels(attrs.object) or {}
        else:
            found = namespace_labels(attrs.namespace)
            if found is None:
                raise StatusError.not_found("", "namespaces", attrs.namespace)
            labels = found
        return self.selector.matches(labels)
