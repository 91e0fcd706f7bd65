"""The resourceVersion a written object carries is a precondition on the stored one.

kube-apiserver's registry compares the resourceVersion of the object an update produces with
the stored object's (k8s.io/apiserver pkg/registry/generic/registry/store.go, Update): a
different one is 409 Conflict with its optimistic-lock message, none at all is an
unconditional update where the type allows it. Every update-shaped write reaches that check
the same way: a PUT's body, a patch's result (which keeps the stored resourceVersion unless
the patch changes it), a server-side apply's result (the applied configuration's
resourceVersion wins the merge), a status write, and a Scale, whose resourceVersion the
registry moves onto the parent object. `check_update` is that one check here; `check_create`
is its counterpart for writes that create.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeforge.api.fielderror import FieldError
from kubeforge.api.names import GoValue
from kubeforge.apiserver.errors import StatusError
from kubeforge.apiserver.resource import ResourceType

__all__ = ["check_create", "check_update", "requested_version"]


def requested_version(meta: Mapping[str, Any]) -> str | None:
    """The resourceVersion a write asks for, or None: absent, empty and "0" ask for none,
    as the registry reads "0" as unset."""
    value = meta.get("resourceVersion")
    if value is None or value == "" or value == "0":
        return None
    return str(value)


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
    """A new object has no version to match. kube-apiserver's storage refuses one with this
    message (as a 500); asking for a version of an object that does not exist is the
    client's mistake, so here it is a 400."""
    if requested_version(meta) is not None:
        raise StatusError.bad_request("resourceVersion should not be set on objects to be created")
