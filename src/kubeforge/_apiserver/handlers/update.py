"""PUT of an object or its status: the body replaces the object (k8s.io/apiserver
pkg/endpoints/handlers/update.go); the rest of the update is the write pipeline's."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from kubeforge._apiserver.handlers.call import Admissions, Call, stored_object
from kubeforge._apiserver.handlers.exchange import body, finish
from kubeforge._apiserver.handlers.writes import Writes, Written
from kubeforge._apiserver.http.messages import Request, Response
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.storage.store import Store

__all__ = ["UpdateHandler"]


class UpdateHandler:
    """Answers update (main resource and the status-like subresources)."""

    def __init__(self, store: Store, writes: Writes, admission: Admissions) -> None:
        self.store = store
        self.writes = writes
        self.admission = admission

    def handle(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        """PUT of an object."""
        decoded = body(request)
        call.admission = self.admission.begin(call, ("UPDATE",))
        return finish(call, self.update(call, decoded))

    async def update(self, call: Call, body: Any) -> Written:
        """PUT an object (main resource or /status)."""
        writes = self.writes
        rt = call.rt
        obj = writes.check_type_meta(rt, body)
        meta = obj["metadata"]
        if meta.get("name") and meta["name"] != call.name:
            raise StatusError.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({call.name})"
            )
        meta["name"] = call.name
        writes.check_namespace(call, obj)
        old = stored_object(self.store, call)
        # Its resourceVersion is held against the stored one with every update's, in
        # write_update.
        writes.decode(call, obj)
        return await writes.write_update(call, obj, old)
