"""Subresources other than status: scale, pod log/binding/eviction and namespace
finalization (tokens and the review APIs are answered by `auth/`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any, Protocol

import orjson

from kubeforge.api.machinery.fielderror import FieldError
from kubeforge.api.machinery.selectors import selector_from_dict
from kubeforge.apiserver import patch as patching
from kubeforge.apiserver.call import Call
from kubeforge.apiserver.deleteoptions import decode_delete_options
from kubeforge.apiserver.errors import StatusError
from kubeforge.apiserver.metadecoding import MetadataDecodeError, decode_object_meta
from kubeforge.apiserver.preconditions import requested_version
from kubeforge.apiserver.queryparams import query_flag
from kubeforge.apiserver.requestinfo import RequestInfo
from kubeforge.apiserver.resource import ResourceType
from kubeforge.apiserver.rest import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, Rest

__all__ = ["LogRequest", "LogSource", "NoLogs", "Subresources"]


@dataclass(frozen=True)
class LogRequest:
    """What `GET pods/<name>/log` asks for."""

    namespace: str
    pod: str
    container: str
    follow: bool = False
    tail_lines: int | None = None
    since_seconds: int | None = None
    timestamps: bool = False
    previous: bool = False
    limit_bytes: int | None = None


class LogSource(Protocol):
    """Where container output comes from (the dev cluster's simulated kubelet provides one)."""

    def stream(self, request: LogRequest) -> AsyncIterator[bytes]:
        """The log, chunk by chunk; with `follow` it ends when the container does."""


class NoLogs:
    """The log source of a bare API server: no container ever ran, so logs are empty."""

    async def stream(self, request: LogRequest) -> AsyncIterator[bytes]:
        nothing: tuple[bytes, ...] = ()
        for chunk in nothing:
            yield chunk


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


class Subresources:
    """Handlers for the subresources a ResourceType declares."""

    def __init__(self, rest: Rest, logs: LogSource) -> None:
        self.rest = rest
        self.logs = logs

    # scale ------------------------------------------------------------------------------

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
        return self.scale_of(rt, await self.rest.read_as(rt, self.rest.get(call)))

    async def write_scale(self, call: Call, body: Any, content_type: str | None) -> dict[str, Any]:
        """PUT or PATCH of /scale: change the replicas of the parent object. Admission sees
        the Scale, not the parent object."""
        rt = call.rt
        assert rt.scale is not None
        old = self.rest.get(call)
        obj = await self.rest.read_as(rt, old)
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
        wanted = _requested_version(scale, "Scale")
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
            self.rest.still_current(call, call.name, old)
        _, result = await self.rest.write_update(replace(call, admission=None), obj, old)
        new = result if isinstance(result, dict) else orjson.loads(result)
        return self.scale_of(rt, new)

    # pods -------------------------------------------------------------------------------

    def log_request(self, call: Call) -> LogRequest:
        """Check the container choice of a log request as the server does."""
        pod = self.rest.served(call.rt, self.rest.get(call))
        containers = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
        init = [c.get("name", "") for c in (pod.get("spec") or {}).get("initContainers") or []]
        container: str = call.query.get("container") or ""
        if not container:
            default = (pod["metadata"].get("annotations") or {}).get(
                "kubectl.kubernetes.io/default-container"
            )
            if default is not None and default in containers:
                container = default
            elif len(containers) == 1:
                container = containers[0]
            else:
                names = " ".join(containers)
                raise StatusError.bad_request(
                    f"a container name must be specified for pod {call.name}, choose one of: "
                    f"[{names}]"
                )
        if container not in containers and container not in init:
            raise StatusError.bad_request(f"container {container} is not valid for pod {call.name}")
        q = call.query

        def number(key: str) -> int | None:
            text = q.get(key)
            if not text:
                return None
            try:
                return int(text)
            except ValueError:
                raise StatusError.bad_request(f"invalid {key}: {text}") from None

        return LogRequest(
            namespace=call.namespace,
            pod=call.name,
            container=container,
            follow=query_flag(q, "follow"),
            tail_lines=number("tailLines"),
            since_seconds=number("sinceSeconds"),
            timestamps=query_flag(q, "timestamps"),
            previous=query_flag(q, "previous"),
            limit_bytes=number("limitBytes"),
        )

    async def bind(self, call: Call, body: Any, pod_name: str) -> dict[str, Any]:
        """Assign a pod to a node (what a scheduler does through pods/binding)."""
        if not isinstance(body, dict):
            raise StatusError.bad_request("the request body must be a Binding")
        review = call.admission
        if review is not None:
            body = await review.mutate("CREATE", _typed(body, "v1", "Binding"), None)
        wanted = _requested_version(body, "Binding")
        target = body.get("target") or {}
        node = target.get("name")
        if not node:
            raise StatusError.invalid("", "Binding", pod_name, [FieldError.required("target.name")])
        pods = self.rest.registry.get("", "v1", "pods")
        assert pods is not None
        stored = self.rest.store.get(pods.group_resource, call.namespace, pod_name)
        if stored is None:
            raise StatusError.not_found("", "pods", pod_name)
        pod = self.rest.served(pods, stored)
        if pod["metadata"].get("deletionTimestamp"):
            raise StatusError.conflict(
                "", "pods", pod_name, "pod is being deleted, cannot be assigned to a host"
            )
        current = (pod.get("spec") or {}).get("nodeName")
        if current:
            raise StatusError.conflict(
                "", "pods", pod_name, f'pod {pod_name} is already assigned to node "{current}"'
            )
        if review is not None:
            await review.validate("CREATE", body, None)
            if self.rest.store.get(pods.group_resource, call.namespace, pod_name) is not stored:
                raise StatusError.stale("", "pods", pod_name)
        pod.setdefault("spec", {})["nodeName"] = node
        if wanted is not None:
            # The Binding's resourceVersion is a precondition on the pod, as upstream's.
            pod["metadata"]["resourceVersion"] = wanted
        pod_call = Call(
            _with_name(call, pod_name), pods, call.query, call.user_agent, call.warnings, call.user
        )
        await self.rest.write_update(pod_call, pod, stored)
        return _success()

    async def evict(self, call: Call, body: Any) -> dict[str, Any]:
        """Evict a pod: delete it with the eviction's delete options (admission sees the
        Eviction; the deletion itself is not admitted again, as upstream)."""
        review = call.admission
        if review is not None and isinstance(body, dict):
            body = await review.mutate("CREATE", _typed(body, "policy/v1", "Eviction"), None)
            await review.validate("CREATE", body, None)
        given = body.get("deleteOptions") if isinstance(body, dict) else None
        options = {} if given is None else decode_delete_options(given)
        await self.rest.delete(replace(call, admission=None), options)
        return _success()

    async def finalize_namespace(self, call: Call, body: Any) -> tuple[int, bytes | dict[str, Any]]:
        """PUT namespaces/<n>/finalize: replace spec.finalizers (the namespace controller's
        last step); the namespace goes once nothing holds it."""
        rt = call.rt
        if not isinstance(body, dict):
            raise StatusError.bad_request("the request body must be a Namespace")
        wanted = _requested_version(body, "Namespace")
        old = self.rest.get(call)
        obj = self.rest.served(rt, old)
        if wanted is not None:
            obj["metadata"]["resourceVersion"] = wanted  # held against the stored one
        finalizers = (body.get("spec") or {}).get("finalizers") or []
        obj.setdefault("spec", {})["finalizers"] = list(finalizers)
        if not finalizers:
            del obj["spec"]["finalizers"]
        return await self.rest.write_update(call, obj, old, track_fields=False)


def _scale_replicas(value: Any, converted: bool) -> Any:
    """Scale.spec.replicas as Go fills its int32: from a body an integer literal in range
    only; from a strategic merge patch's result a whole-number float too (see
    builtin_schemas.py). Anything else numeric is a 400."""
    if converted and value.__class__ is float and value.is_integer():
        value = int(value)
    if value.__class__ is float or (value.__class__ is int and not -(2**31) <= value <= 2**31 - 1):
        raise StatusError.bad_request(
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
            f"number {value!r} into Go struct field ScaleSpec.spec.replicas of type int32"
        )
    return value


def _requested_version(body: dict[str, Any], kind: str) -> str | None:
    """The resourceVersion a subresource body asks for, its metadata decoded as the typed
    server decodes it (a wrong JSON type is a 400)."""
    try:
        meta = decode_object_meta(body.get("metadata"), kind)
    except MetadataDecodeError as exc:
        raise StatusError.bad_request(
            f'{kind} in version "v1" cannot be handled as a {kind}: {exc.detail}'
        ) from None
    return requested_version(meta)


def _typed(body: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """A request body as its typed decoder leaves it: with its apiVersion and kind."""
    return {**body, "apiVersion": api_version, "kind": kind}


def _success() -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _with_name(call: Call, name: str) -> RequestInfo:
    return replace(call.info, resource="pods", name=name, subresource="binding")
