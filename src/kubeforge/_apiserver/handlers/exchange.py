"""What every handler does at its two ends: read the request's body, write the answer.

Answers are written as kube-apiserver's handlers write them (k8s.io/apiserver pkg/endpoints/
handlers/responsewriters and response.go): JSON (or YAML when asked), one document ending in a
newline, the request's warnings in `Warning` headers; a Table or PartialObjectMetadata view
when the Accept header asks for one the endpoint serves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine
from typing import Any

import orjson
import yaml

from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.writes import Written, run_now
from kubeforge._apiserver.http.messages import Request, Response
from kubeforge._apiserver.request.encoding import (
    Negotiated,
    negotiate,
    parse_accept,
    patch_decode_type,
    read_body,
)
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.warningheaders import warning_headers

__all__ = [
    "LINE",
    "admitted",
    "answered",
    "body",
    "finish",
    "include_object",
    "json_response",
    "negotiated",
    "partial",
    "patch_body",
    "status_response",
    "written",
]

# apimachinery's JSON serializer writes with json.Encoder.Encode, which ends each document
# with a newline; so does every JSON object this server answers with.
LINE = orjson.OPT_APPEND_NEWLINE


# the request ------------------------------------------------------------------------------


def body(request: Request) -> Any:
    """The request's body, decoded as its Content-Type says."""
    return read_body(request.body, request.headers.get("Content-Type"))


def patch_body(request: Request) -> Any:
    """A PATCH request's body: JSON, or YAML for an apply patch."""
    return read_body(request.body, patch_decode_type(request.headers.get("Content-Type", "")))


def negotiated(request: Request, allow: set[str]) -> Negotiated:
    """The answer's form, from the Accept header and the `as=` kinds the endpoint serves."""
    return negotiate(parse_accept(request.headers.get("Accept")), frozenset(allow))


def include_object(call: Call) -> str:
    """A Table's `includeObject` (None, Metadata or Object; Metadata unless asked)."""
    value = call.query.get("includeObject") or "Metadata"
    if value not in ("None", "Metadata", "Object"):
        raise StatusError.bad_request(
            f'includeObject: Unsupported value: "{value}": supported values: "Metadata", '
            '"None", "Object"'
        )
    return value


# the answer -------------------------------------------------------------------------------


def json_response(
    code: int,
    answer: bytes | dict[str, Any],
    warnings: list[str] | None = None,
    fmt: str = "json",
) -> Response:
    """An object as the answer (encoded bytes are sent as they are)."""
    data = answer + b"\n" if isinstance(answer, bytes) else orjson.dumps(answer, option=LINE)
    ctype = "application/json"
    if fmt == "yaml":
        data = yaml.safe_dump(orjson.loads(data), sort_keys=False).encode()
        ctype = "application/yaml"
    return Response(code, data, ctype, warning_headers(warnings))


def status_response(exc: StatusError, warnings: list[str] | None = None) -> Response:
    """A failure as its Status object; one that says when to retry says it in a Retry-After
    header too, as responsewriters.ErrorNegotiated writes it."""
    headers = list(exc.headers.items()) + warning_headers(warnings)
    retry_after = (exc.details or {}).get("retryAfterSeconds")
    if isinstance(retry_after, int) and retry_after > 0 and "Retry-After" not in exc.headers:
        headers.append(("Retry-After", str(retry_after)))
    return Response(exc.code, orjson.dumps(exc.status(), option=LINE), headers=headers)


def partial(obj: dict[str, Any], version: str | None) -> dict[str, Any]:
    """An object's PartialObjectMetadata."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"meta.k8s.io/{version or 'v1'}",
        "metadata": obj.get("metadata", {}),
    }


def finish(call: Call, write: Coroutine[Any, Any, Written]) -> Response | Awaitable[Response]:
    """Answer a write: at once when no admission applies to it and no conversion webhook
    converts its type, else once admitted and converted."""
    if call.admission is None and call.rt.webhook_conversion is None:
        code, result = run_now(write)
        return json_response(code, result, call.warnings)
    return admitted(call, write)


async def admitted(call: Call, write: Awaitable[Written]) -> Response:
    """Answer a write that waits for admission or conversion."""
    try:
        code, result = await write
    except StatusError as exc:
        # Warnings (a webhook's, say) reach the client with a refusal too.
        return status_response(exc, call.warnings)
    return json_response(code, result, call.warnings)


async def answered(pending: Awaitable[bytes | dict[str, Any]]) -> Response:
    """200 with an object still to be read (converted by a webhook)."""
    return json_response(200, await pending)


async def written(code: int, pending: Awaitable[dict[str, Any]]) -> Written:
    """A write's answer under the status code it answers with."""
    return code, await pending
