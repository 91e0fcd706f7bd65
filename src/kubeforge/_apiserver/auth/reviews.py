"""The review APIs: TokenReview, SelfSubjectReview, and the four access reviews.

Access reviews ask the same authorizer that guards requests, so `kubectl auth can-i`
answers what the server would do; SelfSubjectRulesReview lists the RBAC rules that apply
in a namespace (what `kubectl auth can-i --list` prints).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeforge._apiserver.auth.attributes import Attributes
from kubeforge._apiserver.auth.authenticator import Authenticator
from kubeforge._apiserver.auth.rbac import RBACAuthorizer
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.user import UserInfo
from kubeforge._apiserver.types.validation.authorization import validate_access_review

__all__ = ["Reviews"]

Decide = Callable[[Attributes], tuple[bool, str]]


_ACCESS_REVIEWS = frozenset(
    {"SelfSubjectAccessReview", "SubjectAccessReview", "LocalSubjectAccessReview"}
)


def _extra(value: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        return {}
    return {str(k): tuple(str(x) for x in v or ()) for k, v in value.items()}


def _subject(spec: dict[str, Any]) -> UserInfo:
    """The user a (Local)SubjectAccessReview asks about."""
    groups = tuple(str(g) for g in spec.get("groups") or ())
    return UserInfo(
        str(spec.get("user") or ""), str(spec.get("uid") or ""), groups, _extra(spec.get("extra"))
    )


class Reviews:
    """Answers the review kinds for the requester of `call`."""

    def __init__(self, authenticator: Authenticator, rbac: RBACAuthorizer, decide: Decide) -> None:
        self.authenticator = authenticator
        self.rbac = rbac
        self.decide = decide

    def answer(self, call: Call, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise StatusError.bad_request("the request body must be a review object")
        rt = call.rt
        result = dict(body)
        result["kind"] = rt.kind
        result["apiVersion"] = rt.api_version
        meta = dict(result.get("metadata") or {})
        meta["creationTimestamp"] = None
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != call.namespace:
                raise StatusError.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            meta["namespace"] = call.namespace
        result["metadata"] = meta
        spec = result.get("spec") or {}
        if not isinstance(spec, dict):
            raise StatusError.bad_request("spec must be an object")
        user = call.user
        assert user is not None, "reviews are answered for authenticated requests"
        kind = rt.kind
        if kind == "SelfSubjectReview":
            result["status"] = {"userInfo": user.to_dict()}
        elif kind == "TokenReview":
            result["status"] = self._token_review(spec)
        elif kind == "SelfSubjectRulesReview":
            result["status"] = self._rules_review(user, str(spec.get("namespace") or ""))
        elif kind in _ACCESS_REVIEWS:
            for key in ("resourceAttributes", "nonResourceAttributes"):
                if spec.get(key) is not None and not isinstance(spec[key], dict):
                    raise StatusError.bad_request(f"spec.{key} must be an object")
            errors = validate_access_review(kind, spec, call.namespace)
            if errors:
                raise StatusError.invalid("authorization.k8s.io", kind, "", errors)
            subject = user if kind == "SelfSubjectAccessReview" else _subject(spec)
            result["status"] = self._access(subject, spec)
        return result

    def _token_review(self, spec: dict[str, Any]) -> dict[str, Any]:
        token = spec.get("token")
        if not token or not isinstance(token, str):
            raise StatusError.bad_request("token is required for TokenReview in authentication")
        audiences = tuple(str(a) for a in spec.get("audiences") or ())
        result = self.authenticator.token_user(token, audiences)
        if result.user is None:
            return {"user": {}, "error": result.error}
        status: dict[str, Any] = {"authenticated": True, "user": result.user.to_dict()}
        if result.audiences:
            status["audiences"] = list(result.audiences)
        return status

    def _access(self, user: UserInfo, spec: dict[str, Any]) -> dict[str, Any]:
        """What the authorizer says of a (validated) access review's attributes."""
        resource = spec.get("resourceAttributes")
        if resource is not None:
            attrs = Attributes(
                user,
                str(resource.get("verb") or ""),
                True,
                str(resource.get("group") or ""),
                str(resource.get("version") or ""),
                str(resource.get("resource") or ""),
                str(resource.get("subresource") or ""),
                str(resource.get("namespace") or ""),
                str(resource.get("name") or ""),
            )
        else:
            non_resource = spec["nonResourceAttributes"]
            attrs = Attributes(
                user,
                str(non_resource.get("verb") or ""),
                False,
                path=str(non_resource.get("path") or ""),
            )
        allowed, reason = self.decide(attrs)
        status: dict[str, Any] = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return status

    def _rules_review(self, user: UserInfo, namespace: str) -> dict[str, Any]:
        rules, errors = self.rbac.rules_for(user, namespace)
        resource_rules: list[dict[str, Any]] = []
        non_resource_rules: list[dict[str, Any]] = []
        for rule in rules:
            if rule.urls:
                non_resource_rules.append(
                    {"verbs": list(rule.verbs), "nonResourceURLs": list(rule.urls)}
                )
            else:
                entry: dict[str, Any] = {"verbs": list(rule.verbs)}
                if rule.groups:
                    entry["apiGroups"] = list(rule.groups)
                if rule.resources:
                    entry["resources"] = list(rule.resources)
                if rule.names:
                    entry["resourceNames"] = list(rule.names)
                resource_rules.append(entry)
        status: dict[str, Any] = {
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": bool(errors),
        }
        if errors:
            status["evaluationError"] = ", ".join(errors)
        return status
