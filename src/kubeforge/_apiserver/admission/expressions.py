"""CEL for admission: matchConditions of webhooks and policies, and policy expressions.

The variables are those of k8s.io/apiserver pkg/admission/plugin/cel (activation.go,
condition.go): `object`, `oldObject` (null where the operation has none), `request` (the
AdmissionRequest without its objects), `authorizer` (with `authorizer.requestResource`),
and for policies `params`, `namespaceObject` and `variables`. The authorizer library
(`authorizer.group(g).resource(r).namespace(n).name(x).check(verb).allowed()`,
`.path(p)`, `.serviceAccount(ns, name)`, `.subresource(s)`, `.reason()`, `.errored()`,
`.error()`) asks the server's authorizer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubeforge._api.machinery.cel import runtime_error_text
from kubeforge._apiserver.admission.attributes import Attributes
from kubeforge._apiserver.admission.matching import Match
from kubeforge._apiserver.request.user import UserInfo
from kubeforge._apiserver.types.admissioncel import AUTHORIZER, Compiled, compile_cel

__all__ = ["Authorize", "Conditions", "Context", "allow_all"]

# Asks whether `user` may do what `attributes` describe (verb, apiGroup, resource,
# subresource, namespace, name, or path): (allowed, reason).
Authorize = Callable[[UserInfo, Mapping[str, str]], tuple[bool, str]]


def allow_all(user: UserInfo, attributes: Mapping[str, str]) -> tuple[bool, str]:
    """The authorizer of a server that lets its one administrator do everything."""
    return True, ""


class Context:
    """The variables of one request for one match (kind and resource as the rule matched)."""

    def __init__(
        self,
        attrs: Attributes,
        match: Match,
        object_: dict[str, Any] | None,
        old_object: dict[str, Any] | None,
        authorize: Authorize,
    ) -> None:
        self.activation: dict[str, Any] = {
            "object": object_,
            "oldObject": old_object,
            "request": request_value(attrs, match),
            "authorizer": {
                AUTHORIZER: "user",
                "requestResource": {
                    AUTHORIZER: "user",
                    "apiGroup": match.rt.group,
                    "resource": match.rt.plural,
                    "subresource": attrs.subresource,
                    "namespace": attrs.namespace,
                    "name": attrs.name,
                },
            },
        }
        user = attrs.user

        def check(target: Any, verb: Any) -> dict[str, Any]:
            if not isinstance(target, dict) or AUTHORIZER not in target:
                raise ValueError("no such overload")
            asked = {
                k: v
                for k, v in target.items()
                if k not in (AUTHORIZER, "user", "groups", "requestResource")
            }
            asked["verb"] = str(verb)
            who = user
            if "user" in target:
                who = UserInfo(target["user"], groups=tuple(target["groups"].split(",")))
            try:
                allowed, reason = authorize(who, asked)
            except Exception as exc:  # an authorizer failure is the decision's error
                return {
                    "__decision__": True,
                    "allowed": False,
                    "reason": "",
                    "errored": True,
                    "error": str(exc),
                }
            return {
                "__decision__": True,
                "allowed": allowed,
                "reason": reason,
                "errored": False,
                "error": "",
            }

        self.functions = {"check": check}

    def evaluate(self, compiled: Compiled) -> tuple[Any, str | None]:
        """(value, None), or (None, the error in kube-apiserver's words)."""
        if compiled.expression is None:
            return None, f"compilation error: {compiled.error}"
        try:
            return compiled.expression.evaluate(self.activation, self.functions), None
        except Exception as exc:
            detail = runtime_error_text(exc)
            return None, f"expression '{compiled.source}' resulted in error: {detail}"


def request_value(attrs: Attributes, match: Match) -> dict[str, Any]:
    """The `request` variable: the AdmissionRequest without its objects (condition.go)."""
    group, version, kind = match.kind
    rt = attrs.rt
    request: dict[str, Any] = {
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {
            "group": match.rt.group,
            "version": match.rt.version,
            "resource": match.rt.plural,
        },
        "subResource": attrs.subresource,
        "requestKind": {"group": attrs.kind[0], "version": attrs.kind[1], "kind": attrs.kind[2]},
        "requestResource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
        "requestSubResource": attrs.subresource,
        "name": attrs.name,
        "namespace": attrs.namespace,
        "operation": attrs.operation,
        "userInfo": attrs.user.to_dict(),
        "dryRun": attrs.dry_run,
        "options": attrs.options,
    }
    return request


class Conditions:
    """matchConditions: all must be true for the webhook or policy to apply."""

    __slots__ = ("conditions",)

    def __init__(self, raw: Any, variables: tuple[str, ...]) -> None:
        self.conditions: list[tuple[str, Compiled]] = []
        for item in raw if isinstance(raw, list) else ():
            if isinstance(item, Mapping):
                source = str(item.get("expression") or "")
                self.conditions.append(
                    (str(item.get("name") or ""), compile_cel(source, variables))
                )

    def __bool__(self) -> bool:
        return bool(self.conditions)

    def evaluate(self, context: Context) -> tuple[bool, list[str]]:
        """(matches, errors): any false condition means no match, whatever else failed
        (matchconditions/matcher.go); errors only count when nothing was false."""
        errors: list[str] = []
        for _, compiled in self.conditions:
            value, error = context.evaluate(compiled)
            if error is not None:
                errors.append(error)
            elif value is False:
                return False, []
            elif value is not True:
                errors.append(f"expression '{compiled.source}' resulted in error: no such overload")
        return True, errors
