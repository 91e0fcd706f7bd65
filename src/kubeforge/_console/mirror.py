"""The cluster as the console sees it: every kind the server serves, watched.

One metadata-only informer per listable and watchable kind (CRDs included: discovery is
read again when a CustomResourceDefinition changes) gives the counts per kind and
namespace, the ownership index (children by their owner's uid) and the changes the
timeline shows with the field manager that made them; Events are kept whole, indexed by the
object they are about. Objects are read whole only when asked for (`get`).

Kinds served in two groups (core Events and events.k8s.io Events are the same objects) are
watched once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeforge._client.client import Client
from kubeforge._client.discovery import APIResource
from kubeforge._client.errors import ApiError
from kubeforge._runtime.informer import HandlerFuncs, Informer
from kubeforge._runtime.store import OWNER_INDEX, Store
from kubeforge._runtime.timeline import Change, Timeline, group_kind, latest_manager

__all__ = ["ChangeListener", "ClusterMirror", "Kind"]

log = logging.getLogger("kubeforge.console")

ChangeListener = Callable[[Change], None]
EVENT_KIND = "v1/Event"
_INVOLVED = "involved-uid"
# Duplicates of kinds watched in another group.
_SKIPPED = frozenset({"events.k8s.io/Event"})
# How long after a CRD changes discovery is read again (several CRDs often come at once).
_REDISCOVER_DELAY = 0.3


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind the mirror watches."""

    resource: APIResource

    @property
    def key(self) -> str:
        """`apps/v1/Deployment`: how the console names the kind."""
        return f"{self.resource.api_version}/{self.resource.kind}"


def _involved_uid(obj: Mapping[str, Any]) -> Iterable[str]:
    uid = (obj.get("involvedObject") or {}).get("uid")
    return (uid,) if uid else ()


class ClusterMirror:
    """Watches every kind of the cluster `client` reaches; tells `timeline` (and the
    listeners) of each change after the first lists."""

    def __init__(self, client: Client, timeline: Timeline | None = None) -> None:
        self.client = client
        self.timeline = timeline
        self.informers: dict[str, Informer] = {}
        self.kinds: dict[str, Kind] = {}
        # group/Kind -> the key of the kind watched for it.
        self._by_group_kind: dict[str, str] = {}
        self._listeners: list[ChangeListener] = []
        self._rediscover: asyncio.TimerHandle | None = None
        self._discovering: asyncio.Task[None] | None = None
        self._started = False

    def subscribe(self, listener: ChangeListener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: ChangeListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    # running ----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Discover the kinds and start watching them (returns once they are listed, or
        after a few seconds for kinds slow to list)."""
        self._started = True
        await self._discover()
        await asyncio.gather(*(informer.wait_synced(5.0) for informer in self.informers.values()))

    async def stop(self) -> None:
        self._started = False
        if self._rediscover is not None:
            self._rediscover.cancel()
        if self._discovering is not None:
            self._discovering.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._discovering
        await asyncio.gather(*(informer.stop() for informer in self.informers.values()))
        self.informers.clear()

    async def _discover(self) -> None:
        found: dict[str, Kind] = {}
        try:
            groups = await self.client.discovery.server_groups()
        except (ApiError, OSError) as exc:
            log.warning("console: cannot read the cluster's discovery: %s", exc)
            return
        self.client.discovery.invalidate()
        for group, version in groups:
            try:
                resources = await self.client.discovery.resources(group, version)
            except (ApiError, OSError):
                continue
            for resource in resources:
                if not {"list", "watch"} <= resource.verbs:
                    continue
                kind = Kind(resource)
                if group_kind(kind.key) in _SKIPPED:
                    continue
                found[kind.key] = kind
        for key in set(self.informers) - set(found):
            await self.informers.pop(key).stop()
            self.kinds.pop(key, None)
        for key, kind in found.items():
            if key not in self.informers:
                self._watch(kind)
        self.kinds = found
        self._by_group_kind = {group_kind(key): key for key in found}

    def _watch(self, kind: Kind) -> None:
        key = kind.key
        whole = key == EVENT_KIND
        informer = Informer(
            self.client,
            key,
            metadata_only=not whole,
            transform=None,
            resync_period=None,
            indexers={_INVOLVED: _involved_uid} if whole else None,
        )

        def added(obj: dict[str, Any], initial: bool) -> None:
            if not initial:
                self._changed("ADDED", key, obj)

        def updated(old: dict[str, Any], new: dict[str, Any]) -> None:
            if _rv(old) != _rv(new):
                self._changed("MODIFIED", key, new)

        def deleted(obj: dict[str, Any]) -> None:
            self._changed("DELETED", key, obj)

        informer.add_handler(HandlerFuncs(added, updated, deleted))
        self.informers[key] = informer
        informer.start()

    def _changed(self, event: str, key: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        change = Change(
            event,
            key,
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(meta.get("resourceVersion") or ""),
            latest_manager(meta),
        )
        if self.timeline is not None and key != EVENT_KIND:
            self.timeline.change(change)
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:
                log.exception("console: a change listener failed")
        if group_kind(key) == "apiextensions.k8s.io/CustomResourceDefinition":
            self._schedule_discovery()

    def _schedule_discovery(self) -> None:
        if not self._started:
            return
        if self._rediscover is not None:
            self._rediscover.cancel()
        loop = asyncio.get_running_loop()
        self._rediscover = loop.call_later(_REDISCOVER_DELAY, self._rediscover_now)

    def _rediscover_now(self) -> None:
        self._rediscover = None
        if self._discovering is None or self._discovering.done():
            self._discovering = asyncio.create_task(self._discover(), name="console discovery")

    # reading ----------------------------------------------------------------------------------

    def kind(self, key: str) -> Kind | None:
        """The kind named `apps/v1/Deployment` (or any version of its group and kind)."""
        found = self.kinds.get(key)
        if found is None:
            other = self._by_group_kind.get(group_kind(key))
            found = self.kinds.get(other) if other else None
        return found

    def store(self, key: str) -> Store | None:
        kind = self.kind(key)
        informer = self.informers.get(kind.key) if kind is not None else None
        return informer.store if informer is not None else None

    def overview(self) -> dict[str, Any]:
        """The namespaces, and each kind with its count in all and per namespace."""
        kinds = []
        for key, kind in sorted(self.kinds.items(), key=lambda i: (i[1].resource.kind, i[0])):
            informer = self.informers.get(key)
            if informer is None:
                continue
            store = informer.store
            per_namespace: dict[str, int] = {}
            if kind.resource.namespaced:
                for object_key in store:
                    namespace = object_key.partition("/")[0]
                    per_namespace[namespace] = per_namespace.get(namespace, 0) + 1
            resource = kind.resource
            kinds.append(
                {
                    "key": key,
                    "group": resource.group,
                    "version": resource.version,
                    "kind": resource.kind,
                    "plural": resource.plural,
                    "namespaced": resource.namespaced,
                    "categories": list(resource.categories),
                    "count": len(store),
                    "namespaces": per_namespace,
                    "synced": informer.synced.is_set(),
                }
            )
        namespaces = self.store("v1/Namespace")
        return {
            "namespaces": sorted(namespaces.keys()) if namespaces is not None else [],
            "kinds": kinds,
        }

    def metadata(self, key: str, namespace: str, name: str) -> dict[str, Any] | None:
        store = self.store(key)
        if store is None:
            return None
        return store.get(f"{namespace}/{name}" if namespace else name)

    def children(self, uid: str) -> list[tuple[str, dict[str, Any]]]:
        """The objects whose ownerReferences name `uid`: (kind key, metadata object)."""
        found: list[tuple[str, dict[str, Any]]] = []
        for key, informer in self.informers.items():
            for child in informer.store.by_index(OWNER_INDEX, uid):
                obj = informer.store.get(child)
                if obj is not None:
                    found.append((key, obj))
        return found

    def events_for(self, uid: str) -> list[dict[str, Any]]:
        """The Events about the object of `uid`, oldest first."""
        informer = self.informers.get(EVENT_KIND)
        if informer is None or not uid:
            return []
        events = [
            obj
            for key in informer.store.by_index(_INVOLVED, uid)
            if (obj := informer.store.get(key)) is not None
        ]
        events.sort(key=_event_time)
        return events

    def owner_of(self, reference: Mapping[str, Any], namespace: str) -> tuple[str, Any] | None:
        """The owner an ownerReference names (kind key, metadata), if the cluster has it
        with that uid."""
        api_version = str(reference.get("apiVersion") or "")
        kind = self.kind(f"{api_version}/{reference.get('kind')}")
        if kind is None:
            return None
        scope = namespace if kind.resource.namespaced else ""
        obj = self.metadata(kind.key, scope, str(reference.get("name") or ""))
        if obj is None or (obj.get("metadata") or {}).get("uid") != reference.get("uid"):
            return None
        return kind.key, obj


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _event_time(event: Mapping[str, Any]) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )
