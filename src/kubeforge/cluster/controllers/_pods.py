"""What the workload controllers share: object accessors, selectors, pod state, times,
the order pods are deleted in, finding pods by controller, claiming children by selector
and owner reference, and expectations of their own writes.

Objects are the plain dicts the cache hands out (each read is a private copy).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubeforge.api.access import (
    annotations_of,
    controller_ref,
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    uid_of,
)
from kubeforge.api.selectors import label_selector_matches
from kubeforge.api.timestamps import parse_time_or_none
from kubeforge.client.errors import ApiError, Conflict, Invalid, NotFound
from kubeforge.runtime.cache import Cache
from kubeforge.runtime.cached_client import CachedClient
from kubeforge.runtime.informer import HandlerFuncs
from kubeforge.runtime.manager import Manager
from kubeforge.runtime.ownership import set_controller_reference
from kubeforge.runtime.reconcile import Request, Result

__all__ = [
    "CONTROLLER_INDEX",
    "DELETION_COST",
    "EXPECTATIONS_TTL",
    "ORPHAN",
    "POD",
    "Expectations",
    "Obj",
    "claim",
    "claimable_pods",
    "controllers_of",
    "gather_errors",
    "generate_name_prefix",
    "index_pods_by_controller",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "is_pod_terminal",
    "namespace_terminating",
    "observe_pods",
    "owner_reference",
    "pod_from_template",
    "pods_controlled_by",
    "pods_to_delete",
    "quiet_conflicts",
    "ready_condition",
    "replace",
    "seconds_until_available",
]

Obj = dict[str, Any]

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}

# Go clients give up on an expectation after five minutes (ExpectationsTimeout).
EXPECTATIONS_TTL = 300.0


# -- metadata ----------------------------------------------------------------------------------


def replace(target: Obj, new: Mapping[str, Any]) -> None:
    """Make `target` the object `new` in place, so every list holding it sees the change
    (nothing to do when `new` is `target`: the client's writes already work in place)."""
    if new is target:
        return
    target.clear()
    target.update(new)


# -- selectors ---------------------------------------------------------------------------------


def controllers_of(cache: Cache, child: Mapping[str, Any], kind: str) -> list[Request]:
    """The `kind` object ("group/version/Kind") controlling `child`; for an orphan, every
    `kind` object in its namespace whose selector matches it, so one can adopt it."""
    namespace = namespace_of(child)
    group = kind.rsplit("/", 2)[0] if kind.count("/") == 2 else ""
    ref = controller_ref(child)
    if ref is not None:
        api_version = str(ref.get("apiVersion", ""))
        if ref.get("kind") == kind.rsplit("/", 1)[1] and api_version.startswith(f"{group}/"):
            return [Request(namespace, str(ref.get("name")))]
        return []
    if is_deleting(child):
        return []
    labels = labels_of(child)
    requests = []
    for owner in cache.list(kind, namespace=namespace):
        spec = owner.get("spec")
        selector = spec.get("selector") if isinstance(spec, Mapping) else None
        if label_selector_matches(selector, labels):
            requests.append(Request(namespace, name_of(owner)))
    return requests


# -- pods --------------------------------------------------------------------------------------


def is_pod_terminal(pod: Mapping[str, Any]) -> bool:
    return status_of(pod).get("phase") in ("Succeeded", "Failed")


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """Neither finished nor being deleted (controller.IsPodActive)."""
    return not is_pod_terminal(pod) and not is_deleting(pod)


def ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in status_of(pod).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    condition = ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def seconds_until_available(
    pod: Mapping[str, Any], min_ready_seconds: int, at: datetime
) -> float | None:
    """0 when the pod is available at `at`, the seconds it still needs when it is ready but
    not yet for minReadySeconds, None when it is not ready."""
    condition = ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return None
    if min_ready_seconds <= 0:
        return 0.0
    since = parse_time_or_none(condition.get("lastTransitionTime"))
    if since is None:
        return float(min_ready_seconds)
    remaining = since.timestamp() + min_ready_seconds - at.timestamp()
    # Available only once strictly past the deadline, as upstream compares.
    return 0.0 if remaining < 0 else remaining + 0.001


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, at: datetime) -> bool:
    """Ready for at least minReadySeconds (podutil.IsPodAvailable)."""
    return seconds_until_available(pod, min_ready_seconds, at) == 0.0


def pod_from_template(
    template: Mapping[str, Any],
    owner: Mapping[str, Any],
    *,
    generate_name: str,
    finalizers: Sequence[str] = (),
) -> Obj:
    """A new pod from a pod template, controlled by `owner` (controller.GetPodFromTemplate)."""
    template_meta = meta_of(template)
    metadata: Obj = {"generateName": generate_name, "namespace": namespace_of(owner)}
    for key in ("labels", "annotations"):
        value = template_meta.get(key)
        if value:
            metadata[key] = dict(value)
    all_finalizers = list(template_meta.get("finalizers") or ())
    for finalizer in finalizers:
        if finalizer not in all_finalizers:
            all_finalizers.append(finalizer)
    if all_finalizers:
        metadata["finalizers"] = all_finalizers
    pod: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata}
    pod["spec"] = template.get("spec") or {}
    set_controller_reference(owner, pod)
    return pod


def generate_name_prefix(name: str) -> str:
    """`<name>-`, as pods and slices of a controller are named (shortened to stay valid)."""
    prefix = f"{name}-"
    # Generated names add five characters and must stay within 253 (63 for pods' hostnames).
    return prefix if len(prefix) <= 58 else prefix[:57] + "-"


# -- choosing pods to delete -------------------------------------------------------------------


def _max_restarts(pod: Mapping[str, Any]) -> int:
    statuses = status_of(pod).get("containerStatuses") or ()
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


def _deletion_cost(pod: Mapping[str, Any]) -> int:
    try:
        return int(annotations_of(pod).get(DELETION_COST, "0"))
    except ValueError:
        return 0


def _newest_first(value: datetime | None) -> tuple[int, float]:
    # Unknown times first, then the most recent.
    return (0, 0.0) if value is None else (1, -value.timestamp())


def _deletion_key(pod: Mapping[str, Any], rank: int) -> tuple[Any, ...]:
    """Sort key: pods that are cheapest to lose come first (ActivePodsWithRanks)."""
    ready = is_pod_ready(pod)
    ready_since = None
    if ready:
        condition = ready_condition(pod) or {}
        ready_since = parse_time_or_none(condition.get("lastTransitionTime"))
    return (
        1 if spec_of(pod).get("nodeName") else 0,
        _PHASE_ORDER.get(str(status_of(pod).get("phase")), 0),
        1 if ready else 0,
        _deletion_cost(pod),
        -rank,
        _newest_first(ready_since) if ready else (0, 0.0),
        -_max_restarts(pod),
        _newest_first(parse_time_or_none(meta_of(pod).get("creationTimestamp"))),
        uid_of(pod),
    )


def pods_to_delete(
    pods: Sequence[Obj], related: Sequence[Mapping[str, Any]], count: int
) -> list[Obj]:
    """The `count` pods to delete first; `related` pods (of sibling ReplicaSets too) rank
    pods by how crowded their node is."""
    if count >= len(pods):
        return list(pods)
    on_node: dict[str, int] = {}
    for pod in related:
        node = str(spec_of(pod).get("nodeName") or "")
        on_node[node] = on_node.get(node, 0) + 1
    keyed = [
        (_deletion_key(pod, on_node.get(str(spec_of(pod).get("nodeName") or ""), 0)), i)
        for i, pod in enumerate(pods)
    ]
    keyed.sort()
    return [pods[i] for _, i in keyed[:count]]


# -- claiming ----------------------------------------------------------------------------------


def owner_reference(owner: Mapping[str, Any]) -> Obj:
    return {
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


async def claim(
    client: CachedClient,
    owner: Obj,
    kind: str,
    candidates: Iterable[Obj],
    matches: Callable[[Obj], bool],
    *,
    release_finalizers: Sequence[str] = (),
) -> list[Obj]:
    """The children `owner` controls: adopt matching orphans, release non-matching children.

    Like client-go's ControllerRefManager: objects controlled by someone else are left
    alone; before the first adoption the owner is read afresh from the server, so an owner
    deleted (or replaced) meanwhile adopts nothing. Patches carry the child's uid so they
    apply to the object seen, not a namesake.
    """
    owner_uid = uid_of(owner)
    owner_kind = f"{owner.get('apiVersion')}/{owner.get('kind')}"
    claimed: list[Obj] = []
    adoption_checked: bool | None = None
    for child in candidates:
        ref = controller_ref(child)
        if ref is not None:
            if ref.get("uid") != owner_uid:
                continue
            if matches(child):
                claimed.append(child)
            elif not is_deleting(owner):
                await _release(client, kind, child, owner_uid, release_finalizers)
            continue
        if is_deleting(owner) or is_deleting(child) or not matches(child):
            continue
        if adoption_checked is None:
            adoption_checked = await _can_adopt(client, owner, owner_kind)
        if not adoption_checked:
            continue
        adopted = await _adopt(client, kind, child, owner)
        if adopted is not None:
            claimed.append(adopted)
    return claimed


async def _can_adopt(client: CachedClient, owner: Obj, owner_kind: str) -> bool:
    try:
        fresh = await client.api.get(owner_kind, name_of(owner), namespace=namespace_of(owner))
    except NotFound:
        return False
    return uid_of(fresh) == uid_of(owner) and not is_deleting(fresh)


async def _adopt(client: CachedClient, kind: str, child: Obj, owner: Obj) -> Obj | None:
    patch = {"metadata": {"ownerReferences": [owner_reference(owner)], "uid": uid_of(child)}}
    try:
        result: Obj = await client.patch(
            kind, name_of(child), patch, patch_type="strategic", namespace=namespace_of(child)
        )
    except (NotFound, Invalid):
        return None  # gone, or replaced by a namesake
    return result


async def _release(
    client: CachedClient,
    kind: str,
    child: Obj,
    owner_uid: str,
    finalizers: Sequence[str],
) -> None:
    metadata: Obj = {
        "ownerReferences": [{"$patch": "delete", "uid": owner_uid}],
        "uid": uid_of(child),
    }
    present = [f for f in finalizers if f in (meta_of(child).get("finalizers") or ())]
    if present:
        metadata["$deleteFromPrimitiveList/finalizers"] = present
    try:
        await client.patch(
            kind,
            name_of(child),
            {"metadata": metadata},
            patch_type="strategic",
            namespace=namespace_of(child),
        )
    except (NotFound, Invalid):
        pass


# -- finding pods ------------------------------------------------------------------------------

POD = "v1/Pod"
CONTROLLER_INDEX = "kubeforge.dev/controller-uid"
# Index value of pods without a controller.
ORPHAN = "-"


def _controller_uid(pod: Mapping[str, Any]) -> list[str]:
    ref = controller_ref(pod)
    return [str(ref.get("uid") or "")] if ref is not None else [ORPHAN]


def index_pods_by_controller(manager: Manager) -> None:
    """Index cached pods by their controller's uid (orphans under ORPHAN), so a controller
    reads its own pods and the orphans rather than every pod of a namespace."""
    try:
        manager.cache.index_field(POD, CONTROLLER_INDEX, _controller_uid)
    except ValueError:
        pass  # another controller of this manager registered it


async def pods_controlled_by(client: CachedClient, namespace: str, uid: str) -> list[Obj]:
    """Cached pods of `namespace` whose controller has `uid` (ORPHAN: no controller)."""
    pods: list[Obj] = await client.list(
        POD, namespace=namespace, matching_fields={CONTROLLER_INDEX: uid}
    )
    return pods


async def claimable_pods(client: CachedClient, owner: Mapping[str, Any]) -> list[Obj]:
    """The pods `owner` controls plus the orphans it might adopt."""
    namespace = namespace_of(owner)
    owned = await pods_controlled_by(client, namespace, uid_of(owner))
    return owned + await pods_controlled_by(client, namespace, ORPHAN)


# -- expectations ------------------------------------------------------------------------------


@dataclass
class _Record:
    creations: int = 0
    deletions: set[str] = field(default_factory=set)
    since: float = field(default_factory=time.monotonic)


class Expectations:
    """Creations and deletions a controller asked for that its cache has not shown yet
    (client-go's ControllerExpectations, deletions tracked by pod name).

    A controller acting on a cache that lags its own writes would create or delete twice;
    it skips managing an owner until the events for its last writes arrived (or five
    minutes passed, in case an event was lost).
    """

    def __init__(self, ttl: float = EXPECTATIONS_TTL) -> None:
        self.ttl = ttl
        self._records: dict[str, _Record] = {}

    def expect_creations(self, key: str, count: int) -> None:
        self._records[key] = _Record(creations=count)

    def expect_deletions(self, key: str, names: Iterable[str]) -> None:
        self._records[key] = _Record(deletions=set(names))

    def creation_observed(self, key: str) -> None:
        record = self._records.get(key)
        if record is not None:
            record.creations -= 1

    def deletion_observed(self, key: str, name: str) -> None:
        record = self._records.get(key)
        if record is not None:
            record.deletions.discard(name)

    def satisfied(self, key: str) -> bool:
        record = self._records.get(key)
        if record is None:
            return True
        if record.creations <= 0 and not record.deletions:
            return True
        return time.monotonic() - record.since > self.ttl

    def remaining_wait(self, key: str) -> float:
        """Seconds until an unmet expectation of `key` expires (0 when met or none)."""
        record = self._records.get(key)
        if record is None or self.satisfied(key):
            return 0.0
        return max(self.ttl - (time.monotonic() - record.since), 0.0)

    def forget(self, key: str) -> None:
        self._records.pop(key, None)


def observe_pods(
    manager: Manager,
    owner_kind: str,
    expectations: Expectations,
    on_update: Callable[[Obj, Obj], None] | None = None,
    on_delete: Callable[[Obj], None] | None = None,
) -> None:
    """Feed `expectations` from pod events of pods controlled by an `owner_kind` object."""

    def owner_key(pod: Mapping[str, Any]) -> str | None:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != owner_kind:
            return None
        return f"{namespace_of(pod)}/{ref.get('name')}"

    def added(pod: Obj, _initial: bool) -> None:
        key = owner_key(pod)
        if key is None:
            return
        if is_deleting(pod):
            # A pod first seen already deleting was not one of ours being created.
            expectations.deletion_observed(key, name_of(pod))
        else:
            expectations.creation_observed(key)

    def updated(old: Obj, new: Obj) -> None:
        key = owner_key(new)
        if key is not None and is_deleting(new) and not is_deleting(old):
            expectations.deletion_observed(key, name_of(new))
        if on_update is not None:
            on_update(old, new)

    def deleted(pod: Obj) -> None:
        key = owner_key(pod)
        if key is not None:
            expectations.deletion_observed(key, name_of(pod))
        if on_delete is not None:
            on_delete(pod)

    informer = manager.cache.informer_for("v1/Pod")
    informer.add_handler(HandlerFuncs(add=added, update=updated, delete=deleted))


# -- errors ------------------------------------------------------------------------------------


async def quiet_conflicts(
    work: Callable[[], Any],
) -> Result | None:
    """Run a reconcile body; a write that lost an optimistic-concurrency race (the cache was
    behind) is retried with backoff rather than reported as a failure."""
    try:
        result: Result | None = await work()
    except Conflict:
        return Result(requeue=True)
    return result


def namespace_terminating(exc: BaseException) -> bool:
    """Whether a create failed because its namespace is being deleted: every later create
    there fails too, so controllers drop the error (HasStatusCause NamespaceTerminating)."""
    if not isinstance(exc, ApiError):
        return False
    causes = exc.details.get("causes") or ()
    return any(isinstance(c, Mapping) and c.get("type") == "NamespaceTerminating" for c in causes)


async def gather_errors(calls: Sequence[Any]) -> list[BaseException | None]:
    """Await `calls` concurrently; each entry is None or the exception it raised."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    return [r if isinstance(r, BaseException) else None for r in results]
