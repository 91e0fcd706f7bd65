"""What each client verb takes besides the object it names: its options, one `TypedDict` per
verb family (controller-runtime's `client.GetOptions` ... `client.DeleteAllOfOptions`,
kube-rs's `PatchParams` and `DeleteParams`).

Callers write them as keywords, `client.patch(Machine, "m1", body, field_manager="x",
force=True)`, or keep a set as a value and spread it, `client.patch(Machine, "m1", body,
**options)`. Every key may be left out; the default each verb uses is said beside the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypedDict

from kubeforge._api.machinery.selectors import LabelSelector

__all__ = [
    "ApplyOptions",
    "CreateOptions",
    "DeleteAllOfOptions",
    "DeleteOptions",
    "GetOptions",
    "ListOptions",
    "PatchOptions",
    "PatchType",
    "PropagationPolicy",
    "UpdateOptions",
]

PatchType = Literal["merge", "json", "strategic", "apply"]
PropagationPolicy = Literal["Background", "Foreground", "Orphan"]


class _InNamespace(TypedDict, total=False):
    namespace: str | None
    """The namespace (default: the client's; ignored for cluster-scoped kinds)."""


class _Selection(_InNamespace, total=False):
    label_selector: str | LabelSelector | None
    """Only objects whose labels match (`app=web,tier!=db`)."""
    field_selector: str | None
    """Only objects whose fields match (`metadata.name=web`)."""


class _DryRun(TypedDict, total=False):
    dry_run: bool
    """Validated and admitted by the server, not carried out (default: False)."""


class _Write(_DryRun, total=False):
    field_manager: str | None
    """The manager the written fields are recorded for (default: the client's)."""
    field_validation: str | None
    """`"Strict"`, `"Warn"` or `"Ignore"`: unknown or duplicate fields refused, warned about
    or dropped, as kubectl's `--validate` (default: the server's, `"Warn"`)."""


class _Propagation(_DryRun, total=False):
    propagation_policy: PropagationPolicy | None
    """What becomes of the objects it owns: `"Background"` (collected afterwards),
    `"Foreground"` (collected first) or `"Orphan"` (kept). Default: the kind's."""


class GetOptions(_InNamespace, total=False):
    """`get` and `get_metadata`."""


class ListOptions(_Selection, total=False):
    """`list` and `list_metadata`. Without `namespace` or `all_namespaces`, a cached list
    covers every namespace the cache holds and a live one the client's namespace."""

    all_namespaces: bool
    """Every namespace (default: False)."""
    matching_fields: Mapping[str, str] | None
    """Required field values: index lookups in the cache, a field selector on the server."""


class CreateOptions(_Write, _InNamespace, total=False):
    """`create`; `namespace` overrides the object's."""


class UpdateOptions(_Write, total=False):
    """`update` and `update_status`."""


class PatchOptions(_Write, _InNamespace, total=False):
    """`patch` and `patch_status`."""

    patch_type: PatchType
    """`"merge"` (RFC 7386, the default), `"json"` (RFC 6902), `"strategic"` or `"apply"`."""
    force: bool | None
    """With `"apply"`: take fields other managers own (default: not sent)."""


class ApplyOptions(_DryRun, total=False):
    """`apply` and `apply_status` (server-side apply)."""

    field_manager: str | None
    """The manager applying (default: the client's, else `"kubeforge"`)."""
    force: bool
    """Take fields other managers own instead of a Conflict (default: False)."""


class DeleteOptions(_Propagation, _InNamespace, total=False):
    """`delete` and `delete_object` (kube's DeleteOptions); for `delete_object`, `namespace`
    overrides the object's, as `create`'s does."""

    grace_period_seconds: int | None
    """How long a Pod may take to stop (0: at once). Default: the object's."""
    preconditions: Mapping[str, str | None] | None
    """`{"uid": ..., "resourceVersion": ...}` the object must still have, else Conflict; a
    None value sets no condition on that field."""


class DeleteAllOfOptions(_Propagation, _Selection, total=False):
    """`delete_all_of`: the objects of a kind in a namespace that match the selectors."""
