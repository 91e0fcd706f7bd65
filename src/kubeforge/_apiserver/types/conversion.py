"""Converting custom objects between the versions of their CRD (None and Webhook strategies).

A CRD's objects are stored in the version that was the storage version when each was
written; reads convert them to the version asked for, and writes in another version convert
the object to the storage version before it is stored. How depends on
`spec.conversion.strategy`:

- `None`: only apiVersion changes (`storage/codec.py` changes it inline, so the common case
  stays cheap);
- `Webhook`: the objects go to the CRD's conversion webhook in one ConversionReview (v1, or
  v1beta1 when only that is listed), through the server's webhook client (the one admission
  uses: caBundle, service resolution, the `?timeout=30s` kube-apiserver sends; the
  server's `conversion_webhook_timeout` setting, 30 seconds unless a test shortens it).

Follows apiextensions-apiserver pkg/apiserver/conversion: objects already in the desired
version are not sent, and nothing is called when none needs converting (getObjectsToConvert);
the answer is checked as webhook_converter.go checks it (the review's kind and uid, a
Success result, one object per object sent, each of the desired apiVersion and the same
kind, name, namespace and uid), the webhook may change only labels and annotations (every
other part of metadata is restored from the original), and the converted object is pruned to
its version's schema, as customresource_handler.go's schemaCoercingConverter does. A failure
is `conversion webhook for <group/version>, Kind=<Kind> failed: <why>`, answered as a Status
of code 500 without a reason (what kube-apiserver makes of an error that is not a Status).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubeforge._api.machinery.access import meta_of
from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.names import validate_annotations, validate_labels
from kubeforge._api.machinery.pruning import prune
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.webhookclient.client import (
    CallFailed,
    ClientConfig,
    WebhookClient,
    decode_reply,
    reply_error,
)

__all__ = [
    "TIMEOUT_SECONDS",
    "CRDConversion",
    "Conversions",
    "conversion_error",
    "invalid_source_version",
]

GROUP = "apiextensions.k8s.io"
# kube-apiserver sets no timeout of its own for conversion webhooks: the request carries
# client-go's default `?timeout=30s`, and the call ends then.
TIMEOUT_SECONDS = 30
# The ConversionReview versions this server speaks.
REVIEW_VERSIONS = ("v1", "v1beta1")


def conversion_error(message: str) -> StatusError:
    """The answer to a failed conversion: kube-apiserver passes the converter's error on as
    one that is not a Status, which becomes 500 with no reason."""
    return StatusError(500, "", message)


def invalid_source_version(api_version: str) -> StatusError:
    """An object stored in a version its CRD no longer has (converter.go's check)."""
    return conversion_error(f"request to convert CR from an invalid group/version: {api_version}")


@dataclass(frozen=True, eq=False)
class CRDConversion:
    """How the objects of one CRD convert: its versions with their schemas, the storage
    version, and the conversion webhook (None for the None strategy)."""

    crd_name: str
    group: str
    kind: str
    storage: str
    schemas: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    webhook: ClientConfig | None = None
    review_versions: tuple[str, ...] = ()
    # `<group>/<version>` of every version of the CRD.
    api_versions: frozenset[str] = field(init=False, default=frozenset())

    def __post_init__(self) -> None:
        api_versions = frozenset(f"{self.group}/{v}" for v in self.schemas)
        object.__setattr__(self, "api_versions", api_versions)

    @classmethod
    def of(cls, crd: Mapping[str, Any]) -> CRDConversion:
        spec = crd.get("spec") or {}
        versions = [v for v in spec.get("versions") or () if isinstance(v, dict)]
        schemas = {
            str(v.get("name")): (v.get("schema") or {}).get("openAPIV3Schema") for v in versions
        }
        storage = next((str(v.get("name")) for v in versions if v.get("storage")), "")
        conversion = spec.get("conversion") or {}
        webhook = None
        review_versions: tuple[str, ...] = ()
        if conversion.get("strategy") == "Webhook":
            hook = conversion.get("webhook") or {}
            webhook = ClientConfig.parse(hook.get("clientConfig"))
            review_versions = tuple(str(v) for v in hook.get("conversionReviewVersions") or ())
        return cls(
            crd_name=str((crd.get("metadata") or {}).get("name") or ""),
            group=str(spec.get("group") or ""),
            kind=str((spec.get("names") or {}).get("kind") or ""),
            storage=storage,
            schemas=schemas,
            webhook=webhook,
            review_versions=review_versions,
        )

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}"

    def knows(self, api_version: Any) -> bool:
        """Whether objects of `api_version` are of one of the CRD's versions."""
        return api_version in self.api_versions


class Conversions:
    """Converts custom objects through their CRD's conversion webhook."""

    def __init__(self, client: WebhookClient, timeout: int = TIMEOUT_SECONDS) -> None:
        self.client = client
        # Seconds a conversion webhook has to answer.
        self.timeout = timeout

    async def convert(
        self,
        conversion: CRDConversion,
        objects: Sequence[dict[str, Any]],
        version: str,
        *,
        listing: bool = False,
    ) -> list[dict[str, Any]]:
        """`objects` (the caller's to change) in `version`: those already there as they
        are, the others converted by the webhook in one review (by apiVersion alone under
        the None strategy). `listing`: the objects are one list's items, which an error
        names as the list they are (`<group/version>, Kind=<Kind>List`)."""
        desired = conversion.api_version(version)
        if version not in conversion.schemas:
            raise conversion_error(f"request to convert CR to an invalid group/version: {desired}")
        pending = [i for i, obj in enumerate(objects) if obj.get("apiVersion") != desired]
        result = list(objects)
        if not pending:
            return result
        for i in pending:
            if not conversion.knows(objects[i].get("apiVersion")):
                raise invalid_source_version(str(objects[i].get("apiVersion")))
        if conversion.webhook is None:
            for i in pending:
                result[i]["apiVersion"] = desired
            return result
        subject = (
            f"{desired}, Kind={conversion.kind}List"
            if listing
            else f"{objects[pending[0]].get('apiVersion')}, Kind={conversion.kind}"
        )
        sent = [objects[i] for i in pending]
        converted = await self._call(conversion, sent, desired, subject)
        schema = conversion.schemas.get(version)
        for n, (i, obj) in enumerate(zip(pending, converted, strict=True)):
            _check_converted(sent[n], obj, desired, subject, n, listing)
            if schema is not None:
                prune(obj, schema)
            result[i] = obj
        return result

    async def _call(
        self,
        conversion: CRDConversion,
        objects: list[dict[str, Any]],
        desired: str,
        subject: str,
    ) -> list[Any]:
        failed = f"conversion webhook for {subject} failed: "
        review_version = next((v for v in conversion.review_versions if v in REVIEW_VERSIONS), None)
        if review_version is None:
            # createConversionReviewObjects' error, passed on without the usual prefix.
            raise conversion_error("no supported conversion review versions")
        assert conversion.webhook is not None
        uid = str(uuid.uuid4())
        review = {
            "kind": "ConversionReview",
            "apiVersion": f"{GROUP}/{review_version}",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
            # kube-apiserver sends the review with an empty response in place.
            "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}},
        }
        try:
            reply = await self.client.post(conversion.webhook, orjson.dumps(review), self.timeout)
            if not 200 <= reply.status <= 206:
                raise CallFailed.calling(reply_error(reply))
            answer = decode_reply(reply)
        except CallFailed as exc:
            raise conversion_error(failed + exc.detail) from None
        try:
            converted = _read_answer(answer, review_version, uid, reply.body)
        except _Malformed as exc:
            raise conversion_error(failed + str(exc)) from None
        if len(converted) != len(objects):
            raise conversion_error(
                f"conversion webhook for {subject} returned {len(converted)} objects, "
                f"expected {len(objects)}"
            )
        return converted


class _Malformed(Exception):
    """The webhook's answer is not a successful ConversionReview for the request."""


def _read_answer(answer: Any, version: str, uid: str, body: bytes) -> list[Any]:
    """The convertedObjects of a webhook's answer, checked as webhook_converter.go checks
    it (v1beta1 answers were never checked for kind or uid)."""
    if not isinstance(answer, dict):
        raise _Malformed(
            "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go "
            'value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind '
            'string "json:\\"kind,omitempty\\"" }'
        )
    if not answer.get("kind"):
        raise _Malformed(f"Object 'Kind' is missing in '{body.decode('utf-8', 'replace')}'")
    response = answer.get("response")
    if version == "v1":
        expected = f"{GROUP}/v1"
        if answer.get("apiVersion") != expected or answer.get("kind") != "ConversionReview":
            raise _Malformed(
                f"expected webhook response of {expected}, Kind=ConversionReview, got "
                f"{answer.get('apiVersion') or ''}, Kind={answer.get('kind')}"
            )
    if not isinstance(response, dict):
        raise _Malformed("no response provided")
    if version == "v1":
        got = response.get("uid") or ""
        if got != uid:
            raise _Malformed(f'expected response.uid="{uid}", got "{got}"')
    result = response.get("result")
    result = result if isinstance(result, dict) else {}
    status = result.get("status") or ""
    if status != "Success":
        message = result.get("message")
        if isinstance(message, str) and message:
            raise _Malformed(message)
        raise _Malformed(f"response.result.status was '{status}', not 'Success'")
    converted = response.get("convertedObjects")
    return converted if isinstance(converted, list) else []


def _check_converted(
    original: dict[str, Any],
    converted: Any,
    desired: str,
    subject: str,
    index: int,
    listing: bool,
) -> None:
    """Hold a converted object to what it was converted from (validateConvertedObject) and
    give it back the original's metadata but for labels and annotations (restoreObjectMeta).
    The messages are upstream's, which word a list's objects and a single one differently."""
    lead = f"conversion webhook for {subject} returned invalid "
    where = f"converted object at index {index}" if listing else "object at index 0"
    if not isinstance(converted, dict):
        raise conversion_error(
            f"{lead}{where}: json: cannot unmarshal {_json_type(converted)} into Go value of "
            "type map[string]interface {}"
        )
    got = str(converted.get("apiVersion") or "")
    if got != desired:
        raise conversion_error(
            f"{lead}{where}: invalid groupVersion (expected {desired}, received {got})"
        )
    if converted.get("kind") != original.get("kind"):
        raise conversion_error(
            f"{lead}{where}: invalid kind (expected {original.get('kind')}, received "
            f"{converted.get('kind') or ''})"
        )
    mismatch = _identity_mismatch(original, converted)
    if mismatch is not None:
        target = f"converted object at index {index}" if listing else "object"
        raise conversion_error(f"{lead}{target}: {mismatch}")
    problem = _restore_metadata(original, converted)
    if problem is not None:
        target = f"metadata in object at index {index}" if listing else "metadata"
        raise conversion_error(f"{lead}{target}: {problem}")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "null"


def _identity_mismatch(original: Mapping[str, Any], converted: Mapping[str, Any]) -> str | None:
    before, after = meta_of(original), meta_of(converted)
    for field_name, label in (("name", "name"), ("namespace", "namespace"), ("uid", "UID")):
        a, b = before.get(field_name) or "", after.get(field_name) or ""
        if a != b:
            return f"must have the same {label}: {a} != {b}"
    return None


def _restore_metadata(original: Mapping[str, Any], converted: dict[str, Any]) -> str | None:
    """Put the original's metadata back into `converted`, keeping the labels and
    annotations the webhook returned (validated when they changed); the reason it cannot."""
    answered = converted.get("metadata")
    if "metadata" not in converted:
        return "missing metadata in converted object"
    if not isinstance(answered, dict):
        return f"invalid metadata of type {_go_type(answered)} in converted object"
    restored = orjson.loads(orjson.dumps(meta_of(original)))
    for key, path in (("labels", "metadata.labels"), ("annotations", "metadata.annotation")):
        value = answered.get(key)
        if value is None:
            restored.pop(key, None)
            continue
        if not isinstance(value, dict):
            return f"invalid metadata.{key} of type {_go_type(value)} in converted object"
        for name, text in value.items():
            if not isinstance(text, str):
                return (
                    f"metadata.{key}[{name}] must be a string, but is {_go_type(text)} in "
                    "converted object"
                )
        if value != (restored.get(key) or {}):
            check = validate_labels if key == "labels" else validate_annotations
            errors: list[FieldError] = check(value, path)
            if errors:
                return _aggregate(errors)
        restored[key] = value
    converted["metadata"] = restored
    return None


def _go_type(value: Any) -> str:
    """How Go's %T prints a decoded JSON value."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}" if isinstance(value, dict) else "<nil>"


def _aggregate(errors: list[FieldError]) -> str:
    """An error list as apimachinery's ToAggregate prints it."""
    return str(errors[0]) if len(errors) == 1 else "[" + ", ".join(map(str, errors)) + "]"
