"""AdmissionReview requests and responses, as k8s.io/apiserver
pkg/admission/plugin/webhook/request/admissionreview.go builds and checks them, read the way
client-go's REST client reads an answer (rest/request.go: transformResponse, Result.Into).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import orjson

from kubeforge._apiserver.admission.attributes import Attributes
from kubeforge._apiserver.admission.matching import Match
from kubeforge._apiserver.webhookclient.client import CallFailed, Reply, decode_reply, reply_error

__all__ = ["REVIEW_VERSIONS", "Answer", "read_answer", "review_request"]

# The AdmissionReview versions this server speaks, in kube-apiserver's order of preference.
REVIEW_VERSIONS = ("v1", "v1beta1")


def review_request(
    version: str,
    uid: str,
    attrs: Attributes,
    match: Match,
    object_: dict[str, Any] | None,
    old_object: dict[str, Any] | None,
) -> bytes:
    """The AdmissionReview sent to a webhook; `kind`/`resource` are what the rule matched
    (an equivalent version under matchPolicy Equivalent), `request*` what was asked."""
    group, kind_version, kind = match.kind
    rt = attrs.rt
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": group, "version": kind_version, "kind": kind},
        "resource": {
            "group": match.rt.group,
            "version": match.rt.version,
            "resource": match.rt.plural,
        },
    }
    if attrs.subresource:
        request["subResource"] = attrs.subresource
    request["requestKind"] = {
        "group": attrs.kind[0],
        "version": attrs.kind[1],
        "kind": attrs.kind[2],
    }
    request["requestResource"] = {"group": rt.group, "version": rt.version, "resource": rt.plural}
    if attrs.subresource:
        request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    request["operation"] = attrs.operation
    request["userInfo"] = attrs.user.to_dict()
    request["object"] = object_
    request["oldObject"] = old_object
    request["dryRun"] = attrs.dry_run
    request["options"] = attrs.options
    review = {
        "kind": "AdmissionReview",
        "apiVersion": f"admission.k8s.io/{version}",
        "request": request,
    }
    return orjson.dumps(review)


@dataclass(frozen=True, slots=True)
class Answer:
    """A checked AdmissionResponse."""

    allowed: bool
    patch: bytes | None
    patch_type: str
    result: dict[str, Any] | None
    warnings: tuple[str, ...]


def _field_type_error(field: str, value: Any, go_type: str) -> CallFailed:
    shown = {bool: "bool", int: "number", float: "number", str: "string", list: "array"}.get(
        type(value), "object"
    )
    return CallFailed(
        f"failed to call webhook: json: cannot unmarshal {shown} into Go struct field "
        f"AdmissionResponse.response.{field} of type {go_type}"
    )


def read_answer(reply: Reply, version: str, uid: str, mutating: bool) -> Answer:
    """Check a webhook's reply to a request of AdmissionReview `version` with `uid`."""
    if not 200 <= reply.status <= 206:
        raise CallFailed.calling(reply_error(reply))
    review = decode_reply(reply)
    if not isinstance(review, dict):
        raise CallFailed(
            "failed to call webhook: couldn't get version/kind; json parse error: json: cannot "
            "unmarshal array into Go value of type struct { APIVersion string "
            '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
        )
    if not review.get("kind"):
        raise CallFailed(
            "failed to call webhook: Object 'Kind' is missing in "
            f"'{reply.body.decode('utf-8', 'replace')}'"
        )
    response = review.get("response")
    if response is not None and not isinstance(response, dict):
        raise CallFailed(
            "failed to call webhook: json: cannot unmarshal "
            f"{'array' if isinstance(response, list) else 'string'} into Go struct field "
            "AdmissionReview.response of type v1.AdmissionResponse"
        )
    allowed = (response or {}).get("allowed", False)
    if not isinstance(allowed, bool):
        raise _field_type_error("allowed", allowed, "bool")
    for field in ("uid", "patchType"):
        value = (response or {}).get(field)
        if value is not None and not isinstance(value, str):
            raise _field_type_error(field, value, "string")
    raw_patch = (response or {}).get("patch")
    patch: bytes | None = None
    if raw_patch is not None:
        if not isinstance(raw_patch, str):
            raise _field_type_error("patch", raw_patch, "[]uint8")
        try:
            patch = base64.b64decode(raw_patch, validate=True)
        except (binascii.Error, ValueError):
            raise CallFailed(
                "failed to call webhook: illegal base64 data at input byte 0"
            ) from None
    warnings = (response or {}).get("warnings")
    if warnings is not None and (
        not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings)
    ):
        raise _field_type_error("warnings", warnings, "[]string")
    status = (response or {}).get("status")
    if status is not None and not isinstance(status, dict):
        raise _field_type_error("status", status, "v1.Status")

    expected = f"admission.k8s.io/{version}"
    invalid = "received invalid webhook response: "
    if response is None:
        raise CallFailed(invalid + "webhook response was absent")
    patch_type = response.get("patchType")
    if version == "v1":
        got_uid = response.get("uid") or ""
        if got_uid != uid:
            raise CallFailed(invalid + f'expected response.uid="{uid}", got "{got_uid}"')
        if review.get("apiVersion") != expected or review.get("kind") != "AdmissionReview":
            group, _, gv = str(review.get("apiVersion") or "").rpartition("/")
            raise CallFailed(
                invalid + "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, "
                f"got {group + '/' if group else ''}{gv}, Kind={review.get('kind')}"
            )
        if mutating:
            if patch and patch_type is None:
                raise CallFailed(
                    invalid + "webhook returned response.patch but not response.patchType"
                )
            if not patch and patch_type is not None:
                raise CallFailed(
                    invalid + "webhook returned response.patchType but not response.patch"
                )
            if patch_type is not None and not patch_type:
                raise CallFailed(
                    invalid + f'webhook returned invalid response.patchType of "{patch_type}"'
                )
        else:
            if patch:
                raise CallFailed(invalid + "validating webhook may not return response.patch")
            if patch_type is not None:
                raise CallFailed(invalid + "validating webhook may not return response.patchType")
    else:
        # v1beta1 answers were never checked for uid or kind; a patch can only be a JSON patch.
        patch_type = "JSONPatch" if patch else ""
        if not mutating:
            patch = None
    return Answer(
        allowed=allowed,
        patch=patch or None,
        patch_type=str(patch_type or ""),
        result=status,
        warnings=tuple(warnings or ()),
    )
