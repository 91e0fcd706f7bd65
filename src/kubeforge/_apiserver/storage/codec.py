"""Stored objects in the version a request asks for, and objects in the version they are
stored in.

Objects of every served version of a resource share one storage. A built-in resource served
under two groups converts between its forms (`ResourceType.to_storage`, `from_storage`); a
CRD's objects are stored in the version that was its storage version when each was written,
and only apiVersion changes between versions unless a conversion webhook converts them
(`types/conversion.py`). The common case stays cheap: an object already stored in the version
asked for is answered with its stored bytes.

Objects a webhook converts are read in the request's version (`read_as`), written in the
storage version (`storage_form`) and answered in the request's version (`answer`), each a
call to the webhook when the versions differ.
"""

from __future__ import annotations

from typing import Any

import orjson

from kubeforge._apiserver.storage.listing import BatchConverter
from kubeforge._apiserver.storage.store import StoredObject
from kubeforge._apiserver.types.conversion import Conversions, invalid_source_version
from kubeforge._apiserver.types.resource import ResourceType

__all__ = ["Codec"]


class Codec:
    """Conversion between the served versions and the stored form of every type."""

    def __init__(self, conversions: Conversions) -> None:
        self.conversions = conversions

    def served(self, rt: ResourceType, stored: StoredObject) -> dict[str, Any]:
        """A private copy of a stored object, in the version `rt` serves (for types no
        conversion webhook converts; `read_as` converts any)."""
        obj = stored.thaw()
        return self.to_served(rt, obj)

    def to_served(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """An object of `rt`'s storage (the caller's to change) in `rt`'s version, for types
        no conversion webhook converts."""
        if rt.from_storage is not None:
            return rt.from_storage(obj)
        wanted = rt.api_version
        current = obj.get("apiVersion")
        if current != wanted:
            conversion = rt.conversion
            if conversion is not None and (
                conversion.webhook is not None or current not in conversion.api_versions
            ):
                if conversion.webhook is None:
                    raise invalid_source_version(str(current))
                raise RuntimeError(
                    f"{rt.qualified()} converts through a webhook: read it with read_as"
                )
            obj["apiVersion"] = wanted
        return obj

    async def read_as(self, rt: ResourceType, stored: StoredObject) -> dict[str, Any]:
        """A private copy of a stored object in the version `rt` serves, converted by its
        CRD's conversion webhook when it has one."""
        obj = stored.thaw()
        conversion = rt.webhook_conversion
        if conversion is None or obj.get("apiVersion") == rt.api_version:
            return self.to_served(rt, obj)
        converted = await self.conversions.convert(conversion, [obj], rt.version)
        return converted[0]

    async def read_all(
        self, rt: ResourceType, objects: list[StoredObject]
    ) -> list[bytes | dict[str, Any]]:
        """A list's items in `rt`'s version: the stored bytes of those already in it, the
        others converted (through the webhook in one review)."""
        conversion = rt.webhook_conversion
        if conversion is None:
            return [self.served_raw(rt, stored) for stored in objects]
        wanted = rt.api_version
        pending = [s.thaw() for s in objects if s.api_version != wanted]
        converted = iter(
            await self.conversions.convert(conversion, pending, rt.version, listing=True)
        )
        return [
            stored.raw if stored.api_version == wanted else next(converted) for stored in objects
        ]

    def converter(self, rt: ResourceType) -> BatchConverter:
        """Stored objects to `rt`'s version, those stored in another version converted by
        the CRD's webhook in one review."""

        async def convert(objects: list[StoredObject]) -> list[dict[str, Any]]:
            out = await self.read_all(rt, objects)
            return [orjson.loads(o) if isinstance(o, bytes) else o for o in out]

        return convert

    async def answer(self, rt: ResourceType, stored: StoredObject) -> bytes | dict[str, Any]:
        """`served_raw` for any type: what a write or read answers with."""
        if rt.webhook_conversion is None or stored.api_version == rt.api_version:
            return self.served_raw(rt, stored)
        return await self.read_as(rt, stored)

    async def storage_form(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """`obj` (the caller's to change) in the version it is stored in."""
        conversion = rt.webhook_conversion
        if conversion is None:
            return self.to_storage(rt, obj)
        converted = await self.conversions.convert(conversion, [obj], conversion.storage)
        return converted[0]

    async def read_object_as(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """An object of `rt`'s storage (the caller's to change) in `rt`'s version."""
        conversion = rt.webhook_conversion
        if conversion is None:
            return self.to_served(rt, obj)
        return (await self.conversions.convert(conversion, [obj], rt.version))[0]

    def served_raw(self, rt: ResourceType, stored: StoredObject) -> bytes | dict[str, Any]:
        """The stored bytes when they already are in the served version, else a converted copy."""
        if self.serves_as_stored(rt, stored):
            return stored.raw
        return self.served(rt, stored)

    def serves_as_stored(self, rt: ResourceType, stored: StoredObject) -> bool:
        """Whether `rt` serves the object as it is stored, nothing converted."""
        return rt.from_storage is None and stored.api_version == rt.api_version

    def to_storage(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """An object of `rt` (the caller's to change) in the form it is stored in, for types
        no conversion webhook converts."""
        if rt.to_storage is not None:
            return rt.to_storage(obj)
        if rt.is_crd and rt.storage_version and rt.storage_version != rt.version:
            obj["apiVersion"] = f"{rt.group}/{rt.storage_version}"
        return obj
