"""PATCH of an object or its status: JSON, merge and strategic merge patches, and server-side
apply (k8s.io/apiserver pkg/endpoints/handlers/patch.go).

A patch applies to the object in the request's version and its result is decoded as a body
is, then updated through the write pipeline. An apply merges the manager's applied
configuration into the live object with field ownership (`storage/managedfields.py`), and
creates the object when there is none.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._apiserver.handlers.call import Admissions, Call, stored_object
from kubeforge._apiserver.handlers.exchange import finish, patch_body
from kubeforge._apiserver.handlers.writes import Writes, Written
from kubeforge._apiserver.http.messages import Request, Response
from kubeforge._apiserver.request import nesting
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.queryparams import query_flag
from kubeforge._apiserver.storage import managedfields, patch, preconditions
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.store import Store
from kubeforge._apiserver.types.builtin_schemas import CONVERTED_INTEGERS, STRICT_INTEGERS
from kubeforge._apiserver.types.typesupport import TypeSupport

__all__ = [
    "APPLY_PATCH",
    "BUILTIN_PATCH_TYPES",
    "CUSTOM_PATCH_TYPES",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_PATCH",
    "PatchHandler",
]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
CUSTOM_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)
BUILTIN_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)

_PATCH_REJECTED = "the server rejected our request due to an error in our request"


class PatchHandler:
    """Answers patch (main resource and the status-like subresources)."""

    def __init__(
        self, store: Store, writes: Writes, codec: Codec, types: TypeSupport, admission: Admissions
    ) -> None:
        self.store = store
        self.writes = writes
        self.codec = codec
        self.types = types
        self.admission = admission

    def handle(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        """PATCH of an object (apply patches may create it)."""
        decoded = patch_body(request)
        # A server-side apply may create the object.
        call.admission = self.admission.begin(call, ("CREATE", "UPDATE"))
        return finish(
            call, self.patch(call, request.body, request.headers.get("Content-Type", ""), decoded)
        )

    async def patch(self, call: Call, body: bytes, content_type: str, decoded: Any) -> Written:
        """PATCH an object with a JSON, merge, strategic merge or apply patch."""
        writes = self.writes
        rt = call.rt
        ctype = content_type.split(";")[0].strip().lower()
        allowed = CUSTOM_PATCH_TYPES if rt.is_crd else BUILTIN_PATCH_TYPES
        if ctype not in allowed:
            raise StatusError.unsupported_media_type(ctype, allowed)
        if ctype != APPLY_PATCH and call.query.get("force") not in (None, ""):
            raise StatusError.unprocessable(
                'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified '
                "for non-apply patch"
            )
        if ctype == APPLY_PATCH:
            return await self.apply(call, decoded)
        old = stored_object(self.store, call)
        # The patch applies to the object in the request's version.
        current = await self.codec.read_as(rt, old)
        try:
            if ctype == JSON_PATCH:
                patched = patch.apply_json_patch(current, decoded)
            elif ctype == MERGE_PATCH:
                if not isinstance(decoded, dict):
                    raise StatusError.bad_request("a merge patch must be a JSON object")
                # Both are this request's own copies: the patch goes into the object.
                patched = patch.merge_patch_into(current, decoded)
            else:
                if not isinstance(decoded, dict):
                    raise StatusError.bad_request("a strategic merge patch must be a JSON object")
                patched = patch.apply_strategic_merge_patch(current, decoded, self.types.view(rt))
        except patch.PatchTooLarge as exc:
            raise StatusError.too_large(str(exc)) from None
        except patch.PatchError as exc:
            if ctype == JSON_PATCH and exc.code == 422:
                # As upstream answers a JSON patch that fails to apply: a generic message,
                # the reason in the one cause.
                cause = {"reason": "UnexpectedServerResponse", "message": str(exc)}
                raise StatusError(422, "Invalid", _PATCH_REJECTED, {"causes": [cause]}) from None
            if exc.code == 422:
                raise StatusError.unprocessable(str(exc)) from None
            raise StatusError.bad_request(str(exc)) from None
        # Shallow pieces can build a deep result (a JSON patch copying into itself). A merge
        # patch cannot: each path of its result is the stored object's or the patch's, and
        # both were checked.
        if ctype != MERGE_PATCH:
            nesting.check_object(rt.group, rt.kind, call.name, patched)
        obj = writes.check_type_meta(rt, patched, patched)
        meta = obj["metadata"]
        if meta.get("name") != call.name:
            raise StatusError.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the "
                f"URL ({call.name})"
            )
        # JSON and merge patches keep the number literals they carry, so the result is
        # decoded as a body is; a strategic merge patch's result is converted from maps.
        # What a merge patch leaves of an object read as stored is as decoding left it: only
        # what the patch brought is decoded (a built-in object's fields; a custom object's
        # schema prunes it whole).
        as_stored = ctype == MERGE_PATCH and self.codec.serves_as_stored(rt, old)
        writes.decode(
            call,
            obj,
            "json patch " if ctype == JSON_PATCH else "",
            CONVERTED_INTEGERS if ctype == STRATEGIC_PATCH else STRICT_INTEGERS,
            decoded if as_stored else None,
        )
        return await writes.write_update(call, obj, old)

    async def apply(self, call: Call, applied: Any) -> Written:
        """Server-side apply: create the object or merge the manager's intent into it."""
        writes = self.writes
        rt = call.rt
        manager = call.query.get("fieldManager")
        if not manager:
            raise StatusError.unprocessable(
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                "required for apply patch"
            )
        force = query_flag(call.query, "force")
        if not isinstance(applied, dict):
            raise StatusError.bad_request("an apply patch must be a YAML or JSON object")
        if applied.get("apiVersion") != rt.api_version or applied.get("kind") != rt.kind:
            raise StatusError.bad_request(
                f"the API version and kind in the data ({applied.get('apiVersion')}, "
                f"{applied.get('kind')}) do not match the expected ({rt.api_version}, {rt.kind})"
            )
        meta = applied.get("metadata")
        if not isinstance(meta, dict) or meta.get("name") != call.name:
            raise StatusError.bad_request(
                "the name of the object in the apply patch must match the name on the URL"
            )
        applied = writes.check_type_meta(rt, applied)
        # The applied resourceVersion is a precondition, whatever part of the object the
        # apply may change (a status apply merges nothing else).
        wanted = preconditions.requested_version(applied["metadata"])
        writes.check_namespace(call, applied)
        # The intent is pruned but not defaulted: defaults are not the manager's to own.
        call.report_unknown_fields(self.types.prune(rt, applied, integers=CONVERTED_INTEGERS))
        old = self.store.get(rt.group_resource, call.namespace, call.name)
        live = None if old is None else await self.codec.read_as(rt, old)
        try:
            result = managedfields.server_side_apply(
                live,
                applied,
                manager,
                force,
                self.types.view(rt),
                rt.api_version,
                call.info.subresource,
                now_rfc3339(),
                # The main resource never writes status when there is a status subresource.
                ignored=("status",) if rt.has_status and not call.info.subresource else None,
            )
        except managedfields.ApplyConflict as exc:
            raise StatusError(409, "Conflict", str(exc), {"causes": exc.causes}) from None
        except managedfields.ApplyError as exc:
            raise StatusError.bad_request(str(exc)) from None
        nesting.check_object(rt.group, rt.kind, call.name, result)
        result = writes.check_type_meta(rt, result)
        if wanted is not None:
            # write_update holds it against the stored one (a new object ignores it).
            result["metadata"]["resourceVersion"] = wanted
        writes.decode(call, result, integers=CONVERTED_INTEGERS)
        if old is None:
            if call.info.subresource:
                raise StatusError.not_found(rt.group, rt.plural, call.name)
            writes.namespace_lifecycle(call)
            if call.admission is not None:
                result = await call.admission.mutate("CREATE", result, None)
            # The registry's update that creates reads the version (which must parse) and
            # then ignores it: storage only refuses one on a plain create.
            preconditions.check_parsable(result["metadata"])
            managed = result["metadata"].get("managedFields")
            writes.prepare_create(call, result)
            if managed is not None:
                result["metadata"]["managedFields"] = managed
            writes.validate(call, result, None)
            if call.admission is not None:
                await call.admission.validate("CREATE", result, None)
                writes.still_current(call, call.name, None)
            if rt.webhook_conversion is not None:
                stored_form = await self.codec.storage_form(rt, patch.json_copy(result))
                writes.still_current(call, call.name, None)
            if call.dry_run:
                return 201, result
            result["metadata"].pop("resourceVersion", None)
            if rt.webhook_conversion is None:
                stored = writes.commit_create(call, result)
                return 201, self.codec.served_raw(rt, stored)
            stored = writes.commit_create(call, stored_form)
            return 201, await self.codec.answer(rt, stored)
        return await writes.write_update(call, result, old, track_fields=False)
