"""Requests to a subresource: each goes to the handler of its kind, with the admission
operation kube-apiserver gives it.

`status` and a CSR's `approval` are read and written as the object is (the write pipeline
keeps only their part of it); `scale` is `scale.py`; `log`, `binding` and `eviction` are
`pods.py`; `token` is TokenRequest (answered by `auth/`); `finalize` replaces a namespace's
`spec.finalizers`; exec, attach, port-forward and proxy are `connect.py`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kubeforge._apiserver.handlers.call import Admissions, Call, stored_object
from kubeforge._apiserver.handlers.connect import CONNECT_SUBRESOURCES, ConnectHandler
from kubeforge._apiserver.handlers.exchange import (
    answered,
    body,
    finish,
    json_response,
    patch_body,
    written,
)
from kubeforge._apiserver.handlers.patch import PatchHandler
from kubeforge._apiserver.handlers.pods import PodSubresources
from kubeforge._apiserver.handlers.scale import ScaleHandler
from kubeforge._apiserver.handlers.update import UpdateHandler
from kubeforge._apiserver.handlers.writes import Writes, Written, run_now
from kubeforge._apiserver.http.messages import Request, Response, ResponseStream, Upgraded
from kubeforge._apiserver.request.encoding import read_body
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.preconditions import body_version
from kubeforge._apiserver.storage.store import Store

__all__ = ["SubresourceHandler", "TokenRequests"]

# Issues a TokenRequest for a ServiceAccount once admitted: (call, body).
TokenRequests = Callable[[Call, Any], Awaitable[dict[str, Any]]]


class SubresourceHandler:
    """Answers every subresource a served type declares."""

    def __init__(
        self,
        store: Store,
        writes: Writes,
        codec: Codec,
        admission: Admissions,
        updates: UpdateHandler,
        patches: PatchHandler,
        scale: ScaleHandler,
        pods: PodSubresources,
        connect: ConnectHandler,
        token_request: TokenRequests,
    ) -> None:
        self.store = store
        self.writes = writes
        self.codec = codec
        self.admission = admission
        self.updates = updates
        self.patches = patches
        self.scale = scale
        self.pods = pods
        self.connect = connect
        self.token_request = token_request

    def handle(
        self, request: Request, call: Call
    ) -> Response | Awaitable[Response | ResponseStream | Upgraded]:
        """A request to a subresource, answered by the handler of its kind."""
        rt, info = call.rt, call.info
        name = info.subresource or ""
        sub = rt.subresource(name)
        if sub is None:
            raise StatusError.route_not_found()
        verb = {"watch": "get", "list": "get"}.get(info.verb, info.verb)
        if verb not in sub.verbs:
            raise StatusError.method_not_allowed()
        if name == "status" or name == "approval":
            if verb == "get":
                if rt.webhook_conversion is not None:
                    return answered(self.codec.answer(rt, stored_object(self.store, call)))
                return json_response(
                    200, self.codec.served_raw(rt, stored_object(self.store, call))
                )
            if verb == "update":
                decoded = body(request)
                call.admission = self.admission.begin(call, ("UPDATE",))
                return finish(call, self.updates.update(call, decoded))
            decoded = patch_body(request)
            call.admission = self.admission.begin(call, ("UPDATE",))
            ctype = request.headers.get("Content-Type", "")
            return finish(call, self.patches.patch(call, request.body, ctype, decoded))
        if name == "scale":
            if verb == "get":
                if rt.webhook_conversion is not None:
                    return answered(self.scale.get_scale(call))
                return json_response(200, run_now(self.scale.get_scale(call)))
            ctype = request.headers.get("Content-Type", "")
            if verb == "update":
                decoded, patch_type = read_body(request.body, ctype), None
            else:
                decoded, patch_type = patch_body(request), ctype
            call.admission = self.admission.begin(call, ("UPDATE",))
            return finish(call, written(200, self.scale.write_scale(call, decoded, patch_type)))
        if name == "log":
            return self.pods.log(request, call)
        if name == "binding":
            decoded = body(request)
            call.admission = self.admission.begin(call, ("CREATE",))
            return finish(call, written(201, self.pods.bind(call, decoded, call.name)))
        if name == "eviction":
            decoded = body(request)
            call.admission = self.admission.begin(call, ("CREATE",))
            return finish(call, written(201, self.pods.evict(call, decoded)))
        if name == "token":
            decoded = body(request)
            call.admission = self.admission.begin(call, ("CREATE",))
            return finish(call, written(201, self.token_request(call, decoded)))
        if name == "finalize":
            decoded = body(request)
            call.admission = self.admission.begin(call, ("UPDATE",))
            return finish(call, self.finalize_namespace(call, decoded))
        if name in ("ephemeralcontainers", "resize") and verb == "get":
            return json_response(200, self.codec.served_raw(rt, stored_object(self.store, call)))
        if name in CONNECT_SUBRESOURCES:
            return self.connect.connect(request, call)
        raise StatusError.method_not_allowed()

    async def finalize_namespace(self, call: Call, body: Any) -> Written:
        """PUT namespaces/<n>/finalize: replace spec.finalizers (the namespace controller's
        last step); the namespace goes once nothing holds it."""
        rt = call.rt
        if not isinstance(body, dict):
            raise StatusError.bad_request("the request body must be a Namespace")
        wanted = body_version(body, "Namespace")
        old = stored_object(self.store, call)
        obj = self.codec.served(rt, old)
        if wanted is not None:
            obj["metadata"]["resourceVersion"] = wanted  # held against the stored one
        finalizers = (body.get("spec") or {}).get("finalizers") or []
        obj.setdefault("spec", {})["finalizers"] = list(finalizers)
        if not finalizers:
            del obj["spec"]["finalizers"]
        return await self.writes.write_update(call, obj, old, track_fields=False)
