"""The pod subresources a server without a kubelet can answer: `log` (from a `LogSource`;
a development cluster's simulated nodes provide one), `binding` (what a scheduler does) and
`eviction` (a deletion its PodDisruptionBudget allows: eviction.py), as
pkg/registry/core/pod/storage/storage.go and eviction.go answer them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from kubeforge._api.machinery.fielderror import FieldError
from kubeforge._api.machinery.timestamps import now_rfc3339
from kubeforge._apiserver.handlers.call import Call, stored_object
from kubeforge._apiserver.handlers.eviction import Evictions
from kubeforge._apiserver.handlers.writes import Writes
from kubeforge._apiserver.http.messages import Request, ResponseStream
from kubeforge._apiserver.request.errors import StatusError
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
        """Assign a pod to a node (what a scheduler does through pods/binding).

        As BindingREST does (pkg/registry/core/pod/storage/storage.go,
        setPodNodeAndMetadata): a storage update of the pod, not a pod update: the node
        name, the Binding's annotations and the PodScheduled=True condition go in, and
        neither pod validation nor field ownership runs (no managedFields entry names the
        binding)."""
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
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            raise StatusError.conflict(
                "", "pods", pod_name, "pod is being deleted, cannot be assigned to a host"
            )
        spec = pod.setdefault("spec", {})
        current = spec.get("nodeName")
        if current:
            raise StatusError.conflict(
                "", "pods", pod_name, f'pod {pod_name} is already assigned to node "{current}"'
            )
        if spec.get("schedulingGates"):
            raise StatusError.conflict(
                "", "pods", pod_name, f"pod {pod_name} has non-empty .spec.schedulingGates"
            )
        if review is not None:
            await review.validate("CREATE", body, None)
            if self.store.get(pods.group_resource, call.namespace, pod_name) is not stored:
                raise StatusError.stale("", "pods", pod_name)
        if wanted is not None and wanted != meta.get("resourceVersion"):
            # The Binding's resourceVersion is a precondition on the pod, as upstream's.
            raise StatusError.stale("", "pods", pod_name)
        spec["nodeName"] = node
        annotations = (body.get("metadata") or {}).get("annotations")
        if isinstance(annotations, dict) and annotations:
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
        _scheduled(pod.setdefault("status", {}))
        if not call.dry_run:
            self.writes.commits.update(pods, self.codec.to_storage(pods, pod), stored)
        return _success()

    async def evict(self, call: Call, body: Any) -> dict[str, Any]:
        """Evict a pod, as its PodDisruptionBudget allows (eviction.py)."""
        return await self.evictions.evict(call, body)


def _typed(body: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """A request body as its typed decoder leaves it: with its apiVersion and kind."""
    return {**body, "apiVersion": api_version, "kind": kind}


def _scheduled(status: dict[str, Any]) -> None:
    """Set PodScheduled=True as the pod utilities' UpdatePodCondition sets a condition: the
    transition time kept while the status stays, reason and message cleared."""
    conditions = [dict(c) for c in status.get("conditions") or ()]
    found = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
    since = now_rfc3339()
    if found is not None and found.get("status") == "True" and found.get("lastTransitionTime"):
        since = found["lastTransitionTime"]
    condition = {
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": since,
    }
    if found is None:
        conditions.append(condition)
    else:
        conditions[conditions.index(found)] = condition
    status["conditions"] = conditions


def _success() -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
