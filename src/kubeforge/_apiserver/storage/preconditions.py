"""The resourceVersion a written object carries is a precondition on the stored one.

kube-apiserver's registry compares the resourceVersion of the object an update produces with
the stored object's (k8s.io/apiserver pkg/registry/generic/registry/store.go, Update): a
different one is 409 Conflict with its optimistic-lock message, none at all is an
unconditional update where the type allows it. Every update-shaped write reaches that check
the same way: a PUT's body, a patch's result (which keeps the stored resourceVersion unless
the patch changes it), a server-side apply's result (the applied configuration's
resourceVersion wins the merge), a status write, and a Scale, whose resourceVersion the
registry moves onto the parent object. `check_update` is that one check here; `check_create`
is its counterpart for writes that create, and `check_parsable` what an apply that creates
holds its version to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.govalues import GoValue
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.metadecoding import MetadataDecodeError, decode_object_meta
from kubeforge._apiserver.types.resource import ResourceType
from kubeforge._apiserver.types.validation.common import go_str

__all__ = [
    "body_version",
    "check_create",
    "check_parsable",
    "check_update",
    "requested_version",
]


def requested_version(meta: Mapping[str, Any]) -> str | None:
    """The resourceVersion a write asks for, or None: absent, empty and "0" ask for none,
    as the registry reads "0" as unset."""
    value = meta.get("resourceVersion")
    if value is None or value == "" or value == "0":
        return None
    return str(value)


def body_version(body: Mapping[str, Any], kind: str) -> str | None:
    """The resourceVersion a subresource's body (a Scale, a Binding, a Namespace to finalize)
    asks for, its metadata decoded as the typed server decodes it (a wrong JSON type is a
    400)."""
    try:
        meta = decode_object_meta(body.get("metadata"), kind)
    except MetadataDecodeError as exc:
        raise StatusError.bad_request(
            f'{kind} in version "v1" cannot be handled as a {kind}: {exc.detail}'
        ) from None
    return requested_version(meta)


def check_update(rt: ResourceType, name: str, meta: Mapping[str, Any], stored_version: str) -> None:
    """409 when the write names another resourceVersion than the stored one; 422 when it
    names none and the type refuses unconditional updates (custom resources, and built-ins
    whose strategy says so)."""
    wanted = requested_version(meta)
    if wanted is None:
        if rt.is_crd or not rt.unconditional_update:
            raise StatusError.invalid(
                rt.group,
                rt.kind,
                name,
                [
                    FieldError.invalid(
                        # Go shows the unsigned zero it parsed from nothing as 0x0.
                        "metadata.resourceVersion",
                        GoValue("0x0"),
                        "must be specified for an update",
                    )
                ],
            )
        return
    if wanted != stored_version:
        raise StatusError.stale(rt.group, rt.plural, name)


def check_create(meta: Mapping[str, Any]) -> None:
    """A new object has no version to match. kube-apiserver's storage refuses one it can
    parse as a version other than 0 (storage/etcd3/store.go, Create, with this message, as a
    500) and ignores any other, which the store then replaces; asking for a version of an
    object that does not exist is the client's mistake, so here the refusal is a 400."""
    value = meta.get("resourceVersion")
    if isinstance(value, str) and _go_uint64(value):
        raise StatusError.bad_request("resourceVersion should not be set on objects to be created")


def check_parsable(meta: Mapping[str, Any]) -> None:
    """400 when the resourceVersion of an object an update writes is no version at all.

    The registry reads it with strconv.ParseUint before anything else (registry/generic/
    registry/store.go, Update) and lets the parser's error through as a 500; here it is the
    client's mistake, with the parser's words.
    """
    value = meta.get("resourceVersion")
    if isinstance(value, str) and value and _go_uint64(value) is None:
        limit = value.isascii() and value.isdigit()
        reason = "value out of range" if limit else "invalid syntax"
        raise StatusError.bad_request(f"strconv.ParseUint: parsing {go_str(value)}: {reason}")


def _go_uint64(text: str) -> int | None:
    """strconv.ParseUint(text, 10, 64), or None where Go's parser fails: ASCII digits only
    (no sign, space or underscore), at most 2^64 - 1."""
    if not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value < 1 << 64 else None
