"""AdmissionReview (admission.k8s.io/v1): the request the API server sends, the answer it reads.

A review is read strictly: the API server always sends a POST of `application/json` holding
an AdmissionReview of admission.k8s.io/v1 (or v1beta1, the same shape) with a request and
its uid, so anything else is answered with an error review at once (`ReviewError`) rather
than reaching a handler.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Literal

import orjson
from pydantic import Field, ValidationError

from kubeforge._api.model import Model
from kubeforge._webhook.patch import json_patch

__all__ = [
    "ADMISSION_API_VERSIONS",
    "MAX_REVIEW_BYTES",
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReview",
    "GroupVersionKindRef",
    "GroupVersionResourceRef",
    "Operation",
    "ReviewError",
    "UserInfo",
    "decode_review",
    "encode_review",
]

# controller-runtime's limit (pkg/webhook/admission/http.go): an old and a new object of at
# most 3 MiB each, and less than 1 MiB of everything else.
MAX_REVIEW_BYTES = 7 * 1024 * 1024

ADMISSION_API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


class GroupVersionKindRef(Model):
    """The kind of the object in a request (admission's metav1.GroupVersionKind)."""

    group: str = ""
    version: str = ""
    kind: str = ""


class GroupVersionResourceRef(Model):
    """The resource a request is for (admission's metav1.GroupVersionResource)."""

    group: str = ""
    version: str = ""
    resource: str = ""


class UserInfo(Model):
    """Who made the request, as the API server authenticated them."""

    username: str = ""
    uid: str = ""
    groups: list[str] = Field(default_factory=list)
    extra: dict[str, list[str]] = Field(default_factory=dict)


class AdmissionRequest(Model):
    """One request to admit: what is being done, to what, by whom.

    `object` is the object as it would be stored (None for DELETE and CONNECT); `old_object`
    the current one on UPDATE and DELETE. `kind`, `resource` and `sub_resource` describe the
    object as sent to this webhook; the `request_*` fields what the client asked for, which
    differ when the API server converted the object to a version the webhook accepts.
    """

    uid: str = Field(min_length=1)
    kind: GroupVersionKindRef
    resource: GroupVersionResourceRef
    sub_resource: str = ""
    request_kind: GroupVersionKindRef | None = None
    request_resource: GroupVersionResourceRef | None = None
    request_sub_resource: str = ""
    name: str = ""
    namespace: str = ""
    operation: Operation
    user_info: UserInfo = Field(default_factory=UserInfo)
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False
    options: dict[str, Any] | None = None


class AdmissionResponse(Model):
    """The answer to one request: allowed or not, with a Status, warnings and, from a
    mutating webhook, a JSON Patch (a list of RFC 6902 operations) to apply to the object.

    Build one with `allow()`, `deny()`, `error()` or `patch_to()`.
    """

    uid: str = ""
    allowed: bool
    status: dict[str, Any] | None = None
    patch: list[dict[str, Any]] | None = None
    audit_annotations: dict[str, str] | None = None
    warnings: list[str] | None = None

    @classmethod
    def allow(
        cls,
        message: str = "",
        *,
        patch: list[dict[str, Any]] | None = None,
        warnings: list[str] | None = None,
    ) -> AdmissionResponse:
        """Allow the request; a mutating webhook's `patch` (JSON Patch operations) changes
        the object first."""
        status: dict[str, Any] = {"metadata": {}, "code": 200}
        if message:
            status["message"] = message
        return cls(allowed=True, status=status, patch=patch or None, warnings=warnings or None)

    @classmethod
    def deny(
        cls,
        message: str,
        *,
        code: int = 403,
        reason: str = "Forbidden",
        warnings: list[str] | None = None,
    ) -> AdmissionResponse:
        """Refuse the request with `message` (403 Forbidden, as controller-runtime's Denied)."""
        status = {"metadata": {}, "message": message, "reason": reason, "code": code}
        return cls(allowed=False, status=status, warnings=warnings or None)

    @classmethod
    def error(cls, code: int, message: str) -> AdmissionResponse:
        """Refuse a request the webhook could not process (controller-runtime's Errored)."""
        return cls(allowed=False, status={"metadata": {}, "message": message, "code": code})

    @classmethod
    def patch_to(
        cls,
        original: Mapping[str, Any],
        desired: Mapping[str, Any],
        *,
        warnings: list[str] | None = None,
    ) -> AdmissionResponse:
        """Allow the request, changing the object from `original` (the request's object) to
        `desired` (the object as it should be) with the JSON Patch between them."""
        return cls.allow(patch=json_patch(original, desired), warnings=warnings)

    def complete(self, uid: str) -> dict[str, Any]:
        """The `response` of an AdmissionReview for request `uid`.

        As controller-runtime completes a response: the uid is the request's, a response
        without a status gets `{code: 200}`, and a patch travels base64-encoded with
        `patchType: JSONPatch`.
        """
        out: dict[str, Any] = {"uid": uid, "allowed": self.allowed}
        status = dict(self.status) if self.status else {"metadata": {}}
        status.setdefault("metadata", {})
        if not status.get("code"):
            status["code"] = 200
        out["status"] = status
        if self.patch:
            out["patch"] = base64.b64encode(orjson.dumps(self.patch)).decode()
            out["patchType"] = "JSONPatch"
        if self.audit_annotations:
            out["auditAnnotations"] = dict(self.audit_annotations)
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


class AdmissionReview(Model):
    """The envelope both ways: a `request` from the API server, a `response` back."""

    api_version: str = "admission.k8s.io/v1"
    kind: str = "AdmissionReview"
    request: AdmissionRequest | None = None
    response: dict[str, Any] | None = None


class ReviewError(Exception):
    """A request that is not a well-formed AdmissionReview; `code` is the Status code to
    answer with (400, or 413 for a body over the limit)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _media_type(content_type: str | None) -> str:
    return (content_type or "").partition(";")[0].strip().lower()


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the review"
    if first["type"] == "missing":
        return f"{where}: required"
    return f"{where}: {first['msg']}"


def decode_review(body: bytes, content_type: str | None) -> tuple[str, AdmissionRequest]:
    """The AdmissionReview's apiVersion and its request (ReviewError when malformed).

    Checks in controller-runtime's order (pkg/webhook/admission/http.go): an empty body, the
    content type, then the review itself. Unlike controller-runtime, which decodes whatever
    JSON it gets and may hand a handler an empty request, a review of another kind or
    version, or without a request or uid, is refused here: no API server sends one, and a
    response with no uid to echo cannot answer it.
    """
    if not body:
        raise ReviewError(400, "request body is empty")
    if _media_type(content_type) != "application/json":
        raise ReviewError(400, f"contentType={content_type or ''}, expected application/json")
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ReviewError(400, f"cannot decode the AdmissionReview: {exc}") from None
    if not isinstance(document, dict):
        raise ReviewError(400, "cannot decode the AdmissionReview: the body is not a JSON object")
    api_version = document.get("apiVersion")
    kind = document.get("kind")
    if kind != "AdmissionReview" or api_version not in ADMISSION_API_VERSIONS:
        raise ReviewError(
            400,
            f"expected an AdmissionReview of {' or '.join(ADMISSION_API_VERSIONS)}, got kind "
            f"{kind!r} of apiVersion {api_version!r}",
        )
    raw = document.get("request")
    if not isinstance(raw, dict):
        raise ReviewError(400, "the AdmissionReview has no request")
    try:
        request = AdmissionRequest.model_validate(raw)
    except ValidationError as exc:
        raise ReviewError(400, f"malformed AdmissionReview: request.{_describe(exc)}") from None
    return str(api_version), request


def encode_review(api_version: str, response: dict[str, Any]) -> bytes:
    """An AdmissionReview carrying `response`, in the request's apiVersion."""
    return orjson.dumps(
        {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}
    )
