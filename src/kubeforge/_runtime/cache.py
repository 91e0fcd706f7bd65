"""The shared cache: one informer per kind, indexes, and reads served from memory.

Controllers that watch the same kind share its informer. Reading a kind the cache does not
hold raises `NotCached` rather than quietly starting a cluster-wide watch (the most common
way operators run out of memory); start one explicitly with `Cache.informer_for(kind)` or
read through the manager's uncached `api_reader`.

What is cached of each kind is set per kind (`CacheOptions`: namespaces, label and field
selectors, a transform) or for the whole cache (its namespaces). A kind may be cached whole
or as metadata only (PartialObjectMetadata); each is its own informer.

The cache reads its own writes: every object a write through its client returns is put in
the store at once (see `Informer.observe_write`), so a reconcile sees what it just wrote.

Reads refuse what the API server refuses. Label selectors and field selector syntax are
checked as the server checks them (the same 400 BadRequest). A field selector term is served
from the object itself for `metadata.name`, `metadata.namespace` and the selectable fields a
typed resource declares, from an index named after the field when there is one
(`index_field(kind, "spec.nodeName", ...)`, as controller-runtime requires), and otherwise
only once the server has said it supports that field for the kind: the cached client asks it
once (`FieldSelectorUnverified`), and a field the server refuses fails with the server's own
message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeforge._api.machinery.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    field_value,
)
from kubeforge._api.meta import GroupVersionKind, PartialObjectMetadata
from kubeforge._client.client import Client, KindLike, Written
from kubeforge._client.errors import BadRequest, NotFound
from kubeforge._runtime.informer import DEFAULT_RESYNC, Informer, Transform, strip_managed_fields
from kubeforge._runtime.store import NAMESPACE_INDEX, OWNER_INDEX, IndexFunc

__all__ = [
    "ALL_NAMESPACES",
    "Cache",
    "CacheOptions",
    "FieldSelectorUnverified",
    "NotCached",
    "kind_key",
]

log = logging.getLogger("kubeforge.cache")

ALL_NAMESPACES: Final = ""
"""In `namespaces`, every namespace (controller-runtime's cache.AllNamespaces)."""

# Field selector names every kind supports.
_ALWAYS_SELECTABLE = frozenset({"metadata.name", "metadata.namespace"})
_METADATA = "#metadata"


class NotCached(LookupError):
    """A cached read of a kind (or namespace) the cache does not watch."""

    def __init__(self, kind: str, detail: str | None = None) -> None:
        super().__init__(
            detail
            or f"the cache does not watch {kind}: watch it (builder.watches / "
            "cache.informer_for) or read it with the manager's api_reader"
        )


class FieldSelectorUnverified(LookupError):
    """A cached list with a field selector naming fields the cache cannot vouch for: neither
    indexed, nor known to be supported by the server for this kind. The cached client asks
    the server once and then answers from the cache."""

    def __init__(self, kind: str, fields: Sequence[str]) -> None:
        self.kind = kind
        self.fields = tuple(fields)
        super().__init__(
            f"the cache cannot tell whether the server supports field selector "
            f"{', '.join(self.fields)} for {kind}: list through the cached client (it asks "
            "the server once) or index the field with cache.index_field(kind, field, fn)"
        )


@dataclass(frozen=True)
class CacheOptions:
    """What the cache watches of one kind (controller-runtime's ByObject).

    `namespaces`: the namespaces to watch (None: the cache's own; `[ALL_NAMESPACES]`: all);
    `label_selector` / `field_selector`: only matching objects are listed, watched and kept;
    `transform`: applied to each object before it is stored (None: none).
    """

    namespaces: Sequence[str] | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    transform: Transform | None = strip_managed_fields


# kind -> kind_key(kind): every cached read names its kind, usually the same few.
_KIND_KEYS: dict[Any, str] = {}
_MAX_KIND_KEYS = 4096


def kind_key(kind: KindLike) -> str:
    """A stable name for a kind: `apps/v1/Deployment`."""
    try:
        return _KIND_KEYS[kind]
    except (KeyError, TypeError):
        pass
    key = _kind_key(kind)
    if len(_KIND_KEYS) < _MAX_KIND_KEYS:
        _KIND_KEYS[kind] = key
    return key


def _kind_key(kind: KindLike) -> str:
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


def _bad_request(message: str) -> BadRequest:
    return BadRequest(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "BadRequest",
            "message": message,
            "code": 400,
        },
        400,
    )


class Cache:
    """Informers shared by every controller of a manager.

    `namespace` or `namespaces` restrict every kind without namespaces of its own in
    `by_kind` (None: all namespaces).
    """

    def __init__(
        self,
        client: Client,
        *,
        namespace: str | None = None,
        namespaces: Sequence[str] | None = None,
        by_kind: Mapping[KindLike, CacheOptions] | None = None,
        default_transform: Transform | None = strip_managed_fields,
        sync_period: float | None = DEFAULT_RESYNC,
        on_watch_restart: Callable[[str, str], None] | None = None,
    ) -> None:
        if namespace is not None and namespaces is not None:
            raise ValueError("give namespace or namespaces, not both")
        self.client = client
        self.namespaces: tuple[str, ...] | None = _scope(
            namespaces if namespaces is not None else None if namespace is None else [namespace]
        )
        self.by_kind = {kind_key(kind): options for kind, options in (by_kind or {}).items()}
        self.default_transform = default_transform
        self.sync_period = sync_period
        self.on_watch_restart = on_watch_restart
        self._informers: dict[str, Informer] = {}
        self._kinds: dict[str, KindLike] = {}
        self._indexers: dict[str, dict[str, IndexFunc]] = {}
        # Field selector names the server said it supports, per kind.
        self._selectable: dict[str, set[str]] = {}
        self._started = False
        client.add_write_observer(self._observe_write)

    @property
    def namespace(self) -> str | None:
        """The one namespace the cache watches (None: all, or several)."""
        return self.namespaces[0] if self.namespaces and len(self.namespaces) == 1 else None

    def options_for(self, kind: KindLike) -> CacheOptions:
        """The cache options of `kind` (its own, or the cache's defaults)."""
        options = self.by_kind.get(kind_key(kind))
        if options is not None:
            return options
        return CacheOptions(transform=self.default_transform)

    def _namespaces_for(self, options: CacheOptions) -> tuple[str, ...] | None:
        if options.namespaces is not None:
            return _scope(options.namespaces)
        return self.namespaces

    def informer_for(self, kind: KindLike, *, metadata_only: bool = False) -> Informer:
        """The shared informer of `kind` (of its metadata only with `metadata_only`), created
        (and started, if the cache runs) on first use."""
        key = kind_key(kind)
        slot = key + _METADATA if metadata_only else key
        informer = self._informers.get(slot)
        if informer is None:
            options = self.options_for(kind)
            informer = Informer(
                self.client,
                kind,
                namespaces=self._namespaces_for(options),
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
                metadata_only=metadata_only,
            )
            self._informers[slot] = informer
            self._kinds[key] = kind
            if self._started:
                informer.start()
        return informer

    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def index_field(self, kind: KindLike, name: str, fn: Callable[[Any], Iterable[str]]) -> None:
        """Index objects of `kind` by `fn(obj) -> values`; query with `list(matching_fields=)`
        or, when `name` is a field path (`spec.nodeName`), with a field selector on it.

        `fn` receives the object as a dict (a typed instance for typed kinds). Register
        indexes before the cache starts, as controller-runtime's field indexer requires.
        """
        key = kind_key(kind)
        typed = _typed(kind)

        def index(obj: Mapping[str, Any]) -> Iterable[str]:
            return fn(typed.from_dict(dict(obj)) if typed is not None else obj)

        if name in self._indexers.get(key, {}):
            raise ValueError(f"index {name!r} already exists for {key}")
        self._indexers.setdefault(key, {})[name] = index
        for slot in (key, key + _METADATA):
            informer = self._informers.get(slot)
            if informer is not None:
                informer.store.add_indexer(name, index)

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

    # reading your own writes ----------------------------------------------------------------

    def _observe_write(self, written: Written) -> None:
        key = str(written.resource.gvk)
        full = self._informers.get(key)
        metadata = self._informers.get(key + _METADATA)
        if full is None and metadata is None:
            return
        if written.deleted:
            for informer in (full, metadata):
                if informer is not None:
                    informer.observe_delete(written.namespace, written.name)
            return
        for informer in (full, metadata):
            if informer is not None:
                obj = written.object()  # each informer keeps its own copy
                # Subresources such as scale answer with another kind: nothing to store.
                if obj.get("kind") != written.resource.kind:
                    return
                informer.observe_write(obj)

    # reads ----------------------------------------------------------------------------------

    def informer_serving(self, kind: KindLike, *, metadata_only: bool = False) -> Informer:
        """The informer reads of `kind` are answered from (a metadata read may be served by
        the whole objects' informer); NotCached when there is none. Creates nothing."""
        return self._informer_or_raise(kind, metadata_only)

    def _informer_or_raise(self, kind: KindLike, metadata_only: bool) -> Informer:
        key = kind_key(kind)
        if metadata_only:
            informer = self._informers.get(key + _METADATA) or self._informers.get(key)
        else:
            informer = self._informers.get(key)
        if informer is None:
            if not metadata_only and key + _METADATA in self._informers:
                raise NotCached(
                    key,
                    f"the cache holds only the metadata of {key}: read it with get_metadata / "
                    "list_metadata, watch the whole objects, or use the manager's api_reader",
                )
            raise NotCached(key)
        return informer

    def _check_namespace(self, informer: Informer, key: str, namespace: str | None) -> None:
        if namespace and informer.namespaces is not None and namespace not in informer.namespaces:
            raise NotCached(
                key,
                f"the cache watches {key} in namespaces {', '.join(informer.namespaces)}, "
                f"not in {namespace}: read it with the manager's api_reader",
            )

    def _wrap(self, kind: KindLike, obj: dict[str, Any], metadata_only: bool) -> Any:
        if metadata_only:
            return PartialObjectMetadata.from_dict(
                {
                    "apiVersion": obj.get("apiVersion"),
                    "kind": obj.get("kind"),
                    "metadata": obj.get("metadata") or {},
                }
            )
        typed = _typed(kind)
        if typed is None:
            return obj
        return typed.from_dict(obj)

    def get(
        self,
        kind: KindLike,
        name: str,
        *,
        namespace: str | None = None,
        metadata_only: bool = False,
    ) -> Any:
        """An object from the cache (a private copy); NotFound when it is not there.

        `metadata_only` gives its apiVersion, kind and metadata as a PartialObjectMetadata.
        """
        informer = self._informer_or_raise(kind, metadata_only)
        key = kind_key(kind)
        self._check_namespace(informer, key, namespace)
        obj = informer.store.get(f"{namespace}/{name}" if namespace else name)
        if obj is None:
            gvk = GroupVersionKind.parse(key)
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
        return self._wrap(kind, obj, metadata_only)

    def accept_fields(self, kind: KindLike, fields: Iterable[str]) -> None:
        """Record that the server supports these field selector names for `kind`."""
        self._selectable.setdefault(kind_key(kind), set()).update(fields)

    def _selectable_fields(self, kind: KindLike) -> set[str]:
        key = kind_key(kind)
        known = self._selectable.get(key)
        if known is None:
            known = self._selectable[key] = set(_ALWAYS_SELECTABLE)
            info = getattr(self._kinds.get(key, kind), "__kubeforge__", None)
            for field in getattr(info, "selectable_fields", ()):
                known.add(str(field).lstrip("."))
        return known

    def list(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | None = None,
        matching_fields: Mapping[str, str] | None = None,
        metadata_only: bool = False,
    ) -> list[Any]:
        """Objects from the cache (of one namespace, or all it holds), filtered by selectors;
        `matching_fields` uses indexes (index_field).

        BadRequest for a selector the server would refuse; FieldSelectorUnverified for a
        field selector the cache cannot yet vouch for (see the module documentation).
        """
        informer = self._informer_or_raise(kind, metadata_only)
        self._check_namespace(informer, kind_key(kind), namespace)
        store = informer.store
        labels = self._labels(label_selector)
        fields = self._fields(kind, informer, field_selector)
        keys: Iterable[str]
        if matching_fields:
            selected: set[str] | None = None
            for index, value in matching_fields.items():
                found = set(self._by_index(informer, kind, index, value))
                selected = found if selected is None else selected & found
            keys = sorted(selected or ())
            if namespace:
                keys = [k for k in keys if k.startswith(namespace + "/")]
        elif namespace:
            keys = store.by_index(NAMESPACE_INDEX, namespace)
        else:
            keys = sorted(store.keys())
        out = []
        for key in keys:
            obj = store.get(key)
            if obj is None:
                continue
            if labels is not None and not labels.matches(obj["metadata"].get("labels")):
                continue
            if fields is not None and not fields(key, obj):
                continue
            out.append(self._wrap(kind, obj, metadata_only))
        return out

    def _by_index(
        self, informer: Informer, kind: KindLike, index: str, value: str
    ) -> Sequence[str]:
        if index == "metadata.namespace":
            return informer.store.by_index(NAMESPACE_INDEX, value)
        if index == "metadata.ownerReferences.uid":
            return informer.store.by_index(OWNER_INDEX, value)
        try:
            return informer.store.by_index(index, value)
        except KeyError:
            raise KeyError(
                f"the cache has no index {index!r} for {kind_key(kind)}: create it with "
                "cache.index_field(kind, name, fn)"
            ) from None

    @staticmethod
    def _labels(selector: str | LabelSelector | None) -> LabelSelector | None:
        if selector is None or isinstance(selector, LabelSelector):
            return selector
        try:
            return LabelSelector.parse(selector)
        except SelectorError as exc:
            raise _bad_request(str(exc)) from None

    def _fields(
        self, kind: KindLike, informer: Informer, selector: str | None
    ) -> Callable[[str, Mapping[str, Any]], bool] | None:
        """A matcher for a field selector, or None when there is none."""
        if not selector:
            return None
        try:
            parsed = FieldSelector.parse(selector)
        except SelectorError as exc:
            raise _bad_request(str(exc)) from None
        if parsed.empty:
            return None
        selectable = self._selectable_fields(kind)
        indexed = informer.store.index_names()
        unknown = [f for f in parsed.fields if f not in selectable and f not in indexed]
        if unknown:
            raise FieldSelectorUnverified(kind_key(kind), unknown)
        store = informer.store
        # (field, wanted equal?, value, keys under the value in the field's index or None)
        terms = [
            (
                field,
                op == "=",
                value,
                store.keys_under(field, value)
                if field in indexed and field not in _ALWAYS_SELECTABLE
                else None,
            )
            for field, op, value in parsed.terms
        ]

        def matches(key: str, obj: Mapping[str, Any]) -> bool:
            for field, want_equal, value, keys in terms:
                if keys is not None:
                    equal = key in keys
                else:
                    equal = (field_value(obj, field) or "") == value
                if equal != want_equal:
                    return False
            return True

        return matches


def _scope(namespaces: Sequence[str] | None) -> tuple[str, ...] | None:
    """Namespaces to watch; None for all (no namespaces given, or ALL_NAMESPACES among them)."""
    if namespaces is None:
        return None
    if isinstance(namespaces, str):
        raise TypeError("namespaces is a list of namespace names, not one string")
    names = tuple(dict.fromkeys(namespaces))
    if not names or ALL_NAMESPACES in names:
        return None
    return names
