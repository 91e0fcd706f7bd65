"""The pod subresources a server without a kubelet can answer: `log` (from a `LogSource`;
a development cluster's simulated nodes provide one), `binding` (what a scheduler does) and
`eviction` (a deletion its PodDisruptionBudget allows: eviction.py), as
pkg/registry/core/pod/storage/storage.go and eviction.go answer them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._apiserver.handlers.call import Call, stored_object
from kubeforge._apiserver.handlers.eviction import Evictions
from kubeforge._apiserver.handlers.writes import Writes
from kubeforge._apiserver.http.messages import Request, ResponseStream
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.request.queryparams import query_flag
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.preconditions import body_version
from kubeforge._apiserver.storage.store import Store
from kubeforge._apiserver.types.registry import Registry

__all__ = ["LogRequest", "LogSource", "NoLogs", "PodSubresources"]


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


class PodSubresources:
    """Answers `pods/log`, `pods/binding` (and the `bindings` resource) and `pods/eviction`."""

    def __init__(
        self, store: Store, registry: Registry, writes: Writes, codec: Codec, logs: LogSource
    ) -> None:
        self.store = store
        self.registry = registry
        self.writes = writes
        self.codec = codec
        self.logs = logs
        self.evictions = Evictions(store, registry, writes, codec)

    def log_request(self, call: Call) -> LogRequest:
        """Check the container choice of a log request as the server does."""
        pod = self.codec.served(call.rt, stored_object(self.store, call))
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

    async def log(self, request: Request, call: Call) -> ResponseStream:
        """Stream a container's log (until it ends, when following)."""
        log_request = self.log_request(call)
        stream = request.stream(200, {"Content-Type": "text/plain", "Audit-Id": call.audit_id})
        try:
            async for chunk in self.logs.stream(log_request):
                await stream.write(chunk)
            await stream.finish()
        except ConnectionResetError:
            pass  # the client stopped following the log
        return stream

    async def bind(self, call: Call, body: Any, pod_name: str) -> dict[str, Any]:
        """Assign a pod to a node (what a scheduler does through pods/binding)."""
        if not isinstance(body, dict):
            raise StatusError.bad_request("the request body must be a Binding")
        review = call.admission
        if review is not None:
            body = await review.mutate("CREATE", _typed(body, "v1", "Binding"), None)
        wanted = body_version(body, "Binding")
        target = body.get("target") or {}
        node = target.get("name")
        if not node:
            raise StatusError.invalid("", "Binding", pod_name, [FieldError.required("target.name")])
        pods = self.registry.get("", "v1", "pods")
        assert pods is not None
        stored = self.store.get(pods.group_resource, call.namespace, pod_name)
        if stored is None:
            raise StatusError.not_found("", "pods", pod_name)
        pod = self.codec.served(pods, stored)
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
            if self.store.get(pods.group_resource, call.namespace, pod_name) is not stored:
                raise StatusError.stale("", "pods", pod_name)
        pod.setdefault("spec", {})["nodeName"] = node
        if wanted is not None:
            # The Binding's resourceVersion is a precondition on the pod, as upstream's.
            pod["metadata"]["resourceVersion"] = wanted
        pod_call = Call(
            _with_name(call, pod_name), pods, call.query, call.user_agent, call.warnings, call.user
        )
        await self.writes.write_update(pod_call, pod, stored)
        return _success()

    async def evict(self, call: Call, body: Any) -> dict[str, Any]:
        """Evict a pod, as its PodDisruptionBudget allows (eviction.py)."""
        return await self.evictions.evict(call, body)


def _typed(body: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """A request body as its typed decoder leaves it: with its apiVersion and kind."""
    return {**body, "apiVersion": api_version, "kind": kind}


def _success() -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _with_name(call: Call, name: str) -> RequestInfo:
    return replace(call.info, resource="pods", name=name, subresource="binding")
