"""The environment admission's CEL expressions compile in: their variables and the
authorizer library.

Webhooks' matchConditions see `object`, `oldObject`, `request` and `authorizer`; policies
also `params`, `namespaceObject` and `variables` (k8s.io/apiserver pkg/admission/plugin/cel,
compile.go). Validating an admission configuration compiles its expressions here, and
admission evaluates the same compiled form (`admission/expressions.py` binds the
authorizer's `check` to the request being admitted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubeforge._api.machinery.cel import Expression, compile_expression

__all__ = [
    "AUTHORIZER",
    "POLICY_VARIABLES",
    "WEBHOOK_VARIABLES",
    "Compiled",
    "compile_cel",
]

WEBHOOK_VARIABLES = ("object", "oldObject", "request", "authorizer")
POLICY_VARIABLES = (*WEBHOOK_VARIABLES, "params", "namespaceObject", "variables")

# The authorizer library works on plain maps (the engine passes only plain values); `check`
# is bound to the request's user and authorizer when an expression is evaluated.
AUTHORIZER = "__authorizer__"


def _builder(field: str) -> Callable[[Any, Any], dict[str, Any]]:
    def build(target: Any, value: Any) -> dict[str, Any]:
        if not isinstance(target, dict) or AUTHORIZER not in target:
            raise ValueError("no such overload")
        built = {k: v for k, v in target.items() if k != "requestResource"}
        built[field] = str(value)
        return built

    return build


def _service_account(target: Any, namespace: Any, name: Any) -> dict[str, Any]:
    if not isinstance(target, dict) or AUTHORIZER not in target:
        raise ValueError("no such overload")
    return {
        AUTHORIZER: "user",
        "user": f"system:serviceaccount:{namespace}:{name}",
        "groups": "system:serviceaccounts,system:serviceaccounts:" + str(namespace),
    }


def _decision_field(field: str) -> Callable[[Any], Any]:
    def read(decision: Any) -> Any:
        if not isinstance(decision, dict) or "__decision__" not in decision:
            raise ValueError("no such overload")
        return decision[field]

    return read


def _check_unbound(target: Any, verb: Any) -> dict[str, Any]:
    raise ValueError("the authorizer is not available here")


_AUTHORIZER_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "group": _builder("apiGroup"),
    "resource": _builder("resource"),
    "subresource": _builder("subresource"),
    "namespace": _builder("namespace"),
    "name": _builder("name"),
    "path": _builder("path"),
    "serviceAccount": _service_account,
    "check": _check_unbound,
    "allowed": _decision_field("allowed"),
    "reason": _decision_field("reason"),
    "errored": _decision_field("errored"),
    "error": _decision_field("error"),
}


@dataclass(frozen=True, slots=True)
class Compiled:
    """One expression of a configuration: compiled, or why it does not compile."""

    source: str
    expression: Expression | None
    error: str | None


def compile_cel(source: str, variables: tuple[str, ...]) -> Compiled:
    """Compile an admission expression over `variables`, with the authorizer library."""
    result = compile_expression(source, variables, _AUTHORIZER_FUNCTIONS)
    if isinstance(result, str):
        return Compiled(source, None, result)
    return Compiled(source, result, None)
