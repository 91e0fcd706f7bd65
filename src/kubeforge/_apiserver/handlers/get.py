"""GET of one object or a collection: the object, a list page, or their Table or
PartialObjectMetadata view (k8s.io/apiserver pkg/endpoints/handlers/get.go).

Objects already stored in the version asked for are answered with their stored bytes; a
list's items are joined without decoding them. Objects a CRD's conversion webhook converts
are read in the version asked for, a list page's in one review.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import orjson

from kubeforge._apiserver.handlers.call import Call, stored_object
from kubeforge._apiserver.handlers.exchange import (
    include_object,
    json_response,
    negotiated,
    partial,
)
from kubeforge._apiserver.http.messages import Request, Response
from kubeforge._apiserver.printing.tables import to_table
from kubeforge._apiserver.request.encoding import Negotiated
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.componentstatuses import ComponentStatuses
from kubeforge._apiserver.storage.listing import (
    ListOptions,
    ListResult,
    Selection,
    list_converted,
    list_objects,
)
from kubeforge._apiserver.storage.store import Revisions, StoredObject

__all__ = ["ReadHandler"]


class ReadHandler:
    """Answers get and list."""

    def __init__(self, store: Revisions, codec: Codec, components: ComponentStatuses) -> None:
        self.store = store
        self.codec = codec
        self.components = components

    def get(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        """GET of one object."""
        rt = call.rt
        answer = negotiated(request, {"Table", "PartialObjectMetadata"})
        stored = stored_object(self.store, call)
        if (
            rt.webhook_conversion is not None
            and stored.api_version != rt.api_version
            and answer.as_kind != "PartialObjectMetadata"
        ):
            # Metadata-only reads are answered from the stored object, whatever its version.
            return self._get_converted(call, answer, stored)
        if answer.as_kind == "Table":
            table = to_table(
                rt,
                [self.codec.served(rt, stored)],
                include_object=include_object(call),
                table_version=answer.version or "v1",
                resource_version=str(stored.rv),
            )
            return json_response(200, table, call.warnings)
        if answer.as_kind == "PartialObjectMetadata":
            return json_response(200, partial(stored.obj, answer.version), call.warnings)
        return json_response(200, self.codec.served_raw(rt, stored), call.warnings, answer.format)

    async def _get_converted(
        self, call: Call, answer: Negotiated, stored: StoredObject
    ) -> Response:
        """A get of an object its CRD's webhook converts to the version asked for."""
        rt = call.rt
        obj = await self.codec.read_as(rt, stored)
        if answer.as_kind == "Table":
            table = to_table(
                rt,
                [obj],
                include_object=include_object(call),
                table_version=answer.version or "v1",
                resource_version=str(stored.rv),
            )
            return json_response(200, table, call.warnings)
        return json_response(200, obj, call.warnings, answer.format)

    def list(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        """GET of a collection: one page of it."""
        rt = call.rt
        answer = negotiated(request, {"Table", "PartialObjectMetadataList"})
        selection = Selection.parse(rt, call.query)
        options = ListOptions.parse(call.query)
        if rt.webhook_conversion is not None and answer.as_kind != "PartialObjectMetadataList":
            return self._list_converted(call, answer, selection, options)
        result = list_objects(self.store, rt, call.info.namespace, selection, options)
        if answer.as_kind == "Table":
            objects = [self.codec.served(rt, s) for s in result.items]
            return _list_table(call, answer, result, objects)
        meta = _list_meta(result)
        if answer.as_kind == "PartialObjectMetadataList":
            version = answer.version or "v1"
            doc = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": f"meta.k8s.io/{version}",
                "metadata": meta,
                "items": [partial(s.obj, version) for s in result.items],
            }
            return json_response(200, doc, call.warnings)
        items: list[bytes] = []
        for stored in result.items:
            served = self.codec.served_raw(rt, stored)
            items.append(served if isinstance(served, bytes) else orjson.dumps(served))
        head = orjson.dumps({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta})
        body = head[:-1] + b',"items":[' + b",".join(items) + b"]}"
        return json_response(200, body, call.warnings, answer.format)

    async def _list_converted(
        self, call: Call, answer: Negotiated, selection: Selection, options: ListOptions
    ) -> Response:
        """A list of objects a CRD's webhook converts: the page's objects stored in another
        version converted in one review (selectors read them in the version asked for)."""
        rt = call.rt
        result, items = await list_converted(
            self.store, rt, call.info.namespace, selection, options, self.codec.converter(rt)
        )
        if answer.as_kind == "Table":
            return _list_table(call, answer, result, items)
        meta = _list_meta(result)
        doc = {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": items}
        return json_response(200, doc, call.warnings, answer.format)

    def computed(self, request: Request, call: Call) -> Response:
        """A get or list of objects worked out when asked (ComponentStatuses)."""
        rt = call.rt
        answer = negotiated(request, {"Table"})
        if call.info.name is not None:
            objects = [self.components.get(call.info.name)]
        else:
            objects = self.components.list(Selection.parse(rt, call.query))
        if answer.as_kind == "Table":
            table = to_table(rt, objects, include_object=include_object(call))
            return json_response(200, table, call.warnings)
        if call.info.name is not None:
            return json_response(200, objects[0], call.warnings, answer.format)
        doc = {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": {}, "items": objects}
        return json_response(200, doc, call.warnings, answer.format)


def _list_meta(result: ListResult) -> dict[str, Any]:
    """A list's ListMeta: its resourceVersion, and where the next page starts."""
    meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        meta["continue"] = result.continue_token
        if result.remaining is not None:
            meta["remainingItemCount"] = result.remaining
    return meta


def _list_table(
    call: Call, answer: Negotiated, result: ListResult, objects: list[dict[str, Any]]
) -> Response:
    """A list page as a Table."""
    table = to_table(
        call.rt,
        objects,
        include_object=include_object(call),
        table_version=answer.version or "v1",
        resource_version=str(result.resource_version),
        continue_token=result.continue_token,
        remaining=result.remaining,
    )
    return json_response(200, table, call.warnings)
