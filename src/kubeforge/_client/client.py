"""The Kubernetes client: read and write objects of any kind, typed or as plain dicts.

A kind is given as a typed resource class (objects come back as instances of it), as a
`GroupVersionKind`, or as the string `"<apiVersion>/<Kind>"` (`"apps/v1/Deployment"`;
objects come back as dicts). Objects to write are typed instances or dicts carrying
`apiVersion` and `kind`.

`create`, `update` and `update_status` make the object given the server's answer, in
place, and return that same object, so its resourceVersion is always the current one
(decision 0018). `apply` leaves its argument alone (it is the configuration you declare)
and returns the object as stored; `patch` returns the object as stored.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeAlias, Unpack

import orjson
from pydantic import BaseModel
from typing_extensions import TypeVar

from kubeforge._api.meta import GroupVersionKind, PartialObjectMetadata, ResourceInfo, gvk_of
from kubeforge._client.config import ClusterConfig, load_config
from kubeforge._client.discovery import APIResource, Discovery
from kubeforge._client.errors import ApiError
from kubeforge._client.options import (
    ApplyOptions,
    CreateOptions,
    DeleteAllOfOptions,
    DeleteOptions,
    GetOptions,
    ListOptions,
    PatchOptions,
    UpdateOptions,
)
from kubeforge._client.transport import RequestObserver, Response, Transport
from kubeforge._client.watch import BOOKMARK, WatchEvent, watch_events

__all__ = [
    "Call",
    "CallObserver",
    "Client",
    "KindLike",
    "KindOf",
    "Obj",
    "ObjectList",
    "WriteObserver",
    "Written",
    "matching_fields_selector",
]

T = TypeVar("T")
Obj = TypeVar("Obj", default=dict[str, Any])
"""What a read gives: instances of a typed class, or dicts for a kind given by name."""
KindLike = type[Any] | GroupVersionKind | str
KindOf: TypeAlias = type[Obj] | GroupVersionKind | str
"""A kind whose objects read as `Obj`: a typed class, or a `GroupVersionKind` or
`"<apiVersion>/<Kind>"` string (dicts)."""

_PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
DEFAULT_PAGE_SIZE = 500
_NO_OPTIONS: Mapping[str, Any] = {}
# Metadata-only reads ask for PartialObjectMetadata (as client-go's metadata client does),
# with plain JSON as a fallback: a server that cannot project gets its objects cut here.
_METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
_METADATA_LIST_ACCEPT = (
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)


class ObjectList(list[T]):
    """The answer to a list: a list of the items, with the revision they are consistent at
    (and, for one page, the token of the next)."""

    def __init__(
        self,
        items: Iterable[T] = (),
        resource_version: str = "",
        continue_token: str | None = None,
        remaining_item_count: int | None = None,
        kind: str = "",
    ) -> None:
        super().__init__(items)
        self.resource_version = resource_version
        self.continue_token = continue_token
        self.remaining_item_count = remaining_item_count
        self.kind = kind

    @property
    def items(self) -> list[T]:
        """The items (the list itself)."""
        return self

    def __repr__(self) -> str:
        return f"ObjectList({list.__repr__(self)}, resource_version={self.resource_version!r})"


@dataclass(frozen=True, slots=True)
class Written:
    """What a successful write told the client: the object as the server returned it, or
    (`deleted`) that a delete removed it. `body` is the server's answer, undecoded."""

    resource: APIResource
    namespace: str | None
    name: str
    body: bytes
    deleted: bool = False

    def object(self) -> dict[str, Any]:
        """A fresh decoded copy of the object written."""
        data: dict[str, Any] = orjson.loads(self.body)
        return data


WriteObserver = Callable[[Written], None]
"""Told about every object a write returned (how a cache reads its own writes)."""


# Made for every request while the client is observed: not frozen, as a frozen dataclass
# takes several times as long to make.
@dataclass(slots=True)
class Call:
    """One request a client made and how it ended: `call` names the verb as the client
    does (get, list, create, update_status, patch, delete ...), `params` its query, `code`
    the HTTP status, `body` the answer of a success, `error` the ApiError of a failure,
    `reply` the success's response (see `decoded`)."""

    call: str
    resource: APIResource
    namespace: str | None
    name: str | None
    params: Mapping[str, str]
    code: int
    body: bytes | None = None
    error: ApiError | None = None
    reply: Response | None = field(default=None, repr=False, compare=False)

    def decoded(self) -> Any:
        """The answer decoded (None for a failure): the very object the caller is handed
        next, decoded once for both, so read what is needed at once and keep nothing of it
        (decode `body` for an object of one's own)."""
        return None if self.reply is None else self.reply.json()


_UNDECODED: Any = object()


@dataclass(frozen=True, slots=True)
class _SharedResponse(Response):
    """An answer decoded at most once: a client's call observers and the caller share the
    decoding (made only while someone observes the client)."""

    _decoded: Any = field(default=_UNDECODED, repr=False, compare=False)

    def json(self) -> Any:
        decoded = self._decoded
        if decoded is _UNDECODED:
            decoded = Response.json(self)
            object.__setattr__(self, "_decoded", decoded)
        return decoded


CallObserver = Callable[[Call], None]
"""Told about every request a client makes once it has its answer (what a manager's
observers learn the API reads and writes from)."""


def matching_fields_selector(
    field_selector: str | None, matching_fields: Mapping[str, str] | None
) -> str | None:
    """A field selector requiring each `matching_fields` entry, joined to `field_selector`
    (controller-runtime's MatchingFields, sent to the server)."""
    terms = [field_selector] if field_selector else []
    for name, value in (matching_fields or {}).items():
        escaped = value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        terms.append(f"{name}={escaped}")
    return ",".join(terms) or None


@dataclass
class _Target:
    resource: APIResource
    typed: type[Any] | None
    namespace: str | None
    extra: dict[str, Any] = field(default_factory=dict)


def _info_of(kind: Any) -> ResourceInfo | None:
    info = getattr(kind, "__kubeforge__", None)
    return info if isinstance(info, ResourceInfo) else None


def _metadata_only(item: dict[str, Any], resource: APIResource) -> dict[str, Any]:
    """An object cut to its metadata, naming its own kind (not PartialObjectMetadata), as
    controller-runtime's metadata client returns it."""
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": item.get("metadata") or {},
    }


def adopt(obj: T, result: Any) -> T:
    """Make `obj` the server's answer `result` in place and return it; an object that cannot
    be changed in place (a frozen or unknown type) is left alone and `result` returned."""
    if result is obj:
        return obj
    if isinstance(obj, MutableMapping) and isinstance(result, Mapping):
        obj.clear()
        obj.update(result)
        return obj
    if isinstance(obj, BaseModel) and type(result) is type(obj):
        if obj.model_config.get("frozen"):
            return result
        # The documented instance state of a pydantic model: field values, the fields set,
        # extra (unknown) fields and private attributes.
        object.__setattr__(obj, "__dict__", result.__dict__)
        object.__setattr__(obj, "__pydantic_fields_set__", result.__pydantic_fields_set__)
        object.__setattr__(obj, "__pydantic_extra__", result.__pydantic_extra__)
        object.__setattr__(obj, "__pydantic_private__", result.__pydantic_private__)
        return obj
    return result  # type: ignore[no-any-return]


def to_dict(obj: Any) -> dict[str, Any]:
    """An object as the JSON-shaped dict sent to the server."""
    if isinstance(obj, Mapping):
        return dict(obj)
    convert = getattr(obj, "to_dict", None)
    if callable(convert):
        result = convert()
        if isinstance(result, dict):
            return result
    raise TypeError(f"cannot send a {type(obj).__name__}: give a dict or a kubeforge resource")


class Client:
    """Reads and writes objects on one cluster. Use it as an async context manager, or close()."""

    def __init__(
        self,
        config: ClusterConfig,
        *,
        field_manager: str | None = None,
        timeout: float = 30.0,
        on_request: RequestObserver | None = None,
        on_retry: RequestObserver | None = None,
    ) -> None:
        self.config = config
        self.field_manager = field_manager
        self.transport = Transport(
            config, timeout=timeout, on_request=on_request, on_retry=on_retry
        )
        self.discovery = Discovery(self.transport)
        self._observers: list[WriteObserver] = []
        self._call_observers: tuple[CallObserver, ...] = ()

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | None = None, *, context: str | None = None, **options: Any
    ) -> Client:
        """A client for the kubeconfig (or in-cluster) configuration kubectl would use."""
        return cls(load_config(kubeconfig=kubeconfig, context=context), **options)

    @property
    def namespace(self) -> str:
        """The default namespace (the context's, or the pod's in a cluster)."""
        return self.config.namespace

    async def close(self) -> None:
        await self.transport.close()

    def abort(self) -> None:
        """Send nothing more and drop every connection and watch now (`close()` after)."""
        self.transport.abort()

    def add_write_observer(self, observer: WriteObserver) -> None:
        """Call `observer` with every object a write through this client returns (not for
        dry runs), before the write's caller sees it."""
        self._observers.append(observer)

    def remove_write_observer(self, observer: WriteObserver) -> None:
        if observer in self._observers:
            self._observers.remove(observer)

    def add_call_observer(self, observer: CallObserver) -> None:
        """Call `observer` with every request this client makes (not watches), once it is
        answered, before its caller sees the answer."""
        self._call_observers = (*self._call_observers, observer)

    def remove_call_observer(self, observer: CallObserver) -> None:
        self._call_observers = tuple(o for o in self._call_observers if o != observer)

    def _written(
        self, target: _Target, name: str, reply: Response, *, deleted: bool = False
    ) -> None:
        if not self._observers:
            return
        written = Written(target.resource, target.namespace, name, reply.body, deleted)
        for observer in list(self._observers):
            observer(written)

    async def _send(
        self,
        call: str,
        target: _Target,
        name: str | None,
        method: str,
        path: str,
        **options: Any,
    ) -> Response:
        """One request; an ApiError it raises names the call, the kind and the object."""
        try:
            reply = await self.transport.request(method, path, **options)
        except ApiError as exc:
            exc.call = _describe_call(call, target, name)
            if self._call_observers:
                params = options.get("params") or {}
                self._called(
                    Call(call, target.resource, target.namespace, name, params, exc.code, None, exc)
                )
            raise
        if self._call_observers:
            reply = _SharedResponse(reply.status, reply.headers, reply.body)
            params = options.get("params") or {}
            self._called(
                Call(
                    call,
                    target.resource,
                    target.namespace,
                    name,
                    params,
                    reply.status,
                    reply.body,
                    None,
                    reply,
                )
            )
        return reply

    def _called(self, done: Call) -> None:
        for observer in self._call_observers:
            observer(done)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # kinds ----------------------------------------------------------------------------------

    async def resource(self, kind: KindLike) -> APIResource:
        """The served resource for a kind (learned from discovery, or from a typed class)."""
        info = _info_of(kind)
        if info is not None:
            gvk = info.gvk
            resource = APIResource(gvk.group, gvk.version, gvk.kind, info.plural, info.namespaced)
            self.discovery.remember(resource)
            return resource
        if isinstance(kind, GroupVersionKind):
            return await self.discovery.resource_for(kind)
        if isinstance(kind, str):
            return await self.discovery.resource_for(GroupVersionKind.parse(kind))
        raise TypeError(f"{kind!r} is not a kind")

    async def _target(self, kind: KindLike, namespace: str | None) -> _Target:
        resource = await self.resource(kind)
        typed = kind if _info_of(kind) is not None else None
        if resource.namespaced:
            ns: str | None = namespace if namespace is not None else self.namespace
        else:
            ns = None
        return _Target(resource, typed if isinstance(typed, type) else None, ns)

    async def _target_of(self, obj: Any, namespace: str | None) -> tuple[_Target, dict[str, Any]]:
        data = to_dict(obj)
        kind: KindLike = type(obj) if _info_of(type(obj)) is not None else gvk_of(data)
        meta = data.get("metadata") or {}
        target = await self._target(kind, namespace or meta.get("namespace"))
        if target.namespace is not None:
            data.setdefault("metadata", {})["namespace"] = target.namespace
        return target, data

    def _wrap(self, target: _Target, data: Any) -> Any:
        if target.typed is None:
            return data
        from_dict = getattr(target.typed, "from_dict", None)
        if callable(from_dict):
            return from_dict(data)
        return target.typed(**data)

    def _params(self, writing: Mapping[str, Any] = _NO_OPTIONS, **extra: Any) -> dict[str, str]:
        """Query parameters: a write's options (`dry_run`, `field_manager`,
        `field_validation`), then each of `extra` that is set."""
        params: dict[str, str] = {}
        if writing.get("dry_run"):
            params["dryRun"] = "All"
        manager = writing.get("field_manager") or self.field_manager
        if manager:
            params["fieldManager"] = manager
        validation = writing.get("field_validation")
        if validation:
            params["fieldValidation"] = validation
        for key, value in extra.items():
            if value is not None:
                params[key] = str(value).lower() if isinstance(value, bool) else str(value)
        return params

    # reads ----------------------------------------------------------------------------------

    async def get(self, kind: KindOf[Obj], name: str, **options: Unpack[GetOptions]) -> Obj:
        """One object by name; NotFound when it does not exist."""
        target = await self._target(kind, options.get("namespace"))
        path = target.resource.path(target.namespace, name)
        result: Obj = self._wrap(
            target, (await self._send("get", target, name, "GET", path)).json()
        )
        return result

    async def get_metadata(
        self, kind: KindLike, name: str, **options: Unpack[GetOptions]
    ) -> PartialObjectMetadata:
        """One object's metadata only (apiVersion, kind and metadata); NotFound when absent."""
        target = await self._target(kind, options.get("namespace"))
        path = target.resource.path(target.namespace, name)
        reply = await self._send("get", target, name, "GET", path, accept=_METADATA_ACCEPT)
        return PartialObjectMetadata.from_dict(_metadata_only(reply.json(), target.resource))

    async def get_subresource(
        self, kind: KindLike, name: str, subresource: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """`GET <object>/<subresource>` (status, scale ...), as a dict."""
        target = await self._target(kind, namespace)
        path = target.resource.path(target.namespace, name, subresource)
        result: dict[str, Any] = (await self._send("get", target, name, "GET", path)).json()
        return result

    async def list_page(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        all_namespaces: bool = False,
        metadata_only: bool = False,
    ) -> ObjectList[Any]:
        """One page of a list (use `continue_token` for the next one); `metadata_only`
        lists each object's apiVersion, kind and metadata only, as dicts."""
        target = await self._target(kind, None if all_namespaces else namespace)
        params = self._params(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=limit,
            resourceVersion=resource_version,
        )
        if continue_token:
            params["continue"] = continue_token
        path = target.resource.path(None if all_namespaces else target.namespace)
        accept = _METADATA_LIST_ACCEPT if metadata_only else None
        reply = await self._send("list", target, None, "GET", path, params=params, accept=accept)
        doc = reply.json()
        meta = doc.get("metadata") or {}
        items = doc.get("items") or []
        api_version = target.resource.api_version
        if metadata_only:
            items = [_metadata_only(item, target.resource) for item in items]
        else:
            for item in items:
                # List items omit their own kind; fill it in as clients do.
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", target.resource.kind)
        wrapped = (
            [self._wrap(target, item) for item in items]
            if target.typed and not metadata_only
            else items
        )
        return ObjectList(
            wrapped,
            str(meta.get("resourceVersion") or ""),
            meta.get("continue") or None,
            meta.get("remainingItemCount"),
            str(doc.get("kind") or ""),
        )

    async def list_pages(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        all_namespaces: bool = False,
        metadata_only: bool = False,
    ) -> AsyncIterator[ObjectList[Any]]:
        """A list, page by page; every page is from the same consistent snapshot."""
        token: str | None = None
        while True:
            page = await self.list_page(
                kind,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=page_size,
                continue_token=token,
                all_namespaces=all_namespaces,
                metadata_only=metadata_only,
            )
            yield page
            token = page.continue_token
            if not token:
                return

    async def list(
        self,
        kind: KindOf[Obj],
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        **options: Unpack[ListOptions],
    ) -> ObjectList[Obj]:
        """Every object of a kind in a namespace (or all namespaces), fetched page by page.

        `matching_fields` entries are required field values, sent as a field selector.
        """
        return await self._list_all(kind, options, page_size, metadata_only=False)

    async def list_metadata(
        self,
        kind: KindLike,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        **options: Unpack[ListOptions],
    ) -> ObjectList[PartialObjectMetadata]:
        """`list`, with each object's apiVersion, kind and metadata only."""
        found = await self._list_all(kind, options, page_size, metadata_only=True)
        items = [PartialObjectMetadata.from_dict(item) for item in found.items]
        return ObjectList(items, found.resource_version, kind=found.kind)

    async def _list_all(
        self, kind: KindLike, options: ListOptions, page_size: int, *, metadata_only: bool
    ) -> ObjectList[Any]:
        selector = options.get("label_selector")
        items: list[Any] = []
        first: ObjectList[Any] | None = None
        async for page in self.list_pages(
            kind,
            namespace=options.get("namespace"),
            label_selector=None if selector is None else str(selector),
            field_selector=matching_fields_selector(
                options.get("field_selector"), options.get("matching_fields")
            ),
            page_size=page_size,
            all_namespaces=options.get("all_namespaces", False),
            metadata_only=metadata_only,
        ):
            first = first or page
            items.extend(page.items)
        assert first is not None
        return ObjectList(items, first.resource_version, kind=first.kind)

    async def watch(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        idle_timeout: float | None = None,
        metadata_only: bool = False,
    ) -> AsyncIterator[WatchEvent]:
        """Changes to objects of a kind, from `resource_version` (or the current state).

        `metadata_only` streams each object's apiVersion, kind and metadata only, as dicts.
        Raises Gone when the server no longer has history that old; re-list then.
        """
        target = await self._target(kind, None if all_namespaces else namespace)
        params = self._params(
            watch="true",
            resourceVersion=resource_version,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            timeoutSeconds=timeout_seconds,
            allowWatchBookmarks="true" if allow_bookmarks else None,
        )
        path = target.resource.path(None if all_namespaces else target.namespace)
        accept = _METADATA_ACCEPT if metadata_only else None
        try:
            async for event in watch_events(
                self.transport, path, params, idle_timeout=idle_timeout, accept=accept
            ):
                if event.type == BOOKMARK:
                    yield event
                elif metadata_only:
                    yield WatchEvent(event.type, _metadata_only(event.object, target.resource))
                elif target.typed is not None:
                    yield WatchEvent(event.type, self._wrap(target, event.object))
                else:
                    yield event
        except ApiError as exc:
            exc.call = exc.call or _describe_call("watch", target, None)
            raise

    # writes ---------------------------------------------------------------------------------

    async def create(self, obj: T, **options: Unpack[CreateOptions]) -> T:
        """Create an object (AlreadyExists when the name is taken). `obj` becomes the object
        as stored (name, uid, resourceVersion ...), in place, and is returned."""
        target, data = await self._target_of(obj, options.get("namespace"))
        path = target.resource.path(target.namespace)
        name = (data.get("metadata") or {}).get("name") or ""
        reply = await self._send(
            "create",
            target,
            name or None,
            "POST",
            path,
            params=self._params(options),
            body=orjson.dumps(data),
            content_type="application/json",
        )
        result = reply.json()
        if not options.get("dry_run"):
            self._written(target, (result.get("metadata") or {}).get("name") or name, reply)
        return adopt(obj, self._wrap(target, result))

    async def update(
        self, obj: T, *, subresource: str | None = None, **options: Unpack[UpdateOptions]
    ) -> T:
        """Replace an object (Conflict when its resourceVersion is stale), or its
        `subresource`. `obj` becomes the object as stored, in place, and is returned."""
        target, data = await self._target_of(obj, None)
        name = (data.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("update needs metadata.name")
        reply = await self._send(
            f"update_{subresource}" if subresource else "update",
            target,
            name,
            "PUT",
            target.resource.path(target.namespace, name, subresource),
            params=self._params(options),
            body=orjson.dumps(data),
            content_type="application/json",
        )
        if not options.get("dry_run"):
            self._written(target, name, reply)
        return adopt(obj, self._wrap(target, reply.json()))

    async def update_status(self, obj: T, **options: Unpack[UpdateOptions]) -> T:
        """Replace an object's status through its status subresource; `obj` becomes the
        object as stored, in place, and is returned."""
        return await self.update(obj, subresource="status", **options)

    async def patch(
        self,
        kind: KindOf[Obj],
        name: str,
        patch: Any,
        *,
        subresource: str | None = None,
        **options: Unpack[PatchOptions],
    ) -> Obj:
        """Patch an object (or its `subresource`): `merge` (RFC 7386), `json` (RFC 6902),
        `strategic` (built-ins), or `apply` (server-side apply; prefer `apply()`). Returns the
        object as stored."""
        target = await self._target(kind, options.get("namespace"))
        reply = await self._send(
            f"patch_{subresource}" if subresource else "patch",
            target,
            name,
            "PATCH",
            target.resource.path(target.namespace, name, subresource),
            params=self._params(options, force=options.get("force")),
            body=patch if isinstance(patch, bytes) else orjson.dumps(patch),
            content_type=_PATCH_CONTENT_TYPES[options.get("patch_type", "merge")],
        )
        if not options.get("dry_run"):
            self._written(target, name, reply)
        result: Obj = self._wrap(target, reply.json())
        return result

    async def patch_status(
        self, kind: KindOf[Obj], name: str, patch: Any, **options: Unpack[PatchOptions]
    ) -> Obj:
        """Patch an object's status subresource (a merge patch unless `patch_type` says);
        returns the object as stored."""
        return await self.patch(kind, name, patch, subresource="status", **options)

    async def apply(
        self, obj: T, *, subresource: str | None = None, **options: Unpack[ApplyOptions]
    ) -> T:
        """Server-side apply: make the object (or its `subresource`) match `obj` for the
        fields this manager owns.

        Creates the object when it does not exist. A field another manager owns with a
        different value raises Conflict unless `force`. Returns the object as stored; `obj`
        itself is left as it was (it is the configuration you apply, not the whole object).
        """
        target, data = await self._target_of(obj, None)
        name = (data.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("apply needs metadata.name")
        manager = options.get("field_manager") or self.field_manager or "kubeforge"
        writing = {"dry_run": options.get("dry_run", False), "field_manager": manager}
        reply = await self._send(
            f"apply_{subresource}" if subresource else "apply",
            target,
            name,
            "PATCH",
            target.resource.path(target.namespace, name, subresource),
            params=self._params(writing, force=options.get("force", False)),
            body=orjson.dumps(data),
            content_type=_PATCH_CONTENT_TYPES["apply"],
        )
        if not options.get("dry_run"):
            self._written(target, name, reply)
        result: T = self._wrap(target, reply.json())
        return result

    async def apply_status(self, obj: T, **options: Unpack[ApplyOptions]) -> T:
        """Server-side apply of an object's status; returns the object as stored."""
        return await self.apply(obj, subresource="status", **options)

    async def delete(
        self, kind: KindLike, name: str, **options: Unpack[DeleteOptions]
    ) -> dict[str, Any]:
        """Delete an object; returns the server's answer (the object while finalizers hold
        it, or a Status). NotFound when it does not exist.

        `propagation_policy`: what happens to the objects it owns ("Background": the garbage
        collector deletes them afterwards; "Foreground": before the object goes; "Orphan":
        they stay). `grace_period_seconds`: for Pods, how long they may take to stop (0:
        at once). `preconditions`: `{"uid": ..., "resourceVersion": ...}` the object must
        still have (Conflict otherwise). `dry_run`: validated and admitted, not done."""
        target = await self._target(kind, options.get("namespace"))
        return await self._delete(target, name, options)

    async def delete_object(self, obj: Any, **options: Unpack[DeleteOptions]) -> dict[str, Any]:
        """Delete the object `obj` names (by kind, namespace and name); `obj` is unchanged."""
        target, data = await self._target_of(obj, options.get("namespace"))
        name = (data.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("delete needs metadata.name")
        return await self._delete(target, name, options)

    def _delete_body(self, options: Mapping[str, Any]) -> bytes:
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        propagation_policy = options.get("propagation_policy")
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        grace_period_seconds = options.get("grace_period_seconds")
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        # A None value asks for no precondition on that field (controller-runtime's nil).
        preconditions = options.get("preconditions") or {}
        kept = {k: v for k, v in preconditions.items() if v is not None}
        if kept:
            body["preconditions"] = kept
        if options.get("dry_run"):
            body["dryRun"] = ["All"]
        return orjson.dumps(body)

    async def _delete(self, target: _Target, name: str, options: DeleteOptions) -> dict[str, Any]:
        reply = await self._send(
            "delete",
            target,
            name,
            "DELETE",
            target.resource.path(target.namespace, name),
            body=self._delete_body(options),
            content_type="application/json",
        )
        result: dict[str, Any] = reply.json() or {}
        if not options.get("dry_run"):
            if result.get("kind") == "Status":
                self._written(target, name, reply, deleted=True)
            elif (result.get("metadata") or {}).get("finalizers"):
                # Finalizers hold it: it is still there, marked for deletion.
                self._written(target, name, reply)
        return result

    async def delete_all_of(self, kind: KindLike, **options: Unpack[DeleteAllOfOptions]) -> None:
        """Delete every object of a kind in a namespace that matches the selectors."""
        target = await self._target(kind, options.get("namespace"))
        selector = options.get("label_selector")
        params = self._params(
            labelSelector=None if selector is None else str(selector),
            fieldSelector=options.get("field_selector"),
        )
        await self._send(
            "delete_all_of",
            target,
            None,
            "DELETE",
            target.resource.path(target.namespace),
            params=params,
            body=self._delete_body(options),
            content_type="application/json",
        )

    # subresources ---------------------------------------------------------------------------

    async def get_scale(
        self, kind: KindLike, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """The autoscaling/v1 Scale of an object."""
        return await self.get_subresource(kind, name, "scale", namespace=namespace)

    async def scale(
        self, kind: KindLike, name: str, replicas: int, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Set an object's replicas through its scale subresource; returns the new Scale."""
        target = await self._target(kind, namespace)
        path = target.resource.path(target.namespace, name, "scale")
        reply = await self._send(
            "scale",
            target,
            name,
            "PATCH",
            path,
            body=orjson.dumps({"spec": {"replicas": replicas}}),
            content_type=_PATCH_CONTENT_TYPES["merge"],
        )
        result: dict[str, Any] = reply.json()
        return result

    async def create_subresource(
        self,
        kind: KindLike,
        name: str,
        subresource: str,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """`POST <object>/<subresource>`: eviction, binding, token ..."""
        target = await self._target(kind, namespace)
        path = target.resource.path(target.namespace, name, subresource)
        reply = await self._send(
            f"create_{subresource}",
            target,
            name,
            "POST",
            path,
            body=orjson.dumps(body),
            content_type="application/json",
        )
        result: dict[str, Any] = reply.json() or {}
        return result

    async def logs(
        self,
        name: str,
        *,
        namespace: str | None = None,
        container: str | None = None,
        tail_lines: int | None = None,
    ) -> str:
        """A pod's log (not followed)."""
        target = await self._target("v1/Pod", namespace)
        path = target.resource.path(target.namespace, name, "log")
        params = self._params(container=container, tailLines=tail_lines)
        reply = await self._send(
            "logs", target, name, "GET", path, params=params, accept="text/plain"
        )
        return reply.body.decode(errors="replace")

    async def wait_established(self, crd_names: Sequence[str], timeout: float = 30.0) -> None:
        """Wait until each named CRD has the Established condition."""

        async def established(name: str) -> None:
            while True:
                crd = await self.get("apiextensions.k8s.io/v1/CustomResourceDefinition", name)
                for cond in (crd.get("status") or {}).get("conditions") or []:
                    if cond.get("type") == "Established" and cond.get("status") == "True":
                        self.discovery.invalidate()
                        return
                # The machine's time: waiting for the server to act, not for time to pass.
                await asyncio.sleep(0.05)

        await asyncio.wait_for(asyncio.gather(*(established(n) for n in crd_names)), timeout)


def _describe_call(call: str, target: _Target, name: str | None) -> str:
    """`update_status At default/web`: the call, the kind and the object (or namespace)."""
    kind = target.resource.kind
    if name:
        where = f"{target.namespace}/{name}" if target.namespace else name
        return f"{call} {kind} {where}"
    if target.namespace:
        return f"{call} {kind} in namespace {target.namespace}"
    return f"{call} {kind}"
