"""Which resource serves a kind: the server's discovery documents, cached per group-version.

A lookup that misses refreshes that group-version once (a CRD may have just been
established) before giving up with NoKindMatch.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from kubeforge._api.meta import GroupVersionKind
from kubeforge._client.errors import NotFound
from kubeforge._client.transport import Transport

__all__ = ["APIResource", "Discovery", "NoKindMatch"]


class NoKindMatch(LookupError):
    """The server serves no resource for this kind (yet)."""

    def __init__(self, gvk: GroupVersionKind) -> None:
        super().__init__(f'no matches for kind "{gvk.kind}" in version "{gvk.api_version}"')
        self.gvk = gvk


@dataclass(frozen=True, slots=True)
class APIResource:
    """A served resource: how to address objects of one kind."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    singular: str = ""
    verbs: frozenset[str] = field(default_factory=frozenset)
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = field(default_factory=frozenset)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gvk(self) -> GroupVersionKind:
        return GroupVersionKind(self.group, self.version, self.kind)

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path of the collection, or of one object (and its subresource)."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            prefix += f"/namespaces/{quote(namespace, safe='')}"
        path = f"{prefix}/{self.plural}"
        if name is not None:
            path += f"/{quote(name, safe='')}"
            if subresource:
                path += f"/{subresource}"
        return path


class Discovery:
    """The kind -> resource mapping of one server."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._by_gv: dict[tuple[str, str], dict[str, APIResource]] = {}
        self._fetching: dict[tuple[str, str], asyncio.Future[dict[str, APIResource]]] = {}

    def invalidate(self) -> None:
        """Forget everything learned (the next lookups fetch again)."""
        self._by_gv.clear()

    def remember(self, resource: APIResource) -> None:
        """Teach the mapping a resource (typed classes know their own plural and scope)."""
        self._by_gv.setdefault((resource.group, resource.version), {})[resource.kind] = resource

    async def resource_for(self, gvk: GroupVersionKind) -> APIResource:
        """The resource serving `gvk`; NoKindMatch when the server has none."""
        gv = (gvk.group, gvk.version)
        known = self._by_gv.get(gv)
        if known is not None and gvk.kind in known:
            return known[gvk.kind]
        fetched = await self._fetch(gv)
        found = fetched.get(gvk.kind)
        if found is None:
            raise NoKindMatch(gvk)
        return found

    async def _fetch(self, gv: tuple[str, str]) -> dict[str, APIResource]:
        # Concurrent misses for one group-version share a single request.
        pending = self._fetching.get(gv)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[dict[str, APIResource]] = asyncio.get_running_loop().create_future()
        self._fetching[gv] = future
        try:
            resources = await self._download(gv)
            self._by_gv[gv] = {**self._by_gv.get(gv, {}), **resources}
            future.set_result(self._by_gv[gv])
            return self._by_gv[gv]
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters get it through their own await
            raise
        finally:
            del self._fetching[gv]

    async def _download(self, gv: tuple[str, str]) -> dict[str, APIResource]:
        group, version = gv
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            doc = (await self.transport.request("GET", path)).json()
        except NotFound:
            return {}
        parents: dict[str, dict[str, Any]] = {}
        subresources: dict[str, set[str]] = {}
        for entry in doc.get("resources") or []:
            name = entry.get("name", "")
            if "/" in name:
                parent, _, sub = name.partition("/")
                subresources.setdefault(parent, set()).add(sub)
            else:
                parents[name] = entry
        out: dict[str, APIResource] = {}
        for name, entry in parents.items():
            kind = str(entry.get("kind", ""))
            out[kind] = APIResource(
                group=group,
                version=version,
                kind=kind,
                plural=name,
                namespaced=bool(entry.get("namespaced")),
                singular=str(entry.get("singularName") or kind.lower()),
                verbs=frozenset(_strings(entry.get("verbs"))),
                short_names=tuple(_strings(entry.get("shortNames"))),
                categories=tuple(_strings(entry.get("categories"))),
                subresources=frozenset(subresources.get(name, ())),
            )
        return out

    async def resources(self, group: str, version: str) -> list[APIResource]:
        """Every resource a group-version serves (none when the server does not serve it)."""
        return list((await self._fetch((group, version))).values())

    async def server_groups(self) -> list[tuple[str, str]]:
        """Every served (group, preferred version), the core group first."""
        out = [("", "v1")]
        doc = (await self.transport.request("GET", "/apis")).json()
        for group in doc.get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("version")
            if preferred:
                out.append((group["name"], preferred))
        return out


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []
