"""The conversion webhook: ConversionReviews in, objects in the desired version out.

    manager.webhook_for(v1.At).complete()       # serves /convert for At's hub and spokes

controller-runtime's pkg/webhook/conversion in Python. The API server posts a ConversionReview
(apiextensions.k8s.io/v1) whose request carries a uid, the `desiredAPIVersion` and the
`objects` to convert; the answer echoes the uid and carries the `convertedObjects`, in order,
with `result.status: Success`. Each object is read as its version's class and converted with
`kubeforge.convert` (spoke to hub, hub to spoke, spoke to spoke through the hub).

A conversion that fails — an object of a kind or version this webhook does not know, one its
class cannot read, a ConversionError raised by `to_hub`/`from_hub` — fails the whole review,
as in controller-runtime: HTTP 200 with `result.status: Failure` and a message naming the
object, which the API server passes on to its client. Any other exception raised by a
conversion is a bug: answered the same way ("internal error occurred during conversion ..."),
logged with its traceback and counted in `controller_runtime_conversion_webhook_panics_total`.
A request that is not a ConversionReview with a uid cannot be answered with one:
controller-runtime answers it with HTTP 400 and an empty body; here the body is a Status
saying what is wrong, which client-go shows as the error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import ValidationError

from kubeforge._api.conversion import ConversionError, KindVersions, convert
from kubeforge._api.meta import split_api_version
from kubeforge._webhook.review import ReviewError
from kubeforge.clock import activity

__all__ = [
    "CONVERSION_REVIEW_VERSIONS",
    "MAX_CONVERSION_REVIEW_BYTES",
    "ConversionWebhook",
    "decode_conversion_review",
]

log = logging.getLogger("kubeforge.webhook.conversion")

CONVERSION_REVIEW_VERSIONS = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")

# A review carries a whole list page; kube-apiserver bounds neither its objects (up to 1.5 MiB
# each in etcd) nor their count. 64 MiB holds 1,000 objects of 64 KiB.
MAX_CONVERSION_REVIEW_BYTES = 64 * 1024 * 1024


class _Failed(Exception):
    """One object could not be converted; the message is the review's result.message."""


def _status_body(error: ReviewError) -> bytes:
    reasons = {400: "BadRequest", 413: "RequestEntityTooLarge"}
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": error.message,
            "reason": reasons.get(error.code, ""),
            "code": error.code,
        }
    )


def decode_conversion_review(body: bytes) -> tuple[str, str, dict[str, Any]]:
    """The review's apiVersion, the request's uid and the request (ReviewError 400 when the
    body is not a ConversionReview of apiextensions.k8s.io/v1 or v1beta1 with a request and
    its uid)."""
    if not body:
        raise ReviewError(400, "request body is empty")
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ReviewError(400, f"cannot decode the ConversionReview: {exc}") from None
    if not isinstance(document, dict):
        raise ReviewError(400, "cannot decode the ConversionReview: the body is not a JSON object")
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if kind != "ConversionReview" or api_version not in CONVERSION_REVIEW_VERSIONS:
        raise ReviewError(
            400,
            f"expected a ConversionReview of {' or '.join(CONVERSION_REVIEW_VERSIONS)}, got kind "
            f"{kind!r} of apiVersion {api_version!r}",
        )
    request = document.get("request")
    if not isinstance(request, dict):
        raise ReviewError(400, "the ConversionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewError(400, "malformed ConversionReview: request.uid: required")
    return str(api_version), uid, request


def _describe(obj: dict[str, Any]) -> str:
    """`At "default/hello"` (or the index's place when the object says nothing)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    name, namespace = meta.get("name"), meta.get("namespace")
    where = f"{namespace}/{name}" if namespace else f"{name}"
    return f'{obj.get("kind")} "{where}"'


class ConversionWebhook:
    """Converts objects of the kinds added to it; the webhook server serves it at /convert
    (`WebhookServer.register_conversion`)."""

    def __init__(self, on_panic: Callable[[], None] | None = None) -> None:
        self._kinds: dict[tuple[str, str], KindVersions] = {}
        self._on_panic = on_panic or (lambda: None)

    def add(self, versions: KindVersions) -> None:
        """Convert between `versions` (a kind's hub and spokes) from now on. Adding the same
        kind again is a no-op; other classes for a kind already served are an error."""
        key = (versions.group, versions.kind)
        known = self._kinds.get(key)
        if known is not None and known != versions:
            raise ValueError(
                f"{versions.kind}.{versions.group} is already converted here with other classes "
                f"(hub {known.hub.__qualname__})"
            )
        self._kinds[key] = versions

    @property
    def kinds(self) -> list[KindVersions]:
        """The kinds this webhook converts, in the order they were added."""
        return list(self._kinds.values())

    def refusal(self, error: ReviewError) -> tuple[int, bytes]:
        """The HTTP status and Status body answering a request that is not a review."""
        log.info("conversion: bad request: %s", error.message)
        return error.code, _status_body(error)

    async def answer(self, body: bytes) -> tuple[int, bytes]:
        """The HTTP status and body answering a request body: 200 and a ConversionReview,
        or 400 and a Status when it is not a ConversionReview with a request uid."""
        try:
            api_version, uid, request = decode_conversion_review(body)
        except ReviewError as exc:
            return self.refusal(exc)
        # Reading and converting a list page is CPU work: keep the event loop free for it.
        response = await activity.to_thread(self.respond, uid, request)
        review = {"apiVersion": api_version, "kind": "ConversionReview", "response": response}
        return 200, orjson.dumps(review)

    def respond(self, uid: str, request: dict[str, Any]) -> dict[str, Any]:
        """The review's response to `request` (a ConversionRequest's JSON): the converted
        objects, or a Failure result naming what went wrong."""
        try:
            converted = self._convert_all(request)
        except _Failed as exc:
            log.info("conversion %s failed: %s", uid, exc)
            return {
                "uid": uid,
                "convertedObjects": None,
                "result": {"metadata": {}, "status": "Failure", "message": str(exc)},
            }
        return {
            "uid": uid,
            "convertedObjects": converted,
            "result": {"metadata": {}, "status": "Success"},
        }

    def _convert_all(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        desired = request.get("desiredAPIVersion")
        if not isinstance(desired, str) or not desired:
            raise _Failed("malformed ConversionReview: request.desiredAPIVersion: required")
        objects = request.get("objects")
        if objects is None:
            objects = []
        if not isinstance(objects, list):
            raise _Failed("malformed ConversionReview: request.objects: must be a list")
        return [self._convert_one(i, obj, desired) for i, obj in enumerate(objects)]

    def _convert_one(self, index: int, obj: Any, desired: str) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise _Failed(f"request.objects[{index}] is not an object")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
            raise _Failed(f"request.objects[{index}] has no apiVersion and kind")
        if api_version == desired:
            return obj  # already there (the API server does not send these)
        group, version = split_api_version(api_version)
        versions = self._kinds.get((group, kind))
        if versions is None:
            raise _Failed(f"no conversion is registered for {kind}.{group} ({api_version})")
        source = versions.class_for(version)
        known = ", ".join(sorted(versions.classes))
        if source is None:
            raise _Failed(f"{api_version} is not a version of {kind} (it has {known})")
        desired_group, desired_version = split_api_version(desired)
        target = versions.class_for(desired_version) if desired_group == group else None
        if target is None:
            raise _Failed(
                f"cannot convert {_describe(obj)} to {desired}: not a version of "
                f"{kind}.{group} (it has {known})"
            )
        try:
            typed = source.model_validate(obj)  # type: ignore[attr-defined]
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the object"
            raise _Failed(
                f"cannot read {_describe(obj)} as {api_version}: {where}: {first['msg']}"
            ) from None
        try:
            result: Any = convert(typed, target)
        except ConversionError as exc:
            raise _Failed(
                f"cannot convert {_describe(obj)} from {api_version} to {desired}: {exc}"
            ) from None
        except Exception as exc:
            self._on_panic()
            log.exception(
                "conversion of %s from %s to %s failed", _describe(obj), api_version, desired
            )
            raise _Failed(
                f"internal error occurred during conversion of {_describe(obj)} from "
                f"{api_version} to {desired}: {type(exc).__name__}: {exc}"
            ) from None
        converted: dict[str, Any] = result.to_dict()
        return converted
