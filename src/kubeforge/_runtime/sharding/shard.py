"""A shard's side of the protocol: reconcile only what is assigned here, and let go of what the
sharder drains.

As kubernetes-controller-sharding's pkg/shard/controller does it (reconciler.go, predicate.go),
a sharded controller's reconciler is wrapped so that, before the user's code runs, it looks at
the object in this shard's cache:

- not there, or labelled for another shard: nothing to do (a request queued before the object
  moved, or a requeue after it; the cache selects only this shard's objects);
- carrying the drain label: acknowledge by removing the shard and drain labels, with the
  resourceVersion read as precondition, and do not reconcile; the sharder then assigns the
  object to its new shard;
- otherwise: the user's reconcile.

The work queue never hands one request to two workers, and the acknowledgement is itself a
reconcile of the object, so it happens only once no reconcile of that object runs here; after
it, this shard's cache no longer holds the object (the write leaves the selection). So an
object is reconciled by its old shard, then by its new one, never by both at once.

The for_ watch's predicates are widened: an event carrying the drain label always passes, so a
user's GenerationChanged cannot hide a drain. Objects of the ring's owned kinds the reconciler
creates are labelled for this shard at once, where they will be read (the upstream sharder's
webhook labels them at admission; ours has no webhook, decision 60).
"""

from __future__ import annotations

import contextlib
import enum
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubeforge._api.machinery.access import labels_of
from kubeforge._api.meta import GroupVersionKind
from kubeforge._api.objects import api_version_kind, get_meta, get_owner_references, set_meta
from kubeforge._client.errors import NotFound
from kubeforge._runtime.informer import Informer
from kubeforge._runtime.predicate import Predicate
from kubeforge._runtime.reconcile import Reconciler, Request, Result, SyncReconciler
from kubeforge._runtime.sharding.labels import drain_label, shard_label

__all__ = [
    "DrainOrPredicates",
    "Membership",
    "ShardClient",
    "ShardedReconciler",
    "SyncShardedReconciler",
    "Verdict",
]

log = logging.getLogger("kubeforge.sharding")

Obj = Mapping[str, Any]


class Verdict(enum.Enum):
    """What a shard does with a request."""

    SKIP = "skip"
    RELEASE = "release"
    RECONCILE = "reconcile"


class Membership:
    """This replica's shard in one ring, as its reconcilers see it."""

    def __init__(
        self,
        ring: str,
        shard: str,
        kind: GroupVersionKind,
        owned: Sequence[GroupVersionKind],
        *,
        active: Callable[[], bool],
        on_release: Callable[[], None],
    ) -> None:
        self.ring = ring
        self.shard = shard
        self.kind = kind
        self.shard_label = shard_label(ring)
        self.drain_label = drain_label(ring)
        self._owned = frozenset((gvk.group, gvk.kind) for gvk in owned)
        self._active = active
        self._on_release = on_release
        # The informer of the reconciled kind (the builder creates it after the membership).
        self.informer: Informer | None = None

    def verdict(self, request: Request) -> tuple[Verdict, dict[str, Any] | None]:
        """What to do with `request`, judged by this shard's cache, and the object."""
        if not self._active():
            # The shard Lease is being lost: the controllers are about to be stopped.
            return Verdict.SKIP, None
        assert self.informer is not None, "the membership's informer is set by the builder"
        key = f"{request.namespace}/{request.name}" if request.namespace else request.name
        obj = self.informer.store.get(key)
        if obj is None:
            return Verdict.SKIP, None
        labels = labels_of(obj)
        if labels.get(self.shard_label) != self.shard:
            return Verdict.SKIP, None
        if self.drain_label in labels:
            return Verdict.RELEASE, obj
        return Verdict.RECONCILE, obj

    def release_patch(self, obj: Obj) -> dict[str, Any]:
        """The merge patch that lets `obj` go: both labels removed, only if unchanged since."""
        version = (obj.get("metadata") or {}).get("resourceVersion")
        labels = {self.shard_label: None, self.drain_label: None}
        return {"metadata": {"resourceVersion": version, "labels": labels}}

    def released(self) -> None:
        self._on_release()

    def label_new(self, obj: Any) -> None:
        """Label an object the reconciler is about to create for this shard, when it is of
        an owned kind of the ring and has a controller (the object it was made for, which
        this shard holds) and no shard of its own yet."""
        if not self._owned:
            return
        try:
            api_version, kind = api_version_kind(obj)
        except ValueError:
            return
        if (api_version.rpartition("/")[0], kind) not in self._owned:
            return
        if not any(ref.get("controller") for ref in get_owner_references(obj)):
            return
        labels = dict(get_meta(obj, "labels") or {})
        if self.shard_label not in labels:
            labels[self.shard_label] = self.shard
            set_meta(obj, "labels", labels)


class DrainOrPredicates(Predicate):
    """The for_ watch's predicates, except that an object carrying the drain label always
    passes (upstream's shardcontroller.Predicate)."""

    def __init__(self, drain: str, predicates: Sequence[Predicate]) -> None:
        self.drain = drain
        self.predicates = tuple(predicates)

    def _draining(self, obj: Obj) -> bool:
        return self.drain in labels_of(obj)

    def create(self, obj: Obj) -> bool:
        return self._draining(obj) or all(p.create(obj) for p in self.predicates)

    def update(self, old: Obj, new: Obj) -> bool:
        return self._draining(new) or all(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Obj) -> bool:
        return all(p.delete(obj) for p in self.predicates)

    def generic(self, obj: Obj) -> bool:
        return self._draining(obj) or all(p.generic(obj) for p in self.predicates)


class ShardClient:
    """The client a sharded controller's reconciler gets: the manager's (cached reads, live
    writes; blocking for a plain `def` reconciler), with what it creates of the ring's owned
    kinds labelled for this shard (Membership.label_new)."""

    def __init__(self, client: Any, membership: Membership) -> None:
        self._client = client
        self._membership = membership

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def create(self, obj: Any, **options: Any) -> Any:
        self._membership.label_new(obj)
        return self._client.create(obj, **options)


class _Sharded:
    """What both reconciler shapes share: the wrapped reconciler's client is the shard's."""

    inner: Any
    membership: Membership

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "client":
            self.inner.client = ShardClient(value, self.membership)

    def _release(self, request: Request, obj: Obj | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments of the client's patch that lets the object go."""
        assert obj is not None
        patch = self.membership.release_patch(obj)
        args = (str(self.membership.kind), request.name, patch)
        return args, {"namespace": request.namespace or None}


class ShardedReconciler(_Sharded, Reconciler):
    """An async reconciler behind the shard's checks (see the module)."""

    inner: Reconciler

    def __init__(self, inner: Reconciler, membership: Membership) -> None:
        self.membership = membership
        self.inner = inner

    async def reconcile(self, request: Request) -> Result | None:
        verdict, obj = self.membership.verdict(request)
        if verdict is Verdict.RECONCILE:
            return await self.inner.reconcile(request)
        if verdict is Verdict.RELEASE:
            args, options = self._release(request, obj)
            with contextlib.suppress(NotFound):
                await self.client.patch(*args, **options)
                self.membership.released()
        return None


class SyncShardedReconciler(_Sharded, SyncReconciler):
    """A plain `def` reconciler behind the shard's checks, in its worker thread."""

    inner: SyncReconciler

    def __init__(self, inner: SyncReconciler, membership: Membership) -> None:
        self.membership = membership
        self.inner = inner

    def reconcile(self, request: Request) -> Result | None:
        verdict, obj = self.membership.verdict(request)
        if verdict is Verdict.RECONCILE:
            return self.inner.reconcile(request)
        if verdict is Verdict.RELEASE:
            args, options = self._release(request, obj)
            with contextlib.suppress(NotFound):
                self.client.patch(*args, **options)
                self.membership.released()
        return None
