"""Validation of the admission configuration objects (admissionregistration.k8s.io/v1):
Mutating- and ValidatingWebhookConfiguration, ValidatingAdmissionPolicy and its Binding.

The rules and messages are kube-apiserver's (pkg/apis/admissionregistration/validation in
kubernetes/kubernetes and pkg/util/webhook/validation.go in k8s.io/apiserver). CEL
expressions are compiled to report syntax errors and unknown variables or functions; they
are not type-checked against schemas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from kubeforge._api.machinery.access import as_dict, as_int, as_list, as_str
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import go_string_slice
from kubeforge._api.machinery.names import (
    is_dns1035_label,
    is_dns1123_subdomain,
    is_path_segment_name,
    is_qualified_name,
    validate_label_selector,
)
from kubeforge._apiserver.types.admissioncel import (
    POLICY_VARIABLES,
    WEBHOOK_VARIABLES,
    compile_cel,
)

__all__ = [
    "validate_admission_policy",
    "validate_admission_policy_binding",
    "validate_mutating_webhooks",
    "validate_validating_webhooks",
]

Obj = dict[str, Any]
Errors = list[FieldError]

_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_URL_FORM = "; desired format: https://host[/path]"
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")
_POLICY_REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge")
_ACTIONS = ("Audit", "Deny", "Warn")
_MAX_MATCH_CONDITIONS = 64
_MAX_AUDIT_ANNOTATIONS = 20
_MAX_VALUE_EXPRESSION = 5 * 1024
_CEL_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*\Z")
_CEL_RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
# A messageExpression cannot ask the authorizer.
_MESSAGE_VARIABLES = tuple(v for v in POLICY_VARIABLES if v != "authorizer")


def _each(messages: Iterable[str], path: str, value: Any) -> Errors:
    return [FieldError.invalid(path, value, m) for m in messages]


# -- shared pieces ---------------------------------------------------------------------------


def _fully_qualified(name: str, path: str) -> Errors:
    if not name:
        return [FieldError.required(path, "")]
    problems = is_dns1123_subdomain(name)
    if problems:
        return [FieldError.invalid(path, name, ",".join(problems))]
    if len(name.split(".")) < 3:
        return [
            FieldError.invalid(
                path, name, "should be a domain with at least three segments separated by dots"
            )
        ]
    return []


def _wildcard_list(values: list[Any], path: str, what: str) -> Errors:
    errs: Errors = []
    if not values:
        errs.append(FieldError.required(path, ""))
    if len(values) > 1 and "*" in values:
        errs.append(
            FieldError.invalid(
                path, go_string_slice(values), f"if '*' is present, must not specify other {what}"
            )
        )
    return errs


def _resources(resources: list[Any], path: str) -> Errors:
    """`resources`: `*/*` alone; `*` not with plain resources; `x/*` and `*/y` exclude what
    they already cover."""
    errs: Errors = []
    if not resources:
        errs.append(FieldError.required(path, ""))
    wildcard_sub: set[str] = set()  # x of x/*
    wildcard_res: set[str] = set()  # y of */y
    double = single = plain = False
    for i, item in enumerate(resources):
        item = as_str(item)
        if not item:
            errs.append(FieldError.required(f"{path}[{i}]", ""))
            continue
        double = double or item == "*/*"
        single = single or item == "*"
        res, slash, sub = item.partition("/")
        if not slash:
            # As upstream: the last resource without subresource decides.
            plain = item != "*"
            continue
        if res in wildcard_sub:
            errs.append(
                FieldError.invalid(
                    f"{path}[{i}]", item, f"if '{res}/*' is present, must not specify {item}"
                )
            )
        if sub in wildcard_res:
            errs.append(
                FieldError.invalid(
                    f"{path}[{i}]", item, f"if '*/{sub}' is present, must not specify {item}"
                )
            )
        if sub == "*":
            wildcard_sub.add(res)
        if res == "*":
            wildcard_res.add(sub)
    if len(resources) > 1 and double:
        errs.append(
            FieldError.invalid(
                path,
                go_string_slice(resources),
                "if '*/*' is present, must not specify other resources",
            )
        )
    if single and plain:
        errs.append(
            FieldError.invalid(
                path,
                go_string_slice(resources),
                "if '*' is present, must not specify other resources without subresources",
            )
        )
    return errs


def _rule(rule: Obj, path: str) -> Errors:
    operations = as_list(rule.get("operations"))
    errs: Errors = []
    if not operations:
        errs.append(FieldError.required(f"{path}.operations", ""))
    if len(operations) > 1 and "*" in operations:
        errs.append(
            FieldError.invalid(
                f"{path}.operations",
                go_string_slice(operations),
                "if '*' is present, must not specify other operations",
            )
        )
    for i, operation in enumerate(operations):
        if operation not in _OPERATIONS:
            errs.append(FieldError.not_supported(f"{path}.operations[{i}]", operation, _OPERATIONS))
    errs += _wildcard_list(as_list(rule.get("apiGroups")), f"{path}.apiGroups", "API groups")
    versions = as_list(rule.get("apiVersions"))
    errs += _wildcard_list(versions, f"{path}.apiVersions", "API versions")
    for i, version in enumerate(versions):
        if not version:
            errs.append(FieldError.required(f"{path}.apiVersions[{i}]", ""))
    errs += _resources(as_list(rule.get("resources")), f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(FieldError.not_supported(f"{path}.scope", scope, _SCOPES))
    return errs


def _expression(source: str, variables: tuple[str, ...], path: str) -> Errors:
    compiled = compile_cel(source, variables)
    if compiled.error is not None:
        return [FieldError.invalid(path, source, compiled.error)]
    return []


def _match_conditions(conditions: list[Any], path: str, variables: tuple[str, ...]) -> Errors:
    errs: Errors = []
    if len(conditions) > _MAX_MATCH_CONDITIONS:
        errs.append(FieldError.too_many(path, len(conditions), _MAX_MATCH_CONDITIONS))
    names: set[str] = set()
    for i, condition in enumerate(conditions):
        condition = as_dict(condition)
        at = f"{path}[{i}]"
        expression = as_str(condition.get("expression"))
        if not expression.strip():
            errs.append(FieldError.required(f"{at}.expression", ""))
        else:
            errs += _expression(expression.strip(), variables, f"{at}.expression")
        name = as_str(condition.get("name"))
        if not name:
            errs.append(FieldError.required(f"{at}.name", ""))
        else:
            errs += _each(is_qualified_name(name), f"{at}.name", name)
            if name in names:
                errs.append(FieldError.duplicate(f"{at}.name", name))
            names.add(name)
    return errs


# -- webhook configurations ------------------------------------------------------------------


def _url(url: str, path: str) -> Errors:
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return [FieldError.required(path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    errs: Errors = []
    if parts.scheme != "https":
        errs.append(
            FieldError.invalid(
                path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM
            )
        )
    host = parts.netloc.rpartition("@")[2]
    if not host:
        errs.append(FieldError.invalid(path, host, "host must be specified" + _URL_FORM))
    if "@" in parts.netloc:
        errs.append(
            FieldError.invalid(
                path,
                parts.netloc.rpartition("@")[0],
                "user information is not permitted in the URL",
            )
        )
    if parts.fragment:
        errs.append(
            FieldError.invalid(path, parts.fragment, "fragments are not permitted in the URL")
        )
    if parts.query:
        errs.append(
            FieldError.invalid(path, parts.query, "query parameters are not permitted in the URL")
        )
    return errs


def _service(service: Obj, path: str) -> Errors:
    errs: Errors = []
    if not service.get("name"):
        errs.append(FieldError.required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        errs.append(FieldError.required(f"{path}.namespace", "service namespace is required"))
    port = as_int(service.get("port"))
    if port is not None and not 1 <= port <= 65535:
        errs.append(FieldError.invalid(f"{path}.port", port, "port is not valid: " + _PORT_RANGE))
    url_path = service.get("path")
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return errs
    if url_path == "//":
        return [*errs, FieldError.invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        errs.append(FieldError.invalid(f"{path}.path", url_path, "must start with a '/'"))
    steps = url_path[1:]
    if steps.endswith("/"):
        steps = steps[:-1]
    for i, step in enumerate(steps.split("/")):
        if not step:
            errs.append(
                FieldError.invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty")
            )
            continue
        for problem in is_dns1123_subdomain(step):
            errs.append(FieldError.invalid(f"{path}.path", url_path, f"segment[{i}]: {problem}"))
    return errs


def validate_client_config(config: Any, path: str) -> Errors:
    """A webhook's clientConfig: exactly one of a valid `url` or `service` (admission
    webhooks and CRDs' conversion webhooks are checked alike)."""
    config = as_dict(config)
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [FieldError.required(path, "exactly one of url or service is required")]
    if isinstance(url, str):
        return _url(url, f"{path}.url")
    if isinstance(service, dict):
        return _service(service, f"{path}.service")
    return []


def validate_review_versions(
    versions: list[Any], path: str, *, required: str = "must specify one of v1, v1beta1"
) -> Errors:
    """A webhook's review versions: unique DNS labels, one of them v1 or v1beta1; none at
    all is `required` (the detail admission's and conversion's validation each give)."""
    if not versions:
        return [FieldError.required(path, required)]
    errs: Errors = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        version = as_str(version)
        if version in seen:
            errs.append(FieldError.invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        errs += _each(is_dns1035_label(version), f"{path}[{i}]", version)
    if not seen & {"v1", "v1beta1"}:
        errs.append(
            FieldError.invalid(
                path, go_string_slice(versions), "must include at least one of v1, v1beta1"
            )
        )
    return errs


def _webhooks(obj: Obj, *, mutating: bool) -> Errors:
    errs: Errors = []
    names: set[str] = set()
    for i, hook in enumerate(as_list(obj.get("webhooks"))):
        hook = as_dict(hook)
        at = f"webhooks[{i}]"
        name = as_str(hook.get("name"))
        errs += _fully_qualified(name, f"{at}.name")
        for j, rule in enumerate(as_list(hook.get("rules"))):
            errs += _rule(as_dict(rule), f"{at}.rules[{j}]")
        for key, allowed in (
            ("failurePolicy", ("Fail", "Ignore")),
            ("matchPolicy", ("Equivalent", "Exact")),
        ):
            value = hook.get(key)
            if value is not None and value not in allowed:
                errs.append(FieldError.not_supported(f"{at}.{key}", value, allowed))
        side_effects = hook.get("sideEffects")
        if side_effects is None:
            errs.append(
                FieldError.required(f"{at}.sideEffects", "must specify one of None, NoneOnDryRun")
            )
        elif side_effects not in _NO_SIDE_EFFECTS:
            errs.append(
                FieldError.not_supported(f"{at}.sideEffects", side_effects, _NO_SIDE_EFFECTS)
            )
        timeout = as_int(hook.get("timeoutSeconds"))
        if timeout is not None and not 1 <= timeout <= 30:
            errs.append(
                FieldError.invalid(
                    f"{at}.timeoutSeconds",
                    timeout,
                    "the timeout value must be between 1 and 30 seconds",
                )
            )
        for key in ("namespaceSelector", "objectSelector"):
            errs += validate_label_selector(hook.get(key), f"{at}.{key}")
        if mutating:
            policy = hook.get("reinvocationPolicy")
            if policy is not None and policy not in ("IfNeeded", "Never"):
                errs.append(
                    FieldError.not_supported(
                        f"{at}.reinvocationPolicy", policy, ("IfNeeded", "Never")
                    )
                )
        errs += validate_client_config(hook.get("clientConfig"), f"{at}.clientConfig")
        errs += _match_conditions(
            as_list(hook.get("matchConditions")), f"{at}.matchConditions", WEBHOOK_VARIABLES
        )
        errs += validate_review_versions(
            as_list(hook.get("admissionReviewVersions")), f"{at}.admissionReviewVersions"
        )
        if name:
            if name in names:
                errs.append(FieldError.duplicate(f"{at}.name", name))
            names.add(name)
    return errs


def validate_mutating_webhooks(obj: Obj) -> Errors:
    """A MutatingWebhookConfiguration."""
    return _webhooks(obj, mutating=True)


def validate_validating_webhooks(obj: Obj) -> Errors:
    """A ValidatingWebhookConfiguration."""
    return _webhooks(obj, mutating=False)


# -- policies and bindings -------------------------------------------------------------------


def _named_rule(rule: Obj, path: str) -> Errors:
    errs: Errors = []
    seen: set[str] = set()
    for i, name in enumerate(as_list(rule.get("resourceNames"))):
        name = as_str(name)
        errs += _each(is_path_segment_name(name), f"{path}.resourceNames[{i}]", name)
        if name in seen:
            errs.append(FieldError.duplicate(f"{path}.resourceNames[{i}]", name))
        seen.add(name)
    return errs + _rule(rule, path)


def _match_resources(resources: Obj, path: str) -> Errors:
    errs: Errors = []
    policy = resources.get("matchPolicy")
    if policy is None:
        errs.append(FieldError.required(f"{path}.matchPolicy", ""))
    elif policy not in ("Equivalent", "Exact"):
        errs.append(
            FieldError.not_supported(f"{path}.matchPolicy", policy, ("Equivalent", "Exact"))
        )
    for key in ("namespaceSelector", "objectSelector"):
        if resources.get(key) is None:
            errs.append(FieldError.required(f"{path}.{key}", ""))
        else:
            errs += validate_label_selector(resources.get(key), f"{path}.{key}")
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(as_list(resources.get(key))):
            errs += _named_rule(as_dict(rule), f"{path}.{key}[{i}]")
    return errs


def _param_kind(param: Obj, path: str) -> Errors:
    errs: Errors = []
    api_version = as_str(param.get("apiVersion"))
    if not api_version:
        errs.append(FieldError.required(f"{path}.apiVersion", ""))
    elif api_version.count("/") > 1:
        errs.append(
            FieldError.invalid(
                f"{path}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"
            )
        )
    else:
        group, _, version = api_version.rpartition("/")
        if group:
            problems = is_dns1123_subdomain(group)
            if problems:
                errs.append(FieldError.invalid(f"{path}.apiVersion", group, ",".join(problems)))
        if not version:
            errs.append(
                FieldError.invalid(f"{path}.apiVersion", api_version, "version must be specified")
            )
        elif problems := is_dns1035_label(version):
            errs.append(FieldError.invalid(f"{path}.apiVersion", version, ",".join(problems)))
    kind = as_str(param.get("kind"))
    if not kind:
        errs.append(FieldError.required(f"{path}.kind", ""))
    elif problems := is_dns1035_label(kind.lower()):
        errs.append(
            FieldError.invalid(
                f"{path}.kind",
                kind,
                "may have mixed case, but should otherwise match: " + ",".join(problems),
            )
        )
    return errs


def _validation(
    validation: Obj, path: str, variables: tuple[str, ...], message_vars: tuple[str, ...]
) -> Errors:
    errs: Errors = []
    expression = as_str(validation.get("expression"))
    if not expression.strip():
        errs.append(FieldError.required(f"{path}.expression", "expression is not specified"))
    else:
        errs += _expression(expression, variables, f"{path}.expression")
    message_expression = as_str(validation.get("messageExpression"))
    if message_expression and not message_expression.strip():
        errs.append(
            FieldError.invalid(
                f"{path}.messageExpression", message_expression, "must be non-empty if specified"
            )
        )
    elif message_expression.strip():
        errs += _expression(message_expression, message_vars, f"{path}.messageExpression")
    message = as_str(validation.get("message"))
    if message and not message.strip():
        errs.append(
            FieldError.invalid(f"{path}.message", message, "message must be non-empty if specified")
        )
    elif "\n" in message.strip() or "\r" in message.strip():
        errs.append(
            FieldError.invalid(f"{path}.message", message, "message must not contain line breaks")
        )
    reason = validation.get("reason")
    if reason is not None and reason not in _POLICY_REASONS:
        errs.append(FieldError.not_supported(f"{path}.reason", reason, _POLICY_REASONS))
    return errs


def validate_admission_policy(obj: Obj) -> Errors:
    """A ValidatingAdmissionPolicy."""
    spec = as_dict(obj.get("spec"))
    name = as_str(as_dict(obj.get("metadata")).get("name"))
    errs: Errors = []
    failure = spec.get("failurePolicy")
    if failure is None:
        errs.append(FieldError.required("spec.failurePolicy", ""))
    elif failure not in ("Fail", "Ignore"):
        errs.append(FieldError.not_supported("spec.failurePolicy", failure, ("Fail", "Ignore")))
    has_params = isinstance(spec.get("paramKind"), dict)
    if has_params:
        errs += _param_kind(as_dict(spec.get("paramKind")), "spec.paramKind")
    variables = (
        POLICY_VARIABLES if has_params else tuple(v for v in POLICY_VARIABLES if v != "params")
    )
    message_vars = tuple(v for v in variables if v in _MESSAGE_VARIABLES)
    constraints = spec.get("matchConstraints")
    if not isinstance(constraints, dict):
        errs.append(FieldError.required("spec.matchConstraints", ""))
    else:
        errs += _match_resources(constraints, "spec.matchConstraints")
        if not as_list(constraints.get("resourceRules")):
            errs.append(FieldError.required("spec.matchConstraints.resourceRules", ""))
    errs += _match_conditions(
        as_list(spec.get("matchConditions")), "spec.matchConditions", variables
    )
    for i, variable in enumerate(as_list(spec.get("variables"))):
        variable = as_dict(variable)
        at = f"spec.variables[{i}]"
        var_name = as_str(variable.get("name"))
        if not var_name.strip():
            errs.append(FieldError.required(f"{at}.name", "name is not specified"))
        elif not _CEL_IDENT.match(var_name) or var_name in _CEL_RESERVED:
            errs.append(
                FieldError.invalid(f"{at}.name", var_name, "name is not a valid CEL identifier")
            )
        expression = as_str(variable.get("expression"))
        if not expression.strip():
            errs.append(FieldError.required(f"{at}.expression", "expression is not specified"))
        else:
            errs += _expression(expression, variables, f"{at}.expression")
    validations = as_list(spec.get("validations"))
    annotations = as_list(spec.get("auditAnnotations"))
    if not validations and not annotations:
        needed = "validations or auditAnnotations must contain at least one item"
        errs.append(FieldError.required("spec.validations", needed))
        errs.append(FieldError.required("spec.auditAnnotations", needed))
        return errs
    for i, validation in enumerate(validations):
        errs += _validation(as_dict(validation), f"spec.validations[{i}]", variables, message_vars)
    if len(annotations) > _MAX_AUDIT_ANNOTATIONS:
        errs.append(
            FieldError.invalid(
                "spec.auditAnnotations",
                f"{len(annotations)} items",
                f"must not have more than {_MAX_AUDIT_ANNOTATIONS} auditAnnotations",
            )
        )
    keys: set[str] = set()
    for i, annotation in enumerate(annotations):
        annotation = as_dict(annotation)
        at = f"spec.auditAnnotations[{i}]"
        key = as_str(annotation.get("key"))
        if name:
            errs += _each(is_qualified_name(f"{name}/{key}"), f"{at}.key", f"{name}/{key}")
        else:
            errs.append(FieldError.invalid(f"{at}.key", key, "requires metadata.name be non-empty"))
        value = as_str(annotation.get("valueExpression")).strip()
        if not value:
            errs.append(
                FieldError.required(f"{at}.valueExpression", "valueExpression is not specified")
            )
        elif len(value) > _MAX_VALUE_EXPRESSION:
            errs.append(
                FieldError.required(
                    f"{at}.valueExpression",
                    f"must not exceed {_MAX_VALUE_EXPRESSION} bytes in length",
                )
            )
        else:
            errs += _expression(value, variables, f"{at}.valueExpression")
        if key in keys:
            errs.append(FieldError.duplicate(f"{at}.key", key))
        keys.add(key)
    return errs


def validate_admission_policy_binding(obj: Obj) -> Errors:
    """A ValidatingAdmissionPolicyBinding."""
    spec = as_dict(obj.get("spec"))
    errs: Errors = []
    policy = as_str(spec.get("policyName"))
    if not policy:
        errs.append(FieldError.required("spec.policyName", ""))
    else:
        errs += _each(is_dns1123_subdomain(policy), "spec.policyName", policy)
    ref = spec.get("paramRef")
    if isinstance(ref, dict):
        at = "spec.paramRef"
        name = as_str(ref.get("name"))
        selector = ref.get("selector")
        exclusive = "name and selector are mutually exclusive"
        if name:
            errs += _each(is_path_segment_name(name), f"{at}.name", name)
            if selector is not None:
                errs.append(FieldError.forbidden(f"{at}.name", exclusive))
        if selector is not None:
            errs += validate_label_selector(selector, f"{at}.selector")
            if name:
                errs.append(FieldError.forbidden(f"{at}.selector", exclusive))
        if not name and selector is None:
            errs.append(FieldError.required(at, "one of name or selector must be specified"))
        action = ref.get("parameterNotFoundAction")
        if not action:
            errs.append(FieldError.required(f"{at}.parameterNotFoundAction", ""))
        elif action not in ("Deny", "Allow"):
            errs.append(
                FieldError.not_supported(f"{at}.parameterNotFoundAction", action, ("Deny", "Allow"))
            )
    resources = spec.get("matchResources")
    if isinstance(resources, dict):
        errs += _match_resources(resources, "spec.matchResources")
    actions = as_list(spec.get("validationActions"))
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action not in _ACTIONS:
            errs.append(FieldError.not_supported(f"spec.validationActions[{i}]", action, _ACTIONS))
        if action in seen:
            errs.append(FieldError.duplicate(f"spec.validationActions[{i}]", action))
        seen.add(as_str(action))
    if {"Deny", "Warn"} <= seen:
        errs.append(
            FieldError.invalid(
                "spec.validationActions",
                go_string_slice(actions),
                "must not contain both Deny and Warn (repeating the same validation failure "
                "information in the API response and headers serves no purpose)",
            )
        )
    if not seen:
        errs.append(
            FieldError.required(
                "spec.validationActions", "at least one validation action is required"
            )
        )
    return errs
