"""Reading and checking a TokenRequest (`POST serviceaccounts/<name>/token`) as kube-apiserver
does: decoded as its Go type (a wrong JSON type is a 400), then validated (422).

Followed: the TokenREST handler (kubernetes pkg/registry/core/serviceaccount/storage/token.go:
the name and namespace in the body must match the URL's) and ValidateTokenRequest (kubernetes
pkg/apis/authentication/validation: expirationSeconds, 3600 when unset, at least 600 and at
most 2^32).
"""

from __future__ import annotations

from typing import Any

from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.metadecoding import MetadataDecodeError, decode_object_meta
from kubeforge._apiserver.types.builtin_schemas import BuiltinSchemas, DecodeError

__all__ = [
    "DEFAULT_EXPIRATION_SECONDS",
    "MAX_EXPIRATION_SECONDS",
    "MIN_EXPIRATION_SECONDS",
    "read_token_request",
    "validate_token_request",
]

DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 10 * 60
MAX_EXPIRATION_SECONDS = 1 << 32

_DEFINITION = "io.k8s.api.authentication.v1.TokenRequest"
_GROUP = "authentication.k8s.io"
_KIND = "TokenRequest"


def _decode_failure(detail: str) -> StatusError:
    return StatusError.bad_request(
        f'{_KIND} in version "v1" cannot be handled as a {_KIND}: {detail}'
    )


def _int64(value: Any) -> int:
    """The value Go's decoder would put in an int64, or the decode error it would raise.

    A JSON number written with a fraction or an exponent (`600.0`, `1e30`) does not fit an
    integer field in Go, though JSON Schema would call it an integer.
    """
    if type(value) is int and -(2**63) <= value < 2**63:
        return value
    kind = f"number {value!r}" if isinstance(value, int | float) else "string"
    raise _decode_failure(
        f"json: cannot unmarshal {kind} into Go struct field "
        "TokenRequestSpec.spec.expirationSeconds of type int64"
    )


def read_token_request(
    schemas: BuiltinSchemas, body: Any, namespace: str, name: str
) -> dict[str, Any]:
    """The request decoded, with its defaults, or the 400 (wrong JSON types) or 422 (name or
    namespace other than the URL's) kube-apiserver answers for it."""
    if not isinstance(body, dict):
        raise StatusError.bad_request("the request body must be a TokenRequest")
    try:
        # Missing required fields are validation's business; only decoding fails here.
        schemas.validate(_DEFINITION, body)
    except DecodeError as exc:
        raise _decode_failure(exc.detail) from None
    try:
        meta = decode_object_meta(body.get("metadata"), _KIND)
    except MetadataDecodeError as exc:
        raise _decode_failure(exc.detail) from None
    spec = body.get("spec")
    spec = dict(spec) if isinstance(spec, dict) else {}
    seconds = spec.get("expirationSeconds")
    seconds = DEFAULT_EXPIRATION_SECONDS if seconds is None else _int64(seconds)

    if meta.get("name") and meta["name"] != name:
        raise StatusError.invalid(
            _GROUP,
            _KIND,
            name,
            [
                FieldError.invalid(
                    "metadata.name",
                    meta["name"],
                    "must match the service account name if specified",
                )
            ],
        )
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise StatusError.invalid(
            _GROUP,
            _KIND,
            name,
            [
                FieldError.invalid(
                    "metadata.namespace",
                    meta["namespace"],
                    "must match the service account namespace if specified",
                )
            ],
        )
    spec["expirationSeconds"] = seconds
    return {"metadata": meta, "spec": spec}


def validate_token_request(request: dict[str, Any]) -> None:
    """422 for an expiration outside what the server issues (once the account is known)."""
    seconds = request["spec"]["expirationSeconds"]
    errors = []
    if seconds < MIN_EXPIRATION_SECONDS:
        errors.append(
            FieldError.invalid(
                "spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes"
            )
        )
    if seconds > MAX_EXPIRATION_SECONDS:
        errors.append(
            FieldError.invalid(
                "spec.expirationSeconds",
                seconds,
                "may not specify a duration larger than 2^32 seconds",
            )
        )
    if errors:
        # The handler validates with an empty name, so the message names none.
        raise StatusError.invalid(_GROUP, _KIND, "", errors)
