"""Validation of the authorization.k8s.io/v1 access reviews (kubernetes
pkg/apis/authorization/validation/validation.go): which attributes a review may carry, and
for a LocalSubjectAccessReview, that it asks about its own namespace and about a resource."""

from __future__ import annotations

from typing import Any

import orjson

from kubeforge._api.machinery.access import as_dict
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import GoValue
from kubeforge._apiserver.types.validation.common import Errors

__all__ = ["validate_access_review"]


def _non_resource(value: Any) -> GoValue:
    """NonResourceAttributes as Go prints the struct in a field error."""
    attrs = as_dict(value)

    def field(key: str) -> str:
        return orjson.dumps(str(attrs.get(key) or "")).decode()

    return GoValue(
        f"authorization.NonResourceAttributes{{Path:{field('path')}, Verb:{field('verb')}}}"
    )


def _selector(value: Any, path: str) -> Errors:
    """validateFieldSelectorAttributes / validateLabelSelectorAttributes: a raw selector or
    requirements, not both and not neither."""
    if value is None:
        return []
    selector = as_dict(value)
    raw = selector.get("rawSelector") or ""
    requirements = selector.get("requirements") or []
    if raw and requirements:
        return [
            FieldError.invalid(
                f"{path}.rawSelector", raw, "may not specified at the same time as requirements"
            )
        ]
    if not raw and not requirements:
        return [
            FieldError.required(
                f"{path}.requirements",
                f"when {path} is specified, requirements or rawSelector is required",
            )
        ]
    return []


def _spec(kind: str, spec: dict[str, Any]) -> Errors:
    """ValidateSubjectAccessReviewSpec (and the Self- variant, which names no subject)."""
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    errs: Errors = []
    if resource is not None and non_resource is not None:
        errs.append(
            FieldError.invalid(
                "spec.nonResourceAttributes",
                _non_resource(non_resource),
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if resource is None and non_resource is None:
        errs.append(
            FieldError.invalid(
                "spec.resourceAttributes",
                None,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if kind != "SelfSubjectAccessReview" and not spec.get("user") and not spec.get("groups"):
        errs.append(
            FieldError.invalid(
                "spec.user",
                str(spec.get("user") or ""),
                "at least one of user or group must be specified",
            )
        )
    if resource is not None:
        attrs = as_dict(resource)
        base = "spec.resourceAttributes"
        errs += _selector(attrs.get("fieldSelector"), f"{base}.fieldSelector")
        errs += _selector(attrs.get("labelSelector"), f"{base}.labelSelector")
    return errs


def validate_access_review(kind: str, spec: dict[str, Any], namespace: str) -> list[FieldError]:
    """The errors of a SelfSubjectAccessReview, SubjectAccessReview or
    LocalSubjectAccessReview whose spec is `spec` (`namespace`: a local review's
    metadata.namespace, which is the namespace it was posted to)."""
    errs = _spec(kind, spec)
    if kind != "LocalSubjectAccessReview":
        return errs
    resource = spec.get("resourceAttributes")
    if resource is not None:
        asked = str(as_dict(resource).get("namespace") or "")
        if asked != namespace:
            errs.append(
                FieldError.invalid(
                    "spec.resourceAttributes.namespace", asked, "must match metadata.namespace"
                )
            )
    non_resource = spec.get("nonResourceAttributes")
    if non_resource is not None:
        errs.append(
            FieldError.invalid(
                "spec.nonResourceAttributes",
                _non_resource(non_resource),
                "disallowed on this kind of request",
            )
        )
    return errs
