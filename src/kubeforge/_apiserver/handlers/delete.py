"""DELETE of an object or a collection (k8s.io/apiserver pkg/endpoints/handlers/delete.go).

The options come from the body when it has one, else from the query
(`request/deleteoptions.py`); the deletion itself, with its finalizers and grace period, is
the write pipeline's. A collection's objects are deleted one by one, each admitted without a
name.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import orjson

from kubeforge._apiserver.handlers.call import Admissions, Call, stored_object
from kubeforge._apiserver.handlers.exchange import body, finish
from kubeforge._apiserver.handlers.writes import Writes, Written
from kubeforge._apiserver.http.messages import Request, Response
from kubeforge._apiserver.request.deleteoptions import (
    decode_delete_options,
    delete_options_from_query,
)
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.listing import (
    ListOptions,
    Selection,
    list_converted,
    list_objects,
)
from kubeforge._apiserver.storage.store import Store

__all__ = ["DeleteHandler"]


class DeleteHandler:
    """Answers delete and deletecollection."""

    def __init__(self, store: Store, writes: Writes, codec: Codec, admission: Admissions) -> None:
        self.store = store
        self.writes = writes
        self.codec = codec
        self.admission = admission

    def delete(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        """DELETE an object: at once, or mark it deleting while finalizers remain."""
        options = self._options(request, call)
        call.admission = self.admission.begin(call, ("DELETE",))
        return finish(call, self._delete(call, options))

    async def _delete(self, call: Call, options: dict[str, Any]) -> Written:
        return await self.writes.delete_stored(call, stored_object(self.store, call), options)

    def delete_collection(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        """DELETE of a collection: every object its selectors select."""
        call.admission = self.admission.begin(call, ("DELETE",))
        return finish(call, self._delete_items(request, call))

    async def _delete_items(self, request: Request, call: Call) -> Written:
        rt = call.rt
        options = self._options(request, call)
        selection = Selection.parse(rt, call.query)
        everything = ListOptions(0, None, None, False)
        if rt.webhook_conversion is not None and not selection.version_invariant:
            result, _ = await list_converted(
                self.store, rt, call.info.namespace, selection, everything, self.codec.converter(rt)
            )
        else:
            result = list_objects(self.store, rt, call.info.namespace, selection, everything)
        deleted: list[Any] = []
        for stored in result.items:
            ns, name = stored.key
            info = RequestInfo(rt.group, rt.version, ns or None, rt.plural, name, None, "delete")
            item_call = Call(info, rt, call.query, call.user_agent, call.warnings, call.user)
            if call.admission is not None:
                # Each deletion is admitted, without a name, as upstream's collection delete.
                item_call.admission = self.admission.begin(item_call, ("DELETE",), name="")
            current = self.store.get(rt.group_resource, ns, name)
            if current is None:
                continue
            _, out = await self.writes.delete_stored(item_call, current, options)
            deleted.append(orjson.loads(out) if isinstance(out, bytes) else out)
        items = [d for d in deleted if d.get("kind") != "Status"]
        answer = {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(self.store.revision)},
            "items": items,
        }
        return 200, answer

    @staticmethod
    def _options(request: Request, call: Call) -> dict[str, Any]:
        """The request's DeleteOptions: from its body, or from its query when it has none
        (as kube-apiserver reads them); the dry run they ask for becomes the call's."""
        if request.body.strip():
            options = decode_delete_options(body(request))
        else:
            options = delete_options_from_query(request.query)
        query = {k: v for k, v in call.query.items() if k != "dryRun"}
        if options.get("dryRun"):
            query["dryRun"] = "All"
        call.query = query
        return options
