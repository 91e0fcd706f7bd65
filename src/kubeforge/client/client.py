"""The Kubernetes client: read and write objects of any kind, typed or as plain dicts.

A kind is given as a typed resource class (objects come back as instances of it), as a
`GroupVersionKind`, or as the string `"<apiVersion>/<Kind>"` (`"apps/v1/Deployment"`;
objects come back as dicts). Objects to write are typed instances or dicts carrying
`apiVersion` and `kind`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Generic, Literal, TypeVar, overload

import orjson

from kubeforge.api.meta import GroupVersionKind, ResourceInfo, gvk_of
from kubeforge.client.config import ClusterConfig, load_config
from kubeforge.client.discovery import APIResource, Discovery
from kubeforge.client.transport import RequestObserver, Transport
from kubeforge.client.watch import BOOKMARK, WatchEvent, watch_events

__all__ = ["Client", "KindLike", "ObjectList", "PatchType"]

T = TypeVar("T")
KindLike = type[Any] | GroupVersionKind | str
PatchType = Literal["merge", "json", "strategic", "apply"]

_PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
DEFAULT_PAGE_SIZE = 500


@dataclass
class ObjectList(Generic[T]):
    """The answer to a list: items and the revision they are consistent at."""

    items: list[T]
    resource_version: str
    continue_token: str | None = None
    remaining_item_count: int | None = None
    kind: str = ""

    def __iter__(self) -> Any:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class _Target:
    resource: APIResource
    typed: type[Any] | None
    namespace: str | None
    extra: dict[str, Any] = field(default_factory=dict)


def _info_of(kind: Any) -> ResourceInfo | None:
    info = getattr(kind, "__kubeforge__", None)
    return info if isinstance(info, ResourceInfo) else None


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

    def _params(
        self,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
        **extra: Any,
    ) -> dict[str, str]:
        params: dict[str, str] = {}
        if dry_run:
            params["dryRun"] = "All"
        manager = field_manager or self.field_manager
        if manager:
            params["fieldManager"] = manager
        if field_validation:
            params["fieldValidation"] = field_validation
        for key, value in extra.items():
            if value is not None:
                params[key] = str(value).lower() if isinstance(value, bool) else str(value)
        return params

    # reads ----------------------------------------------------------------------------------

    @overload
    async def get(self, kind: type[T], name: str, *, namespace: str | None = None) -> T: ...
    @overload
    async def get(
        self, kind: GroupVersionKind | str, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def get(self, kind: KindLike, name: str, *, namespace: str | None = None) -> Any:
        """One object by name; NotFound when it does not exist."""
        target = await self._target(kind, namespace)
        path = target.resource.path(target.namespace, name)
        return self._wrap(target, (await self.transport.request("GET", path)).json())

    async def get_subresource(
        self, kind: KindLike, name: str, subresource: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """`GET <object>/<subresource>` (status, scale ...), as a dict."""
        target = await self._target(kind, namespace)
        path = target.resource.path(target.namespace, name, subresource)
        result: dict[str, Any] = (await self.transport.request("GET", path)).json()
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
    ) -> ObjectList[Any]:
        """One page of a list (use `continue_token` for the next one)."""
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
        doc = (await self.transport.request("GET", path, params=params)).json()
        meta = doc.get("metadata") or {}
        items = doc.get("items") or []
        api_version = target.resource.api_version
        for item in items:
            # List items omit their own kind; fill it in as clients do.
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", target.resource.kind)
        wrapped = [self._wrap(target, item) for item in items] if target.typed else items
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
            )
            yield page
            token = page.continue_token
            if not token:
                return

    @overload
    async def list(
        self,
        kind: type[T],
        *,
        namespace: str | None = ...,
        label_selector: str | None = ...,
        field_selector: str | None = ...,
        page_size: int = ...,
        all_namespaces: bool = ...,
    ) -> ObjectList[T]: ...
    @overload
    async def list(
        self,
        kind: GroupVersionKind | str,
        *,
        namespace: str | None = ...,
        label_selector: str | None = ...,
        field_selector: str | None = ...,
        page_size: int = ...,
        all_namespaces: bool = ...,
    ) -> ObjectList[dict[str, Any]]: ...

    async def list(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        all_namespaces: bool = False,
    ) -> ObjectList[Any]:
        """Every object of a kind in a namespace (or all namespaces), fetched page by page."""
        items: list[Any] = []
        first: ObjectList[Any] | None = None
        async for page in self.list_pages(
            kind,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            page_size=page_size,
            all_namespaces=all_namespaces,
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
    ) -> AsyncIterator[WatchEvent]:
        """Changes to objects of a kind, from `resource_version` (or the current state).

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
        async for event in watch_events(self.transport, path, params, idle_timeout=idle_timeout):
            if target.typed is not None and event.type != BOOKMARK:
                yield WatchEvent(event.type, self._wrap(target, event.object))
            else:
                yield event

    # writes ---------------------------------------------------------------------------------

    async def create(
        self,
        obj: T,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T:
        """Create an object; returns it as stored (AlreadyExists when the name is taken)."""
        target, data = await self._target_of(obj, namespace)
        path = target.resource.path(target.namespace)
        params = self._params(dry_run, field_manager, field_validation)
        reply = await self.transport.request(
            "POST", path, params=params, body=orjson.dumps(data), content_type="application/json"
        )
        result: T = self._wrap(target, reply.json())
        return result

    async def update(
        self,
        obj: T,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> T:
        """Replace an object (Conflict when its resourceVersion is stale)."""
        target, data = await self._target_of(obj, None)
        name = (data.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("update needs metadata.name")
        path = target.resource.path(target.namespace, name, subresource)
        params = self._params(dry_run, field_manager, field_validation)
        reply = await self.transport.request(
            "PUT", path, params=params, body=orjson.dumps(data), content_type="application/json"
        )
        result: T = self._wrap(target, reply.json())
        return result

    async def update_status(self, obj: T, **options: Any) -> T:
        """Replace an object's status through its status subresource."""
        return await self.update(obj, subresource="status", **options)

    @overload
    async def patch(
        self,
        kind: type[T],
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = ...,
        namespace: str | None = ...,
        subresource: str | None = ...,
        dry_run: bool = ...,
        field_manager: str | None = ...,
        force: bool | None = ...,
        field_validation: str | None = ...,
    ) -> T: ...
    @overload
    async def patch(
        self,
        kind: GroupVersionKind | str,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = ...,
        namespace: str | None = ...,
        subresource: str | None = ...,
        dry_run: bool = ...,
        field_manager: str | None = ...,
        force: bool | None = ...,
        field_validation: str | None = ...,
    ) -> dict[str, Any]: ...

    async def patch(
        self,
        kind: KindLike,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> Any:
        """Patch an object: `merge` (RFC 7386), `json` (RFC 6902), `strategic` (built-ins),
        or `apply` (server-side apply; prefer `apply()`)."""
        target = await self._target(kind, namespace)
        path = target.resource.path(target.namespace, name, subresource)
        params = self._params(dry_run, field_manager, field_validation, force=force)
        body = patch if isinstance(patch, bytes) else orjson.dumps(patch)
        reply = await self.transport.request(
            "PATCH", path, params=params, body=body, content_type=_PATCH_CONTENT_TYPES[patch_type]
        )
        return self._wrap(target, reply.json())

    async def patch_status(self, kind: KindLike, name: str, patch: Any, **options: Any) -> Any:
        """Patch an object's status subresource (merge patch unless `patch_type` says)."""
        return await self.patch(kind, name, patch, subresource="status", **options)

    async def apply(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> T:
        """Server-side apply: make the object match `obj` for the fields this manager owns.

        Creates the object when it does not exist. A field another manager owns with a
        different value raises Conflict unless `force`.
        """
        target, data = await self._target_of(obj, None)
        name = (data.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("apply needs metadata.name")
        manager = field_manager or self.field_manager or "kubeforge"
        path = target.resource.path(target.namespace, name, subresource)
        params = self._params(dry_run, manager, None, force=force)
        reply = await self.transport.request(
            "PATCH",
            path,
            params=params,
            body=orjson.dumps(data),
            content_type=_PATCH_CONTENT_TYPES["apply"],
        )
        result: T = self._wrap(target, reply.json())
        return result

    async def apply_status(self, obj: T, **options: Any) -> T:
        """Server-side apply of an object's status."""
        return await self.apply(obj, subresource="status", **options)

    async def delete(
        self,
        kind: KindLike,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: Literal["Background", "Foreground", "Orphan"] | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete an object; returns the server's answer (the object while finalizers hold
        it, or a Status). NotFound when it does not exist."""
        target = await self._target(kind, namespace)
        path = target.resource.path(target.namespace, name)
        return await self._delete(
            path, propagation_policy, grace_period_seconds, preconditions, dry_run
        )

    async def delete_object(self, obj: Any, **options: Any) -> dict[str, Any]:
        """Delete the object `obj` names (by kind, namespace and name)."""
        target, data = await self._target_of(obj, None)
        name = (data.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("delete needs metadata.name")
        path = target.resource.path(target.namespace, name)
        return await self._delete(
            path,
            options.get("propagation_policy"),
            options.get("grace_period_seconds"),
            options.get("preconditions"),
            bool(options.get("dry_run")),
        )

    async def _delete(
        self,
        path: str,
        propagation_policy: str | None,
        grace_period_seconds: int | None,
        preconditions: Mapping[str, str] | None,
        dry_run: bool,
        params: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if dry_run:
            options["dryRun"] = ["All"]
        reply = await self.transport.request(
            "DELETE",
            path,
            params=params,
            body=orjson.dumps(options),
            content_type="application/json",
        )
        result: dict[str, Any] = reply.json() or {}
        return result

    async def delete_all_of(
        self,
        kind: KindLike,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: Literal["Background", "Foreground", "Orphan"] | None = None,
        dry_run: bool = False,
    ) -> None:
        """Delete every object of a kind in a namespace that matches the selectors."""
        target = await self._target(kind, namespace)
        params = self._params(labelSelector=label_selector, fieldSelector=field_selector)
        await self._delete(
            target.resource.path(target.namespace),
            propagation_policy,
            None,
            None,
            dry_run,
            params,
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
        reply = await self.transport.request(
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
        reply = await self.transport.request(
            "POST", path, body=orjson.dumps(body), content_type="application/json"
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
        reply = await self.transport.request("GET", path, params=params, accept="text/plain")
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
                await asyncio.sleep(0.05)

        await asyncio.wait_for(asyncio.gather(*(established(n) for n in crd_names)), timeout)
