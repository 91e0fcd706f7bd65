"""Request body decoding and response media-type negotiation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from kubeforge._apiserver.request import nesting
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.yamljson import YAMLConversionError, YAMLSyntaxError, yaml_to_json

__all__ = [
    "JSON",
    "MediaType",
    "decode_body",
    "negotiate",
    "parse_accept",
    "patch_decode_type",
    "read_body",
]

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"


@dataclass(frozen=True, slots=True)
class MediaType:
    """One entry of an Accept header: `application/json;as=Table;v=v1;g=meta.k8s.io`."""

    type: str
    params: tuple[tuple[str, str], ...] = ()

    def param(self, key: str) -> str | None:
        for k, v in self.params:
            if k == key:
                return v
        return None

    @property
    def as_kind(self) -> str | None:
        return self.param("as")


def parse_accept(header: str | None) -> list[MediaType]:
    """Split an Accept header into media types, in the client's order (q-values ignored)."""
    if not header:
        return [MediaType("*/*")]
    out: list[MediaType] = []
    for part in header.split(","):
        fields = [f.strip() for f in part.split(";")]
        if not fields[0]:
            continue
        params = []
        for f in fields[1:]:
            key, _, value = f.partition("=")
            if key and key != "q":
                params.append((key.strip().lower(), value.strip().strip('"')))
        out.append(MediaType(fields[0].lower(), tuple(params)))
    return out or [MediaType("*/*")]


@dataclass(frozen=True, slots=True)
class Negotiated:
    """What to answer with: plain JSON/YAML, a Table, or partial object metadata."""

    format: str  # "json" | "yaml"
    as_kind: str | None = None  # None | "Table" | "PartialObjectMetadata" | "APIGroupDiscoveryList"
    version: str | None = None  # meta.k8s.io (or apidiscovery.k8s.io) version asked for


_ALLOWED_AS = {
    "Table": ("meta.k8s.io", ("v1", "v1beta1")),
    "PartialObjectMetadata": ("meta.k8s.io", ("v1", "v1beta1")),
    "PartialObjectMetadataList": ("meta.k8s.io", ("v1", "v1beta1")),
    "APIGroupDiscoveryList": ("apidiscovery.k8s.io", ("v2", "v2beta1")),
}


def negotiate(accept: list[MediaType], allow: frozenset[str] = frozenset()) -> Negotiated:
    """Pick the first acceptable media type; `allow` names the `as=` kinds this endpoint serves."""
    for mt in accept:
        if mt.type in (JSON, "application/*", "*/*"):
            kind = mt.as_kind
            if kind is None:
                return Negotiated("json")
            rule = _ALLOWED_AS.get(kind)
            if rule is None or kind not in allow:
                continue
            group, versions = rule
            if mt.param("g") == group and mt.param("v") in versions:
                return Negotiated("json", kind, mt.param("v"))
        elif mt.type == YAML and mt.as_kind is None:
            return Negotiated("yaml")
    raise StatusError.not_acceptable([JSON, YAML])


# The Content-Type values clients send most, already reduced to their media type.
_MEDIA_TYPES: dict[str | None, str] = {
    None: JSON,
    JSON: JSON,
    "application/json; charset=utf-8": JSON,
    YAML: YAML,
    PROTOBUF: PROTOBUF,
}
# What bytes.strip() strips.
_SPACE = b" \t\n\r\x0b\x0c"


def decode_body(body: bytes, content_type: str | None) -> Any:
    """Decode a JSON or YAML request body; malformed input is a 400 with the parser's reason."""
    ctype = _MEDIA_TYPES.get(content_type)
    if ctype is None:
        ctype = (content_type or JSON).split(";")[0].strip().lower()
    # bytes.strip() copies the body; most bodies start with a non-space byte.
    if not body or (body[0] in _SPACE and not body.strip()):
        raise StatusError.bad_request("the request body is empty")
    if ctype == PROTOBUF:
        from kubeforge._apiserver.request.protobuf import decode_protobuf

        return decode_protobuf(body)
    if ctype.endswith("yaml"):
        # Converted to JSON values first, as sigs.k8s.io/yaml does for kube-apiserver.
        try:
            return yaml_to_json(body)
        except YAMLSyntaxError as exc:
            raise StatusError.bad_request(f"the request body is not valid YAML: {exc}") from None
        except YAMLConversionError as exc:
            raise StatusError.bad_request(
                f"the request body cannot be converted from YAML to JSON: {exc}"
            ) from None
    if ctype == JSON or ctype.endswith("+json") or ctype in ("*/*", "text/plain"):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise StatusError.bad_request(
                f"the request body is not valid JSON: {exc.msg} at line {exc.lineno} "
                f"column {exc.colno}"
            ) from None
    raise StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f'{JSON}, {YAML}, {PROTOBUF}; got "{ctype}"',
    )


def read_body(body: bytes, content_type: str | None) -> Any:
    """A request body, decoded and held to the nesting limit before any handler walks it
    (nesting.py)."""
    decoded = decode_body(body, content_type)
    nesting.check_body(body, decoded, content_type)
    return decoded


def patch_decode_type(content_type: str) -> str:
    """Patch bodies are JSON except apply patches, which are YAML (JSON being YAML too)."""
    ctype = content_type.split(";")[0].strip().lower()
    return "application/yaml" if ctype.endswith("yaml") else "application/json"
