"""exec, attach, port-forward and proxy: connections through the API server to a container
or a port (k8s.io/apiserver pkg/endpoints/handlers/rest.go, ConnectResource;
pkg/registry/core/pod/rest/subresources.go and strategy.go for pods).

kube-apiserver admits them as CONNECT, checks the pod and container, and hands them to the
node's kubelet. Here the node is a `StreamingRuntime` the server was given (a development
cluster's simulated nodes); the server speaks the client's streaming protocol itself
(`streaming/`). A server without one refuses them with 400 before anything is upgraded, as
kube-apiserver refuses a connection to a pod it cannot reach; client-go reads the Status of
a failed upgrade (SPDY and WebSocket alike) and kubectl prints it. `proxy` is refused so too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubeforge._apiserver.handlers.call import Admissions, Call, stored_object
from kubeforge._apiserver.http.messages import Request, Response, Upgraded
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.request.user import UserInfo
from kubeforge._apiserver.storage.store import Store
from kubeforge._apiserver.streaming import portforward, remotecommand
from kubeforge._apiserver.streaming.bytestream import IDLE_TIMEOUT
from kubeforge._apiserver.streaming.runtime import (
    ContainerRef,
    ProcessStreams,
    StreamingRuntime,
    StreamRefused,
)
from kubeforge._apiserver.streaming.websocket import (
    WebSocket,
    handshake_headers,
    is_websocket,
    offered_protocols,
)

__all__ = ["CONNECT_SUBRESOURCES", "Authorizer", "ConnectHandler"]

# The connecting subresources, and how a refusal names what was asked.
CONNECT_SUBRESOURCES = {
    "exec": "exec (kubectl exec and cp)",
    "attach": "attach (kubectl attach)",
    "portforward": "port forwarding (kubectl port-forward)",
    "proxy": "proxying",
}
_STREAMING = frozenset({"exec", "attach", "portforward"})
# Authorizes a request as `info` says (raising Forbidden): the server's authorizer.
Authorizer = Callable[[UserInfo, RequestInfo], None]


class ConnectHandler:
    """Admits connections, and runs them on the node's runtime when there is one."""

    def __init__(
        self,
        store: Store,
        admission: Admissions,
        authorize: Authorizer,
        runtime: StreamingRuntime | None = None,
    ) -> None:
        self.store = store
        self.admission = admission
        self.authorize = authorize
        self.runtime = runtime

    def connect(self, request: Request, call: Call) -> Awaitable[Response | Upgraded]:
        """Admit a connection as CONNECT, then run it (or refuse it with 400)."""
        stored_object(self.store, call)  # a missing object is still a 404
        if "dryRun" in call.query:
            raise StatusError.bad_request("dryRun is not supported")
        sub = call.info.subresource or ""
        if sub in _STREAMING and call.info.verb != "create":
            self._authorize_create(call)
        call.admission = self.admission.begin(call, ("CONNECT",))
        return self._admitted(request, call)

    def _authorize_create(self, call: Call) -> None:
        """A WebSocket upgrade is a GET, authorized as `get`; the user must also be allowed
        to `create` the subresource, as SPDY's POST asks (pkg/registry/core/pod/rest/
        authorize.go, the AuthorizePodWebsocketUpgradeCreatePermission check)."""
        self.authorize(call.user, replace(call.info, verb="create"))

    async def _admitted(self, request: Request, call: Call) -> Response | Upgraded:
        if call.admission is not None:
            await call.admission.connect(_options(call, request))
        sub = call.info.subresource or ""
        runtime = self.runtime
        if runtime is None or sub not in _STREAMING:
            raise _unsupported(call)
        pod = stored_object(self.store, call).obj
        query = parse_qs(urlsplit(request.target).query, keep_blank_values=True)
        spec = pod.get("spec") or {}
        node = str(spec.get("nodeName") or "")
        container = "" if sub == "portforward" else _container(pod, call.name, query)
        if not node:
            raise StatusError.bad_request(f"pod {call.name} does not have a host assigned")
        meta = pod["metadata"]
        target = ContainerRef(
            call.namespace, call.name, str(meta.get("uid") or ""), node, container
        )
        if sub == "portforward":
            return await self._port_forward(request, runtime, target, query)
        if sub == "exec":
            command = query.get("command") or []
            if not command:
                raise StatusError.bad_request(
                    "you must specify at least one command for the container"
                )
            options = remotecommand.StreamOptions.from_query(query)

            async def run(streams: ProcessStreams) -> int | None:
                return await runtime.exec(target, command, streams)

        else:
            # The terminal is the container's: whether it runs under one was decided when
            # it started (the kubelet's GetAttach).
            declared: Mapping[str, Any] = next(
                (c for c in spec.get("containers") or () if c.get("name") == container), {}
            )
            options = remotecommand.StreamOptions.from_query(
                query, terminal=bool(declared.get("tty"))
            )

            async def run(streams: ProcessStreams) -> int | None:
                await runtime.attach(target, streams)
                return None

        if is_websocket(request.headers):
            protocol = _choose(
                offered_protocols(request.headers), remotecommand.WEBSOCKET_PROTOCOLS
            )
            headers = handshake_headers(request.headers, protocol)
            _check(runtime, target, sub)
            upgraded = request.upgrade(headers)
            await remotecommand.serve_websocket(upgraded, protocol, options, run)
            return upgraded
        protocol = _spdy_protocol(request.headers, remotecommand.SPDY_PROTOCOLS)
        _check(runtime, target, sub)
        upgraded = request.upgrade(_spdy_headers(protocol))
        await remotecommand.serve_spdy(upgraded, protocol, options, run)
        return upgraded

    async def _port_forward(
        self,
        request: Request,
        runtime: StreamingRuntime,
        target: ContainerRef,
        query: Mapping[str, list[str]],
    ) -> Response | Upgraded:
        async def connect(port: int) -> Any:
            return await runtime.port_forward(target, port)

        def describe(port: int, exc: BaseException) -> str:
            return f"error forwarding port {port} to pod {target.pod}, uid {target.uid}: {exc}"

        if is_websocket(request.headers):
            offered = offered_protocols(request.headers)
            if portforward.TUNNEL_PROTOCOL in offered:
                headers = handshake_headers(request.headers, portforward.TUNNEL_PROTOCOL)
                _check(runtime, target, "portforward")
                upgraded = request.upgrade(headers)
                tunnel = portforward.TunnelStream(WebSocket(upgraded, IDLE_TIMEOUT))
                await portforward.serve_spdy(tunnel, connect, describe)
                return upgraded
            ports = portforward.parse_ports(query)
            protocol = _choose(offered, portforward.WEBSOCKET_PROTOCOLS)
            headers = handshake_headers(request.headers, protocol)
            _check(runtime, target, "portforward")
            upgraded = request.upgrade(headers)
            await portforward.serve_websocket(upgraded, protocol, ports, connect, describe)
            return upgraded
        protocol = _spdy_protocol(request.headers, (portforward.SPDY_PROTOCOL,))
        _check(runtime, target, "portforward")
        upgraded = request.upgrade(_spdy_headers(protocol))
        await portforward.serve_spdy(upgraded, connect, describe)
        return upgraded


def _check(runtime: StreamingRuntime, target: ContainerRef, subresource: str) -> None:
    """Ask the node before switching protocols, so a refusal is still an HTTP answer."""
    try:
        runtime.check(target, subresource)
    except StreamRefused as exc:
        raise StatusError(exc.code, exc.reason, exc.message) from None


def _container(pod: Mapping[str, Any], name: str, query: Mapping[str, list[str]]) -> str:
    """The container a request names, or the pod's only one (strategy.go validateContainer)."""
    spec = pod.get("spec") or {}
    kinds = ("containers", "initContainers", "ephemeralContainers")
    names = [str(c.get("name") or "") for kind in kinds for c in spec.get(kind) or ()]
    asked = (query.get("container") or [""])[0]
    if asked:
        if asked not in names:
            raise StatusError.bad_request(f"container {asked} is not valid for pod {name}")
        return asked
    containers = spec.get("containers") or []
    if len(containers) == 1:
        return str(containers[0].get("name") or "")
    if not containers:
        raise StatusError.bad_request(f"a container name must be specified for pod {name}")
    listed = " ".join(names)
    raise StatusError.bad_request(
        f"a container name must be specified for pod {name}, choose one of: [{listed}]"
    )


def _choose(offered: list[str], served: tuple[str, ...]) -> str:
    """The first protocol the client offers that is served ("" when it offers none), as
    wsstream's handshake picks it; none in common is refused."""
    if not offered:
        return ""
    for protocol in offered:
        if protocol in served:
            return protocol
    raise StatusError.bad_request(
        f"requested protocol(s) are not supported: [{' '.join(offered)}]; "
        f"supports [{' '.join(p for p in served if p)}]"
    )


def _spdy_protocol(headers: Mapping[str, str], served: tuple[str, ...]) -> str:
    """The protocol a SPDY upgrade negotiates (httpstream.Handshake), or a refusal; a
    request that upgrades to nothing this server speaks is refused as kube refuses a
    connect request that does not upgrade."""
    upgrade = str(headers.get("Upgrade", "")).lower()
    if "spdy/3.1" not in upgrade:
        raise StatusError.bad_request("Upgrade request required")
    text = str(headers.get("X-Stream-Protocol-Version", ""))
    offered = [p.strip() for p in text.split(",") if p.strip()]
    if not offered:
        raise StatusError.bad_request("unable to upgrade: X-Stream-Protocol-Version is required")
    for protocol in offered:
        if protocol in served:
            return protocol
    error = StatusError(
        403,
        "Forbidden",
        f"unable to upgrade: unable to negotiate protocol: client supports "
        f"[{' '.join(offered)}], server accepts [{' '.join(served)}]",
    )
    error.headers["X-Accepted-Stream-Protocol-Versions"] = ", ".join(served)
    raise error


def _spdy_headers(protocol: str) -> dict[str, str]:
    return {"Connection": "Upgrade", "Upgrade": "SPDY/3.1", "X-Stream-Protocol-Version": protocol}


def _unsupported(call: Call) -> StatusError:
    what = CONNECT_SUBRESOURCES[call.info.subresource or ""]
    return StatusError.bad_request(
        f'{call.rt.plural} "{call.name}": {what} is not supported: this API server has no '
        "kubelet or container runtime behind it to connect to"
    )


def _options(call: Call, request: Request) -> dict[str, Any]:
    """The options object of a CONNECT request, as its typed query decoding leaves it."""
    sub = call.info.subresource or ""
    described = call.rt.subresource(sub)
    kind = described.kind if described is not None else ""
    query = parse_qs(urlsplit(request.target).query)
    options: dict[str, Any] = {"kind": kind, "apiVersion": "v1"}
    if sub in ("exec", "attach"):
        for flag in ("stdin", "stdout", "stderr", "tty"):
            if query.get(flag, [""])[0] in ("true", "1"):
                options[flag] = True
        if query.get("container"):
            options["container"] = query["container"][0]
        if sub == "exec" and query.get("command"):
            options["command"] = query["command"]
    elif sub == "portforward":
        ports = [int(p) for p in query.get("ports", []) if p.isdigit()]
        if ports:
            options["ports"] = ports
    else:
        path = query.get("path", [""])[0]
        if path:
            options["path"] = path
    return options
