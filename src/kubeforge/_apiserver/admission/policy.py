"""ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (admissionregistration/v1).

Follows k8s.io/apiserver pkg/admission/plugin/policy: generic/policy_matcher.go and
matching/matching.go (matchConstraints, then each binding's matchResources),
generic/policy_dispatcher.go (CollectParams: paramRef name or selector, namespace rules,
parameterNotFoundAction), validating/validator.go (matchConditions, validations, messages)
and validating/dispatcher.go (failurePolicy for configuration errors, Deny/Warn/Audit, the
denial built as a Forbidden whose reason and code become the validation's, Invalid by
default). Expressions are not type-checked against schemas, and run without cost budgets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubeforge._api.machinery.selectors import LabelSelector, SelectorError, selector_from_dict
from kubeforge._apiserver.admission.attributes import Attributes
from kubeforge._apiserver.admission.expressions import Conditions, Context
from kubeforge._apiserver.admission.matching import Match, Matcher, Rule, Selector
from kubeforge._apiserver.admission.webhooks import Environment
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.types.admissioncel import POLICY_VARIABLES, Compiled, compile_cel
from kubeforge._apiserver.types.resource import ResourceType

__all__ = ["Binding", "Policy", "PolicyEnvironment", "dispatch_policies"]

log = logging.getLogger("kubeforge.apiserver.admission")

# celconfig.MaxEvaluatedMessageExpressionSizeBytes
_MAX_MESSAGE_BYTES = 5 * 1024
_REASON_CODES = {
    "Forbidden": 403,
    "Unauthorized": 401,
    "RequestEntityTooLarge": 413,
    "Invalid": 422,
}


class PolicyEnvironment(Environment, Protocol):
    """What policies need from the server besides what webhooks need."""

    def param_type(self, api_version: str, kind: str) -> ResourceType | None: ...

    async def find_params(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str | None,
        selector: LabelSelector | None,
    ) -> list[dict[str, Any]]: ...

    def namespace_object(self, name: str) -> dict[str, Any] | None: ...


class _ConfigError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class MatchResources:
    """matchConstraints of a policy, or matchResources of a binding."""

    matcher: Matcher | None  # None: no resourceRules (a binding then matches what the policy does)
    namespace_selector: Selector
    object_selector: Selector

    @classmethod
    def parse(cls, raw: Any) -> MatchResources:
        raw = raw if isinstance(raw, Mapping) else {}
        rules = [Rule.parse(r) for r in raw.get("resourceRules") or ()]
        exclude = [Rule.parse(r) for r in raw.get("excludeResourceRules") or ()]
        equivalent = raw.get("matchPolicy", "Equivalent") == "Equivalent"
        return cls(
            Matcher(rules, equivalent, exclude) if rules else None,
            Selector.parse(raw.get("namespaceSelector")),
            Selector.parse(raw.get("objectSelector")),
        )

    def match(self, env: Environment, attrs: Attributes) -> Match | None:
        if not self.namespace_selector.matches_namespace(attrs, env.namespace_labels):
            return None
        if not self.object_selector.matches_object(attrs):
            return None
        if self.matcher is None:
            return Match(attrs.rt, attrs.kind)
        return self.matcher.match(attrs, env.equivalents, names=True)

    def may_match(
        self,
        operation: str,
        rt: ResourceType,
        subresource: str,
        equivalents: Callable[[ResourceType, str], list[ResourceType]],
    ) -> bool:
        return self.matcher is None or self.matcher.may_match(
            operation, rt, subresource, equivalents
        )


@dataclass(frozen=True, slots=True)
class Validation:
    expression: Compiled
    message: str
    message_expression: Compiled | None
    reason: str


@dataclass(frozen=True, slots=True)
class Policy:
    """One ValidatingAdmissionPolicy, compiled."""

    name: str
    param_kind: tuple[str, str] | None
    constraints: MatchResources | None
    conditions: Conditions
    variables: tuple[tuple[str, Compiled], ...]
    validations: tuple[Validation, ...]
    audit_annotations: tuple[tuple[str, Compiled], ...]
    failure_policy: str

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Policy:
        spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
        assert isinstance(spec, Mapping)
        param = spec.get("paramKind")
        param_kind = None
        if isinstance(param, Mapping):
            param_kind = (str(param.get("apiVersion") or ""), str(param.get("kind") or ""))
        constraints = spec.get("matchConstraints")
        validations = []
        for raw in spec.get("validations") or ():
            if not isinstance(raw, Mapping):
                continue
            msg_expr = str(raw.get("messageExpression") or "")
            validations.append(
                Validation(
                    compile_cel(str(raw.get("expression") or ""), POLICY_VARIABLES),
                    str(raw.get("message") or "").strip(),
                    compile_cel(msg_expr, POLICY_VARIABLES) if msg_expr.strip() else None,
                    str(raw.get("reason") or "Invalid"),
                )
            )
        return cls(
            name=str((obj.get("metadata") or {}).get("name") or ""),
            param_kind=param_kind,
            constraints=MatchResources.parse(constraints)
            if isinstance(constraints, Mapping)
            else None,
            conditions=Conditions(spec.get("matchConditions"), POLICY_VARIABLES),
            variables=tuple(
                (
                    str(v.get("name") or ""),
                    compile_cel(str(v.get("expression") or ""), POLICY_VARIABLES),
                )
                for v in spec.get("variables") or ()
                if isinstance(v, Mapping)
            ),
            validations=tuple(validations),
            audit_annotations=tuple(
                (
                    str(a.get("key") or ""),
                    compile_cel(str(a.get("valueExpression") or ""), POLICY_VARIABLES),
                )
                for a in spec.get("auditAnnotations") or ()
                if isinstance(a, Mapping)
            ),
            failure_policy=str(spec.get("failurePolicy") or "Fail"),
        )


@dataclass(frozen=True, slots=True)
class Binding:
    """One ValidatingAdmissionPolicyBinding, compiled."""

    name: str
    policy: str
    param_ref: Mapping[str, Any] | None
    resources: MatchResources | None
    actions: tuple[str, ...]

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Binding:
        spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
        assert isinstance(spec, Mapping)
        ref = spec.get("paramRef")
        resources = spec.get("matchResources")
        return cls(
            name=str((obj.get("metadata") or {}).get("name") or ""),
            policy=str(spec.get("policyName") or ""),
            param_ref=ref if isinstance(ref, Mapping) else None,
            resources=MatchResources.parse(resources) if isinstance(resources, Mapping) else None,
            actions=tuple(str(a) for a in spec.get("validationActions") or ()),
        )


@dataclass(slots=True)
class _Decision:
    deny: bool
    message: str
    reason: str = ""
    index: int = 0


def _parse_group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


async def _collect_params(
    env: PolicyEnvironment, policy: Policy, binding: Binding, attrs: Attributes
) -> list[dict[str, Any] | None]:
    """The params a binding evaluates its policy with (one evaluation each)."""
    if policy.param_kind is None:
        return [None]
    api_version, kind = policy.param_kind
    rt = env.param_type(api_version, kind)
    ref = binding.param_ref
    if rt is None or ref is None:
        return [None]
    namespace: str | None = None
    if rt.namespaced:
        namespace = str(ref.get("namespace") or "") or attrs.namespace
        if not namespace:
            raise _ConfigError(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped "
                "resources"
            )
    elif ref.get("namespace"):
        raise _ConfigError(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
        )
    name = ref.get("name")
    raw_selector = ref.get("selector")
    if name:
        if raw_selector is not None:
            raise _ConfigError("paramRef.name and paramRef.selector are mutually exclusive")
        params = await env.find_params(rt, namespace, str(name), None)
    elif raw_selector is not None:
        try:
            selector = selector_from_dict(raw_selector)
        except (SelectorError, KeyError, TypeError) as exc:
            raise _ConfigError(str(exc)) from None
        params = await env.find_params(rt, namespace, None, selector)
    else:
        raise _ConfigError("one of name or selector must be provided")
    if not params and ref.get("parameterNotFoundAction") == "Deny":
        raise _ConfigError("no params found for policy binding with `Deny` parameterNotFoundAction")
    return list(params)


def _message(validation: Validation, context: Context) -> str:
    """messageExpression's result when it is a usable one-line string, else message, else
    `failed expression: <expression>` (validator.go)."""
    if validation.message_expression is not None:
        value, error = context.evaluate(validation.message_expression)
        if error is None and isinstance(value, str):
            text = value.strip()
            if text and len(text.encode()) <= _MAX_MESSAGE_BYTES and "\n" not in text:
                return text
    if validation.message:
        return validation.message
    return f"failed expression: {validation.expression.source.strip()}"


async def _evaluate(
    env: PolicyEnvironment,
    policy: Policy,
    match: Match,
    attrs: Attributes,
    params: dict[str, Any] | None,
    namespace: dict[str, Any] | None,
) -> list[_Decision]:
    fail = policy.failure_policy != "Ignore"
    obj, old = attrs.object, attrs.old_object
    if match.rt is not attrs.rt and match.kind != attrs.kind:
        obj = None if obj is None else await env.convert(obj, attrs.rt, match.rt)
        old = None if old is None else await env.convert(old, attrs.rt, match.rt)
    context = Context(attrs, match, obj, old, env.authorize)
    context.activation["params"] = params
    context.activation["namespaceObject"] = namespace
    variables: dict[str, Any] = {}
    context.activation["variables"] = variables
    failed_variables: dict[str, str] = {}
    for name, compiled in policy.variables:
        value, error = context.evaluate(compiled)
        if error is None:
            variables[name] = value
        else:
            failed_variables[name] = error
    if policy.conditions:
        matched, errors = policy.conditions.evaluate(context)
        if not matched:
            return []
        if errors:
            text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
            return [_Decision(fail, text)]
    decisions = []
    for index, validation in enumerate(policy.validations):
        value, error = context.evaluate(validation.expression)
        if error is not None:
            for name, cause in failed_variables.items():
                if f"no such key: {name}" in error:
                    error = f'composited variable "{name}" fails to evaluate: {cause}'
                    break
            decisions.append(_Decision(fail, error, index=index))
        elif value is not True:
            decisions.append(
                _Decision(True, _message(validation, context), validation.reason, index)
            )
    for key, compiled in policy.audit_annotations:
        value, error = context.evaluate(compiled)
        if error is None and value is not None and not isinstance(value, str):
            error = (
                f"valueExpression '{compiled.source}' resulted in unsupported return type: "
                f"{type(value).__name__}. Return type must be either string or null."
            )
        if error is not None:
            if fail:
                decisions.append(_Decision(True, error))
        elif isinstance(value, str) and value.strip():
            log.debug("audit annotation %s/%s: %s", policy.name, key, value.strip())
    return decisions


def _resource_name(attrs: Attributes) -> str:
    """admission.extractResourceName: the request's name, else the object's (or its
    generateName), else Unknown."""
    if attrs.name:
        return attrs.name
    obj = attrs.object
    if obj is None:
        return "Unknown"
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return "Unknown/errorGettingName"
    return str(meta.get("name") or meta.get("generateName") or "Unknown")


def _denied(
    attrs: Attributes, policy: str, binding: str | None, decision: _Decision
) -> StatusError:
    if binding is None:
        text = f"ValidatingAdmissionPolicy '{policy}' denied request: {decision.message}"
    else:
        text = (
            f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: "
            f"{decision.message}"
        )
    error = StatusError.forbidden(attrs.rt.group, attrs.rt.plural, _resource_name(attrs), text)
    reason = decision.reason or "Invalid"
    error.reason = reason
    error.code = _REASON_CODES.get(reason, 422)
    assert error.details is not None
    error.details["causes"] = [{"message": text}]
    return error


async def dispatch_policies(
    env: PolicyEnvironment,
    policies: tuple[tuple[Policy, tuple[Binding, ...]], ...],
    attrs: Attributes,
    warn: Callable[[str], None],
) -> None:
    """Evaluate the bound policies that match; the first denial refuses the request."""
    denied: list[tuple[str, str | None, _Decision]] = []

    def config_error(policy: Policy, binding: Binding | None, message: str) -> None:
        if policy.failure_policy == "Ignore":
            return
        what = "policy" if binding is None else "binding"
        denied.append(
            (
                policy.name,
                None if binding is None else binding.name,
                _Decision(True, f"failed to configure {what}: {message}"),
            )
        )

    for policy, bindings in policies:
        if policy.constraints is None:
            config_error(policy, None, "policy contained no match constraints, a required field")
            continue
        try:
            match = policy.constraints.match(env, attrs)
        except StatusError as exc:
            config_error(policy, None, exc.message)
            continue
        if match is None:
            continue
        if policy.param_kind is not None:
            api_version, kind = policy.param_kind
            if env.param_type(api_version, kind) is None:
                group, version = _parse_group_version(api_version)
                config_error(
                    policy,
                    None,
                    f"failed to find resource referenced by paramKind: "
                    f"'{group}/{version}, Kind={kind}'",
                )
                continue
        for binding in bindings:
            if binding.resources is not None:
                try:
                    if binding.resources.match(env, attrs) is None:
                        continue
                except StatusError as exc:
                    config_error(policy, binding, exc.message)
                    continue
            try:
                all_params = await _collect_params(env, policy, binding, attrs)
            except _ConfigError as exc:
                config_error(policy, binding, str(exc))
                continue
            namespace = None
            if attrs.namespace and not attrs.is_namespace:
                namespace = env.namespace_object(attrs.namespace)
            for params in all_params:
                for decision in await _evaluate(env, policy, match, attrs, params, namespace):
                    if not decision.deny:
                        continue
                    for action in binding.actions:
                        if action == "Deny":
                            denied.append((policy.name, binding.name, decision))
                        elif action == "Warn":
                            warn(
                                f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' "
                                f"with binding '{binding.name}': {decision.message}"
                            )
                        elif action == "Audit":
                            log.info(
                                "validation failure audited: policy %s, binding %s, "
                                "expression %d: %s",
                                policy.name,
                                binding.name,
                                decision.index,
                                decision.message,
                            )
    if denied:
        policy_name, binding_name, decision = denied[0]
        raise _denied(attrs, policy_name, binding_name, decision)
