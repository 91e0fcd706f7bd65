"""ControllerRevisions: the revision history of StatefulSets and DaemonSets, and what
`kubectl rollout history/undo` reads back.

As pkg/controller/history/controller_history.go and the two controllers' getPatch have it: a
revision holds a strategic merge patch that puts the owner's pod template back,
`{"spec": {"template": {..., "$patch": "replace"}}}`, carries the template's labels (so the
owner's selector finds it, as kubectl's history does) and a controller reference to its
owner, and has a number, one more than the highest before. The patch is encoded as Go
encodes a decoded map (keys sorted, compact, `<`, `>` and `&` escaped) from the typed object
(whose pod template metadata has `creationTimestamp: null`), so for the same template the
bytes, and so a StatefulSet revision's name, are those kube-controller-manager 1.33 writes,
and `kubectl rollout undo` recognises the template a revision holds.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from kubeforge._api.machinery.access import (
    annotations_of,
    controller_ref,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    uid_of,
)
from kubeforge._api.machinery.selectors import label_selector_matches
from kubeforge._client.errors import AlreadyExists, NotFound
from kubeforge._client.protocols import ObjectClient, Reader
from kubeforge._cluster.controllers._claiming import claim, owner_reference
from kubeforge._cluster.controllers._hashing import fnv1_32, safe_encode

__all__ = [
    "CONTROLLER_REVISION",
    "REVISION_HASH_LABEL",
    "claimed_revisions",
    "create_revision",
    "delete_revision",
    "go_json",
    "hash_revision",
    "new_revision",
    "renumber",
    "revision_number",
    "same_data",
    "sort_revisions",
    "template_patch",
    "with_revision",
]

Obj = dict[str, Any]

CONTROLLER_REVISION = "apps/v1/ControllerRevision"
# history.ControllerRevisionHashLabel: the hash of a (StatefulSet) revision's data.
REVISION_HASH_LABEL = "controller.kubernetes.io/hash"
# ControllerRevisionName keeps names within 253 characters.
_MAX_PREFIX = 223
# What Go's encoder escapes that JSON does not require (HTML characters, line separators).
_GO_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def go_json(value: Any) -> bytes:
    """`value` as Go's json.Marshal writes a decoded map: keys sorted at every level,
    no spaces, HTML characters escaped (they only occur inside strings)."""
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    for raw, escaped in _GO_ESCAPES:
        if raw in text:
            text = text.replace(raw, escaped)
    return text


def template_patch(owner: Mapping[str, Any]) -> Obj:
    """The data of a revision of `owner`'s current pod template (getPatch), its maps in the
    order Go writes them, so the server hands the same bytes back."""
    template = copy.deepcopy(dict(spec_of(owner).get("template") or {}))
    metadata = template.get("metadata")
    if not isinstance(metadata, dict):
        metadata = template["metadata"] = {}
    # A typed ObjectMeta always has its creationTimestamp, null in a template.
    metadata.setdefault("creationTimestamp", None)
    template["$patch"] = "replace"
    data: Obj = orjson.loads(go_json({"spec": {"template": template}}))
    return data


def hash_revision(data: Any, probe: int | None) -> str:
    """HashControllerRevision: FNV-1 of the data's bytes and of the collision count."""
    value = fnv1_32(go_json(data))
    if probe is not None:
        value = fnv1_32(str(probe).encode(), value)
    return safe_encode(str(value))


def _revision_name(prefix: str, hash_value: str) -> str:
    return f"{prefix[:_MAX_PREFIX]}-{hash_value}"


def new_revision(
    owner: Mapping[str, Any], data: Obj, number: int, collision_count: int | None
) -> Obj:
    """A revision of `owner` holding `data` (NewControllerRevision, a StatefulSet's
    newRevision): named `<owner>-<hash>`, labelled with the template's labels and the hash,
    annotated as the owner is (so `kubernetes.io/change-cause` shows in the history)."""
    hash_value = hash_revision(data, collision_count)
    labels = dict(labels_of(spec_of(owner).get("template")))
    labels[REVISION_HASH_LABEL] = hash_value
    metadata: Obj = {
        "name": _revision_name(name_of(owner), hash_value),
        "namespace": namespace_of(owner),
        "labels": labels,
        "ownerReferences": [owner_reference(owner)],
    }
    annotations = annotations_of(owner)
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": metadata,
        "data": data,
        "revision": number,
    }


def revision_number(revision: Mapping[str, Any] | None) -> int:
    return int((revision or {}).get("revision") or 0)


def sort_revisions(revisions: Iterable[Obj]) -> list[Obj]:
    """By number; equal numbers by age, then name (SortControllerRevisions)."""
    return sorted(
        revisions,
        key=lambda r: (
            revision_number(r),
            str(meta_of(r).get("creationTimestamp") or ""),
            name_of(r),
        ),
    )


def same_data(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two revisions hold the same data, byte for byte (EqualRevision)."""
    return go_json(a.get("data")) == go_json(b.get("data"))


def with_revision(owner: Mapping[str, Any], revision: Mapping[str, Any]) -> Obj:
    """`owner` with the pod template `revision` holds (ApplyRevision: the revision's patch
    replaces the template)."""
    restored = copy.deepcopy(dict(owner))
    template = ((revision.get("data") or {}).get("spec") or {}).get("template")
    if isinstance(template, Mapping):
        spec = dict(restored.get("spec") or {})
        spec["template"] = {k: v for k, v in template.items() if k != "$patch"}
        restored["spec"] = spec
    return restored


async def claimed_revisions(
    client: ObjectClient, live: Reader, owner: Obj, *, release: bool
) -> list[Obj]:
    """The revisions `owner` controls, orphans its selector matches adopted. With `release`
    (a DaemonSet's ClaimControllerRevisions), owned revisions its selector no longer matches
    are released; without (a StatefulSet's ListRevisions), they are only left out."""
    selector = spec_of(owner).get("selector")
    owner_uid = uid_of(owner)

    def matches(revision: Obj) -> bool:
        return label_selector_matches(selector, labels_of(revision))

    every: list[Obj] = await client.list(CONTROLLER_REVISION, namespace=namespace_of(owner))
    if release:
        candidates = every
    else:
        candidates = [
            r
            for r in every
            if matches(r) and ((controller_ref(r) or {}).get("uid", owner_uid) == owner_uid)
        ]
    return await claim(client, live, owner, CONTROLLER_REVISION, candidates, matches)


async def create_revision(
    client: ObjectClient,
    live: Reader,
    owner: Mapping[str, Any],
    revision: Obj,
    collision_count: int,
) -> tuple[Obj, int]:
    """Create `revision` (CreateControllerRevision): on a name taken by other data, count
    a collision and try the next name. Returns the revision and the collision count."""
    candidate = copy.deepcopy(revision)
    while True:
        name = _revision_name(name_of(owner), hash_revision(revision["data"], collision_count))
        candidate["metadata"]["name"] = name
        try:
            created: Obj = await client.create(candidate)
            return created, collision_count
        except AlreadyExists:
            existing: Obj = await live.get(CONTROLLER_REVISION, name, namespace=namespace_of(owner))
            if same_data(existing, revision):
                return existing, collision_count
            collision_count += 1


async def renumber(client: ObjectClient, revision: Obj, number: int) -> Obj:
    """Give an earlier revision the next number: its template is current again (a rollback)."""
    if revision_number(revision) == number:
        return revision
    updated: Obj = await client.patch(
        CONTROLLER_REVISION,
        name_of(revision),
        {"revision": number},
        patch_type="merge",
        namespace=namespace_of(revision),
    )
    return updated


async def delete_revision(client: ObjectClient, revision: Mapping[str, Any]) -> None:
    try:
        await client.delete(
            CONTROLLER_REVISION, name_of(revision), namespace=namespace_of(revision)
        )
    except NotFound:
        pass
