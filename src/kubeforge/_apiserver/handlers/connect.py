"""exec, attach, port-forward and proxy: connections through the API server to a container
or a port (k8s.io/apiserver pkg/endpoints/handlers/rest.go, ConnectResource).

kube-apiserver admits them as CONNECT before it connects anything, then hands them to the
node's kubelet, which this server does not have. They are refused with 400, as kube-apiserver
refuses a connection to a pod it cannot reach (no node assigned); client-go reads the Status
of a failed upgrade (SPDY and WebSocket alike) and kubectl prints it.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubeforge._apiserver.handlers.call import Admissions, Call, stored_object
from kubeforge._apiserver.handlers.exchange import finish
from kubeforge._apiserver.handlers.writes import Written
from kubeforge._apiserver.http.server import Request, Response
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.storage.store import Store

__all__ = ["CONNECT_SUBRESOURCES", "ConnectHandler"]

# The connecting subresources, and how a refusal names what was asked.
CONNECT_SUBRESOURCES = {
    "exec": "exec (kubectl exec and cp)",
    "attach": "attach (kubectl attach)",
    "portforward": "port forwarding (kubectl port-forward)",
    "proxy": "proxying",
}


class ConnectHandler:
    """Admits connections, then refuses them."""

    def __init__(self, store: Store, admission: Admissions) -> None:
        self.store = store
        self.admission = admission

    def connect(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        """Admit a connection as CONNECT, then refuse it (400)."""
        stored_object(self.store, call)  # a missing object is still a 404
        if "dryRun" in call.query:
            raise StatusError.bad_request("dryRun is not supported")
        call.admission = self.admission.begin(call, ("CONNECT",))
        if call.admission is None:
            raise _unsupported(call)
        return finish(call, self._admitted(request, call))

    async def _admitted(self, request: Request, call: Call) -> Written:
        assert call.admission is not None
        await call.admission.connect(_options(call, request))
        raise _unsupported(call)


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
