"""The shared cache: one informer per kind, indexes, and reads served from memory.

Controllers that watch the same kind share its informer. Reading a kind the cache does not
hold raises `NotCached` rather than quietly starting a cluster-wide watch (the most common
way operators run out of memory); start one explicitly with `Cache.informer_for(kind)` or
read through the manager's uncached `api_reader`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeforge.api.meta import GroupVersionKind
from kubeforge.api.selectors import FieldSelector, LabelSelector, field_value
from kubeforge.client.client import Client, KindLike
from kubeforge.client.errors import NotFound
from kubeforge.runtime.informer import DEFAULT_RESYNC, Informer, Transform, strip_managed_fields
from kubeforge.runtime.store import NAMESPACE_INDEX, OWNER_INDEX, IndexFunc

__all__ = ["Cache", "CacheOptions", "NotCached", "kind_key"]

log = logging.getLogger("kubeforge.cache")


class NotCached(LookupError):
    """A cached read of a kind the cache does not watch."""

    def __init__(self, kind: str) -> None:
        super().__init__(
            f"the cache does not watch {kind}: watch it (builder.watches / cache.informer_for) "
            "or read it with the manager's api_reader"
        )


@dataclass(frozen=True)
class CacheOptions:
    """What the cache watches of one kind (controller-runtime's ByObject)."""

    namespace: str | None = None  # None: all namespaces
    label_selector: str | None = None
    field_selector: str | None = None
    transform: Transform | None = strip_managed_fields


def kind_key(kind: KindLike) -> str:
    """A stable name for a kind: `apps/v1/Deployment`."""
    info = getattr(kind, "__kubeforge__", None)
    if info is not None:
        return str(info.gvk)
    if isinstance(kind, GroupVersionKind):
        return str(kind)
    if isinstance(kind, str):
        return str(GroupVersionKind.parse(kind))
    raise TypeError(f"{kind!r} is not a kind")


def _typed(kind: KindLike) -> type[Any] | None:
    return kind if isinstance(kind, type) and hasattr(kind, "__kubeforge__") else None


class Cache:
    """Informers shared by every controller of a manager."""

    def __init__(
        self,
        client: Client,
        *,
        namespace: str | None = None,
        by_kind: Mapping[str, CacheOptions] | None = None,
        default_transform: Transform | None = strip_managed_fields,
        sync_period: float | None = DEFAULT_RESYNC,
        on_watch_restart: Callable[[str, str], None] | None = None,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.by_kind = dict(by_kind or {})
        self.default_transform = default_transform
        self.sync_period = sync_period
        self.on_watch_restart = on_watch_restart
        self._informers: dict[str, Informer] = {}
        self._kinds: dict[str, KindLike] = {}
        self._indexers: dict[str, dict[str, IndexFunc]] = {}
        self._started = False

    def options_for(self, kind: KindLike) -> CacheOptions:
        key = kind_key(kind)
        options = self.by_kind.get(key)
        if options is not None:
            return options
        return CacheOptions(namespace=self.namespace, transform=self.default_transform)

    def informer_for(self, kind: KindLike) -> Informer:
        """The shared informer of `kind`, created (and started, if the cache runs) on first use."""
        key = kind_key(kind)
        informer = self._informers.get(key)
        if informer is None:
            options = self.options_for(kind)
            informer = Informer(
                self.client,
                kind,
                namespace=options.namespace,
                label_selector=options.label_selector,
                field_selector=options.field_selector,
                transform=options.transform,
                resync_period=self.sync_period,
                indexers=self._indexers.get(key),
                on_watch_restart=(
                    (lambda why, k=key: self.on_watch_restart(k, why))  # type: ignore[misc]
                    if self.on_watch_restart is not None
                    else None
                ),
            )
            self._informers[key] = informer
            self._kinds[key] = kind
            if self._started:
                informer.start()
        return informer

    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def index_field(self, kind: KindLike, name: str, fn: Callable[[Any], Iterable[str]]) -> None:
        """Index objects of `kind` by `fn(obj) -> values`; query with `list(matching_fields=)`.

        `fn` receives the object as a dict (a typed instance for typed kinds).
        """
        key = kind_key(kind)
        typed = _typed(kind)

        def index(obj: Mapping[str, Any]) -> Iterable[str]:
            return fn(typed.from_dict(dict(obj)) if typed is not None else obj)

        informer = self._informers.get(key)
        if informer is not None:
            informer.store.add_indexer(name, index)
        else:
            self._indexers.setdefault(key, {})[name] = index

    async def start(self) -> None:
        """Start every informer (and any created later)."""
        self._started = True
        for informer in self._informers.values():
            informer.start()

    async def stop(self) -> None:
        self._started = False
        await asyncio.gather(*(i.stop() for i in self._informers.values()))

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait until every informer has listed once; False on timeout."""
        results = await asyncio.gather(*(i.wait_synced(timeout) for i in self._informers.values()))
        return all(results)

    # reads ----------------------------------------------------------------------------------

    def _informer_or_raise(self, kind: KindLike) -> Informer:
        informer = self._informers.get(kind_key(kind))
        if informer is None:
            raise NotCached(kind_key(kind))
        return informer

    def _wrap(self, kind: KindLike, obj: dict[str, Any]) -> Any:
        typed = _typed(kind)
        if typed is None:
            return obj
        return typed.from_dict(obj)

    def get(self, kind: KindLike, name: str, *, namespace: str | None = None) -> Any:
        """An object from the cache (a private copy); NotFound when it is not there."""
        informer = self._informer_or_raise(kind)
        key = f"{namespace}/{name}" if namespace else name
        obj = informer.store.get(key)
        if obj is None:
            gvk = GroupVersionKind.parse(kind_key(kind))
            raise NotFound(
                {
                    "kind": "Status",
                    "status": "Failure",
                    "reason": "NotFound",
                    "message": f'{gvk.kind.lower()} "{name}" not found',
                    "details": {"name": name, "kind": gvk.kind},
                    "code": 404,
                },
                404,
            )
        return self._wrap(kind, obj)

    def list(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
    ) -> list[Any]:
        """Objects from the cache, filtered; `matching_fields` uses indexes (index_field)."""
        informer = self._informer_or_raise(kind)
        store = informer.store
        keys: Iterable[str]
        if matching_fields:
            selected: set[str] | None = None
            for index, value in matching_fields.items():
                if index == "metadata.namespace":
                    found = set(store.by_index(NAMESPACE_INDEX, value))
                elif index == "metadata.ownerReferences.uid":
                    found = set(store.by_index(OWNER_INDEX, value))
                else:
                    found = set(store.by_index(index, value))
                selected = found if selected is None else selected & found
            keys = sorted(selected or ())
            if namespace:
                keys = [k for k in keys if k.startswith(namespace + "/")]
        elif namespace:
            keys = store.by_index(NAMESPACE_INDEX, namespace)
        else:
            keys = sorted(store.keys())
        labels = (
            LabelSelector.parse(label_selector)
            if isinstance(label_selector, str)
            else label_selector
        )
        fields = FieldSelector.parse(field_selector) if field_selector else None
        out = []
        for key in keys:
            obj = store.get(key)
            if obj is None:
                continue
            if labels is not None and not labels.matches(obj["metadata"].get("labels")):
                continue
            if fields is not None and not fields.matches(obj, field_value):
                continue
            out.append(self._wrap(kind, obj))
        return out
