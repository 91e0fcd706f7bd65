"""Admission webhook declarations -> Mutating/ValidatingWebhookConfiguration manifests.

    @admission_webhook(verbs=["create", "update"], failure_policy="Ignore", timeout_seconds=5)
    class MachineValidator(kubeforge.Validator[Machine]): ...

`admission_webhook` is controller-tools' `+kubebuilder:webhook` marker as a decorator on the
defaulter, validator or raw handler that serves the webhook. What registration already knows
(the kind, mutating or validating, the path) need not be repeated: a marker holds only
options, and `WebhookMarker.spec` completes it into a `WebhookSpec` when the webhook is
registered. `webhook_configurations` turns specs into the two configuration objects exactly as
controller-gen writes `config/webhook/manifests.yaml` (pkg/webhook/parser.go): webhooks sorted
by name, one rule each, `matchPolicy`, `timeoutSeconds` and `reinvocationPolicy` only when
given, the `webhook-service` Service in `system` unless told otherwise.

Pure: no I/O.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubeforge._api.crd import dump_yaml
from kubeforge._api.meta import GroupVersionKind, ResourceInfo
from kubeforge._api.resource import pluralize

__all__ = [
    "ADMISSION_REVIEW_VERSIONS",
    "DEFAULT_SERVICE_NAME",
    "DEFAULT_SERVICE_NAMESPACE",
    "FAILURE_POLICIES",
    "MATCH_POLICIES",
    "MUTATING_CONFIGURATION",
    "OPERATIONS",
    "REINVOCATION_POLICIES",
    "SCOPES",
    "SIDE_EFFECTS",
    "VALIDATING_CONFIGURATION",
    "MatchCondition",
    "WebhookMarker",
    "WebhookRule",
    "WebhookSpec",
    "admission_webhook",
    "check_path",
    "default_name",
    "kind_of",
    "marker_for",
    "markers_of",
    "mutate_path",
    "validate_path",
    "webhook_configurations",
    "webhooks_yaml",
]

T = TypeVar("T")

DEFAULT_SERVICE_NAME = "webhook-service"
DEFAULT_SERVICE_NAMESPACE = "system"
MUTATING_CONFIGURATION = "mutating-webhook-configuration"
VALIDATING_CONFIGURATION = "validating-webhook-configuration"
ADMISSION_API_VERSION = "admissionregistration.k8s.io/v1"

FAILURE_POLICIES = ("Fail", "Ignore")
# admissionregistration/v1 refuses Some and Unknown (controller-gen's checkSideEffectsForV1).
SIDE_EFFECTS = ("None", "NoneOnDryRun")
MATCH_POLICIES = ("Exact", "Equivalent")
REINVOCATION_POLICIES = ("Never", "IfNeeded")
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT", "*")
SCOPES = ("Cluster", "Namespaced", "*")
ADMISSION_REVIEW_VERSIONS = ("v1", "v1beta1")

# controller-runtime's rule for custom webhook paths (pkg/builder/webhook.go).
_PATH = re.compile(r"^((/[a-zA-Z0-9-_]+)+|/)\Z")


def _choice(value: str, allowed: Sequence[str], what: str) -> str:
    """`value` spelled as in `allowed`, compared without case (controller-gen's leniency)."""
    for option in allowed:
        if value.lower() == option.lower():
            return option
    raise ValueError(f"{what} must be one of {', '.join(allowed)}, not {value!r}")


def _strings(value: str | Iterable[str] | None, what: str) -> tuple[str, ...] | None:
    # A lone string is one item: `groups="apps"` must not become ("a", "p", "p", "s").
    if value is None:
        return None
    items = (value,) if isinstance(value, str) else tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{what} must be strings, got {item!r}")
    return items


# Kinds and paths -----------------------------------------------------------------------------


def kind_of(kind: Any) -> tuple[GroupVersionKind, str]:
    """The kind and its resource (plural) for a typed class, a GroupVersionKind or a string
    like `apps/v1/Deployment`. Plurals of kinds given by name are guessed as Kubernetes
    tooling guesses them; typed classes (custom or built-in) know theirs."""
    info = getattr(kind, "__kubeforge__", None)
    if isinstance(info, ResourceInfo):
        return info.gvk, info.plural
    if isinstance(kind, GroupVersionKind):
        return kind, pluralize(kind.kind)
    if isinstance(kind, str):
        gvk = GroupVersionKind.parse(kind)
        return gvk, pluralize(gvk.kind)
    raise TypeError(
        f"{kind!r} is not a kind: give a typed class, a GroupVersionKind or 'group/version/Kind'"
    )


def mutate_path(gvk: GroupVersionKind) -> str:
    """kubebuilder's defaulting path: `/mutate-<group, dots as dashes>-<version>-<kind>`."""
    return f"/mutate-{gvk.group.replace('.', '-')}-{gvk.version}-{gvk.kind.lower()}"


def validate_path(gvk: GroupVersionKind) -> str:
    """kubebuilder's validating path: `/validate-<group, dots as dashes>-<version>-<kind>`."""
    return f"/validate-{gvk.group.replace('.', '-')}-{gvk.version}-{gvk.kind.lower()}"


def check_path(path: str) -> str:
    """`path` if it is a valid webhook path (ValueError otherwise)."""
    if not _PATH.match(path):
        raise ValueError(f"webhook path {path!r} does not match {_PATH.pattern}")
    return path


def default_name(gvk: GroupVersionKind, mutating: bool) -> str:
    """kubebuilder's webhook name: `m<kind>-<version>.kb.io` or `v<kind>-<version>.kb.io`."""
    return f"{'m' if mutating else 'v'}{gvk.kind.lower()}-{gvk.version}.kb.io"


# What a configuration holds ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MatchCondition:
    """A CEL expression a request must satisfy for the webhook to be called."""

    name: str
    expression: str


@dataclass(frozen=True, slots=True)
class WebhookRule:
    """The operations on resources of API groups and versions that a webhook admits."""

    operations: tuple[str, ...]
    api_groups: tuple[str, ...]
    api_versions: tuple[str, ...]
    resources: tuple[str, ...]
    scope: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiGroups": list(self.api_groups),
            "apiVersions": list(self.api_versions),
            "operations": list(self.operations),
            "resources": list(self.resources),
        }
        if self.scope is not None:
            out["scope"] = self.scope
        return out


@dataclass(frozen=True)
class WebhookSpec:
    """One webhook of a Mutating/ValidatingWebhookConfiguration, complete.

    The API server calls `path` on the webhook Service (or `url`) for requests matching
    `rules`; the other fields are those of admissionregistration/v1 with the same names.
    """

    name: str
    mutating: bool
    rules: tuple[WebhookRule, ...]
    path: str | None = None
    url: str | None = None
    failure_policy: str = "Fail"
    side_effects: str = "None"
    match_policy: str | None = None
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    timeout_seconds: int | None = None
    reinvocation_policy: str | None = None
    match_conditions: tuple[MatchCondition, ...] = ()
    admission_review_versions: tuple[str, ...] = ("v1",)
    service_name: str = DEFAULT_SERVICE_NAME
    service_namespace: str = DEFAULT_SERVICE_NAMESPACE
    service_port: int | None = None

    def client_config(self, base_url: str | None = None) -> dict[str, Any]:
        """How the API server reaches the webhook: the Service and path, or a URL
        (`base_url` + path for a webhook served on this machine)."""
        if base_url is not None and self.path is not None:
            return {"url": base_url.rstrip("/") + self.path}
        if self.url is not None:
            return {"url": self.url}
        service: dict[str, Any] = {
            "name": self.service_name,
            "namespace": self.service_namespace,
            "path": self.path,
        }
        if self.service_port is not None:
            service["port"] = self.service_port
        return {"service": service}

    def manifest(self, client_config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """This webhook as an entry of the configuration's `webhooks` list."""
        out: dict[str, Any] = {
            "admissionReviewVersions": list(self.admission_review_versions),
            "clientConfig": dict(client_config or self.client_config()),
            "failurePolicy": self.failure_policy,
            "name": self.name,
            "rules": [rule.as_dict() for rule in self.rules],
            "sideEffects": self.side_effects,
        }
        if self.match_policy is not None:
            out["matchPolicy"] = self.match_policy
        if self.namespace_selector is not None:
            out["namespaceSelector"] = dict(self.namespace_selector)
        if self.object_selector is not None:
            out["objectSelector"] = dict(self.object_selector)
        if self.timeout_seconds is not None:
            out["timeoutSeconds"] = self.timeout_seconds
        if self.reinvocation_policy is not None:
            out["reinvocationPolicy"] = self.reinvocation_policy
        if self.match_conditions:
            out["matchConditions"] = [
                {"expression": c.expression, "name": c.name} for c in self.match_conditions
            ]
        return out

    def check(self) -> None:
        """ValueError naming the webhook when the API server would refuse it."""
        where = f"webhook {self.name!r}"
        if (self.path is None) == (self.url is None):
            raise ValueError(f"{where}: give exactly one of path and url")
        if self.path is not None:
            check_path(self.path)
        if self.url is not None and not self.url.startswith("https://"):
            raise ValueError(f"{where}: url must start with https://")
        if self.name.count(".") < 2:
            raise ValueError(
                f"{where}: the name must be fully qualified (at least three dot-separated "
                "segments, e.g. mmachine-v1.kb.io)"
            )
        if not self.rules:
            raise ValueError(f"{where}: needs a rule (groups, versions, resources, verbs)")
        for rule in self.rules:
            if not (rule.operations and rule.api_versions and rule.resources):
                raise ValueError(f"{where}: a rule needs operations, versions and resources")
        if self.timeout_seconds is not None and not 1 <= self.timeout_seconds <= 30:
            raise ValueError(f"{where}: timeout_seconds must be between 1 and 30")
        if self.reinvocation_policy is not None and not self.mutating:
            raise ValueError(f"{where}: only mutating webhooks have a reinvocation policy")
        if not self.admission_review_versions:
            raise ValueError(f"{where}: admission_review_versions may not be empty")


# The marker ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WebhookMarker:
    """What `@admission_webhook(...)` declares: options, with the kind, the path and whether
    the webhook mutates possibly left to registration."""

    kind: Any = None
    mutating: bool | None = None
    path: str | None = None
    url: str | None = None
    name: str | None = None
    groups: tuple[str, ...] | None = None
    versions: tuple[str, ...] | None = None
    resources: tuple[str, ...] | None = None
    verbs: tuple[str, ...] = ("CREATE", "UPDATE")
    scope: str | None = None
    failure_policy: str = "Fail"
    side_effects: str = "None"
    match_policy: str | None = None
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    timeout_seconds: int | None = None
    reinvocation_policy: str | None = None
    match_conditions: tuple[MatchCondition, ...] = field(default_factory=tuple)
    admission_review_versions: tuple[str, ...] = ("v1",)
    service_name: str = DEFAULT_SERVICE_NAME
    service_namespace: str = DEFAULT_SERVICE_NAMESPACE
    service_port: int | None = None

    def spec(
        self, *, kind: Any = None, mutating: bool | None = None, path: str | None = None
    ) -> WebhookSpec:
        """The complete spec of a webhook registered for `kind` at `path`.

        What registration says must agree with what the marker says (ValueError otherwise):
        a marker's path that is not where the webhook is served would leave the API server
        calling a path that answers 404.
        """
        kind = self.kind if kind is None else kind
        if self.mutating is not None and mutating is not None and self.mutating != mutating:
            which = "mutating" if self.mutating else "validating"
            raise ValueError(
                f"the marker declares a {which} webhook; it is registered as the other"
            )
        is_mutating = self.mutating if mutating is None else mutating
        if is_mutating is None:
            raise ValueError("say whether the webhook mutates: mutating=True or False")
        if path is not None and self.path is not None and path != self.path:
            raise ValueError(f"the marker's path {self.path!r} is not the served path {path!r}")
        served = path if path is not None else self.path
        groups, versions, resources = self.groups, self.versions, self.resources
        name = self.name
        if kind is not None:
            gvk, plural = kind_of(kind)
            groups = groups if groups is not None else (gvk.group,)
            versions = versions if versions is not None else (gvk.version,)
            resources = resources if resources is not None else (plural,)
            name = name or default_name(gvk, is_mutating)
            if served is None and self.url is None:
                served = mutate_path(gvk) if is_mutating else validate_path(gvk)
        if groups is None or versions is None or resources is None or name is None:
            raise ValueError("a webhook without a kind needs name, groups, versions and resources")
        rule = WebhookRule(
            operations=self.verbs,
            api_groups=tuple("" if g == "core" else g for g in groups),
            api_versions=versions,
            resources=resources,
            scope=self.scope,
        )
        spec = WebhookSpec(
            name=name,
            mutating=is_mutating,
            rules=(rule,),
            path=served if self.url is None else None,
            url=self.url,
            failure_policy=self.failure_policy,
            side_effects=self.side_effects,
            match_policy=self.match_policy,
            namespace_selector=self.namespace_selector,
            object_selector=self.object_selector,
            timeout_seconds=self.timeout_seconds,
            reinvocation_policy=self.reinvocation_policy,
            match_conditions=self.match_conditions,
            admission_review_versions=self.admission_review_versions,
            service_name=self.service_name,
            service_namespace=self.service_namespace,
            service_port=self.service_port,
        )
        spec.check()
        return spec


def _selector(value: Any, what: str) -> Mapping[str, Any] | None:
    if value is None:
        return None
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        value = to_dict()  # a kubeforge.LabelSelector
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a LabelSelector or a dict, got {value!r}")
    unknown = set(value) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise ValueError(f"{what}: unknown keys {sorted(unknown)} (matchLabels, matchExpressions)")
    return dict(value)


def _conditions(items: Iterable[Any]) -> tuple[MatchCondition, ...]:
    out: list[MatchCondition] = []
    for item in items:
        if isinstance(item, MatchCondition):
            out.append(item)
        elif isinstance(item, tuple) and len(item) == 2:
            out.append(MatchCondition(str(item[0]), str(item[1])))
        elif isinstance(item, Mapping) and set(item) == {"name", "expression"}:
            out.append(MatchCondition(str(item["name"]), str(item["expression"])))
        else:
            raise TypeError(
                f"a match condition is a MatchCondition, (name, expression) or a dict, not {item!r}"
            )
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ValueError("match condition names must be unique")
    return tuple(out)


def admission_webhook(
    *,
    kind: Any = None,
    mutating: bool | None = None,
    verbs: str | Iterable[str] = ("create", "update"),
    failure_policy: str = "Fail",
    side_effects: str = "None",
    path: str | None = None,
    url: str | None = None,
    name: str | None = None,
    groups: str | Iterable[str] | None = None,
    versions: str | Iterable[str] | None = None,
    resources: str | Iterable[str] | None = None,
    scope: str | None = None,
    match_policy: str | None = None,
    namespace_selector: Any = None,
    object_selector: Any = None,
    timeout_seconds: int | None = None,
    reinvocation_policy: str | None = None,
    match_conditions: Iterable[Any] = (),
    admission_review_versions: str | Iterable[str] = ("v1",),
    service_name: str = DEFAULT_SERVICE_NAME,
    service_namespace: str = DEFAULT_SERVICE_NAMESPACE,
    service_port: int | None = None,
) -> Callable[[T], T]:
    """Declare how the API server calls a webhook (`+kubebuilder:webhook`); stackable.

    On a Defaulter or Validator the kind, path and `mutating` come from registration; a raw
    handler names its `kind` (and `mutating`). `verbs`: create, update, delete, connect or *.
    `failure_policy` Fail or Ignore, `side_effects` None or NoneOnDryRun; `match_policy`,
    `timeout_seconds` (1-30), `reinvocation_policy`, selectors and `match_conditions` (CEL,
    as (name, expression) pairs) are written only when given, as controller-gen does.
    """
    verb_list = _strings(verbs, "verbs") or ()
    if not verb_list:
        raise ValueError("a webhook needs at least one verb")
    if timeout_seconds is not None and not (
        isinstance(timeout_seconds, int) and 1 <= timeout_seconds <= 30
    ):
        raise ValueError("timeout_seconds must be an integer between 1 and 30")
    if path is not None and url is not None:
        raise ValueError("path and url are mutually exclusive")
    if path is not None:
        check_path(path)
    if kind is not None:
        kind_of(kind)  # a bad kind fails here, at the declaration
    reviews = _strings(admission_review_versions, "admission_review_versions") or ()
    for version in reviews:
        _choice(version, ADMISSION_REVIEW_VERSIONS, "admission review versions")
    marker = WebhookMarker(
        kind=kind,
        mutating=mutating,
        path=path,
        url=url,
        name=name,
        groups=_strings(groups, "groups"),
        versions=_strings(versions, "versions"),
        resources=_strings(resources, "resources"),
        verbs=tuple(_choice(v, OPERATIONS, "verbs") for v in verb_list),
        scope=None if scope is None else _choice(scope, SCOPES, "scope"),
        failure_policy=_choice(failure_policy, FAILURE_POLICIES, "failure_policy"),
        side_effects=_choice(side_effects, SIDE_EFFECTS, "side_effects"),
        match_policy=None
        if match_policy is None
        else _choice(match_policy, MATCH_POLICIES, "match_policy"),
        namespace_selector=_selector(namespace_selector, "namespace_selector"),
        object_selector=_selector(object_selector, "object_selector"),
        timeout_seconds=timeout_seconds,
        reinvocation_policy=None
        if reinvocation_policy is None
        else _choice(reinvocation_policy, REINVOCATION_POLICIES, "reinvocation_policy"),
        match_conditions=_conditions(match_conditions),
        admission_review_versions=reviews,
        service_name=service_name,
        service_namespace=service_namespace,
        service_port=service_port,
    )
    if marker.reinvocation_policy is not None and mutating is False:
        raise ValueError("only mutating webhooks have a reinvocation policy")

    def decorate(target: T) -> T:
        existing: tuple[WebhookMarker, ...] = getattr(target, "__kubeforge_webhooks__", ())
        # A subclass's own markers come first; inherited ones still apply.
        target.__kubeforge_webhooks__ = (marker, *existing)  # type: ignore[attr-defined]
        return target

    return decorate


def markers_of(target: Any) -> tuple[WebhookMarker, ...]:
    """The markers of a class, an instance (its class's) or a function or bound method."""
    found = getattr(target, "__kubeforge_webhooks__", None)
    if found is None:
        found = getattr(getattr(target, "__func__", None), "__kubeforge_webhooks__", None)
    return tuple(found or ())


def marker_for(target: Any, mutating: bool) -> WebhookMarker | None:
    """The marker that describes `target` served as a mutating (or validating) webhook: one
    that says so, else one that leaves it open."""
    markers = markers_of(target)
    for marker in markers:
        if marker.mutating is mutating:
            return marker
    for marker in markers:
        if marker.mutating is None:
            return marker
    return None


# Manifests -----------------------------------------------------------------------------------


def webhook_configurations(
    specs: Iterable[WebhookSpec],
    *,
    base_url: str | None = None,
    ca_bundle: bytes | None = None,
    mutating_name: str = MUTATING_CONFIGURATION,
    validating_name: str = VALIDATING_CONFIGURATION,
) -> list[dict[str, Any]]:
    """The MutatingWebhookConfiguration and ValidatingWebhookConfiguration for `specs`
    (each only when it has webhooks), as controller-gen writes them.

    `base_url` (`https://127.0.0.1:9443`) points every path-served webhook at a server on this
    machine instead of the Service; `ca_bundle` (PEM) is the CA the API server trusts for it.
    """
    groups: dict[bool, list[WebhookSpec]] = {True: [], False: []}
    for spec in specs:
        spec.check()
        groups[spec.mutating].append(spec)
    out: list[dict[str, Any]] = []
    for mutating, name in ((True, mutating_name), (False, validating_name)):
        members = sorted(groups[mutating], key=lambda s: s.name)  # stable, as controller-gen
        if not members:
            continue
        seen: set[str] = set()
        for spec in members:
            if spec.name in seen:
                raise ValueError(f"two webhooks in {name} are named {spec.name!r}")
            seen.add(spec.name)
        webhooks = []
        for spec in members:
            client = spec.client_config(base_url)
            if ca_bundle is not None:
                client["caBundle"] = base64.b64encode(ca_bundle).decode()
            webhooks.append(spec.manifest(client))
        out.append(
            {
                "apiVersion": ADMISSION_API_VERSION,
                "kind": "MutatingWebhookConfiguration"
                if mutating
                else "ValidatingWebhookConfiguration",
                "metadata": {"name": name},
                "webhooks": webhooks,
            }
        )
    return out


def webhooks_yaml(configurations: Sequence[Mapping[str, Any]]) -> str:
    """config/webhook/manifests.yaml: the configurations as `---` separated documents."""
    return "".join(dump_yaml(config) for config in configurations)
