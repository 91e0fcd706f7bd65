"""The scale subresource: the autoscaling/v1 Scale view of an object with replicas, and
writes through it that change the parent object (k8s.io/apiserver's ScaleREST, as
pkg/registry/apps/deployment/storage/storage.go and apiextensions-apiserver's
customresource storage serve it; CRDs name the replica paths in `subresources.scale`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.selectors import selector_from_dict
from kubeforge._apiserver.handlers.call import Call, stored_object
from kubeforge._apiserver.handlers.patch import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH
from kubeforge._apiserver.handlers.writes import Writes
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.storage import patch as patching
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.preconditions import body_version
from kubeforge._apiserver.storage.store import Store
from kubeforge._apiserver.types.resource import ResourceType

__all__ = ["ScaleHandler"]


def _path_parts(path: str) -> list[str]:
    return [p for p in path.strip(".").split(".") if p]


def _get_path(obj: Any, path: str) -> Any:
    for part in _path_parts(path):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = _path_parts(path)
    for part in parts[:-1]:
        obj = obj.setdefault(part, {})
    obj[parts[-1]] = value


class ScaleHandler:
    """Reads and writes `/scale`."""

    def __init__(self, store: Store, writes: Writes, codec: Codec) -> None:
        self.store = store
        self.writes = writes
        self.codec = codec

    def scale_of(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """The autoscaling/v1 Scale view of an object."""
        paths = rt.scale
        assert paths is not None
        meta = obj["metadata"]
        selector: str | None = None
        if paths.label_selector:
            selector = _get_path(obj, paths.label_selector)
        if selector is None and isinstance((obj.get("spec") or {}).get("selector"), dict):
            selector = str(selector_from_dict(obj["spec"]["selector"]))
        status: dict[str, Any] = {"replicas": int(_get_path(obj, paths.status_replicas) or 0)}
        if selector:
            status["selector"] = selector
        scale_meta = {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        }
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": scale_meta,
            "spec": {"replicas": int(_get_path(obj, paths.spec_replicas) or 0)},
            "status": status,
        }

    async def get_scale(self, call: Call) -> dict[str, Any]:
        """The Scale of the object, read in the request's version (it never suspends for a
        type no conversion webhook converts)."""
        rt = call.rt
        return self.scale_of(rt, await self.codec.read_as(rt, stored_object(self.store, call)))

    async def write_scale(self, call: Call, body: Any, content_type: str | None) -> dict[str, Any]:
        """PUT or PATCH of /scale: change the replicas of the parent object. Admission sees
        the Scale, not the parent object."""
        rt = call.rt
        assert rt.scale is not None
        old = stored_object(self.store, call)
        obj = await self.codec.read_as(rt, old)
        current = self.scale_of(rt, obj)
        if content_type is None:
            scale = body
        else:
            ctype = content_type.split(";")[0].strip()
            try:
                if ctype == JSON_PATCH:
                    scale = patching.apply_json_patch(current, body)
                elif ctype in (MERGE_PATCH, STRATEGIC_PATCH):
                    scale = patching.apply_merge_patch(current, body)
                else:
                    raise StatusError.unsupported_media_type(ctype, (JSON_PATCH, MERGE_PATCH))
            except patching.PatchError:
                raise StatusError.unprocessable(
                    "the server rejected our request due to an error in our request"
                ) from None
        if not isinstance(scale, dict):
            raise StatusError.bad_request("the request body must be a Scale object")
        review = call.admission
        if review is not None:
            scale = await review.mutate("UPDATE", scale, current)
        wanted = body_version(scale, "Scale")
        spec = scale.get("spec")
        replicas = spec.get("replicas") if isinstance(spec, dict) else None
        strategic = (content_type or "").split(";")[0].strip() == STRATEGIC_PATCH
        replicas = _scale_replicas(replicas, converted=strategic)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise StatusError.invalid(
                "autoscaling",
                "Scale",
                call.name,
                [
                    FieldError.invalid(
                        "spec.replicas", replicas, "must be greater than or equal to 0"
                    )
                ],
            )
        _set_path(obj, rt.scale.spec_replicas, replicas)
        # As the registry does, the Scale's resourceVersion becomes the parent's, so the
        # update holds it against the stored object like any other.
        if wanted is not None:
            obj["metadata"]["resourceVersion"] = wanted
        if review is not None:
            await review.validate("UPDATE", self.scale_of(rt, obj), current)
            self.writes.still_current(call, call.name, old)
        _, result = await self.writes.write_update(replace(call, admission=None), obj, old)
        new = result if isinstance(result, dict) else orjson.loads(result)
        return self.scale_of(rt, new)


def _scale_replicas(value: Any, converted: bool) -> Any:
    """Scale.spec.replicas as Go fills its int32: from a body an integer literal in range
    only; from a strategic merge patch's result a whole-number float too (see
    types/builtin_schemas.py). Anything else numeric is a 400."""
    if converted and value.__class__ is float and value.is_integer():
        value = int(value)
    if value.__class__ is float or (value.__class__ is int and not -(2**31) <= value <= 2**31 - 1):
        raise StatusError.bad_request(
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
            f"number {value!r} into Go struct field ScaleSpec.spec.replicas of type int32"
        )
    return value
