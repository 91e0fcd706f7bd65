"""Every request's way to the stage that answers it.

The HTTP layer (`http/`) hands each request here. Health probes, `/version`, `/metrics`,
discovery (`discovery/documents.py`), OpenAPI (`discovery/openapi.py`, `openapiv2.py`) and
the ServiceAccount issuer documents are answered at once; a resource request is
authenticated and authorized (`auth/`), counted (`request/metrics.py`), and given as a
`Call` to the handler of its verb (`handlers/`). Every answer carries an Audit-Id, and a
failure of the server itself is logged and answered without its internals.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import orjson

from kubeforge._apiserver.auth import Auth
from kubeforge._apiserver.auth.openidmetadata import (
    CACHE_CONTROL,
    CONFIGURATION_PATH,
    JWKS_CONTENT_TYPE,
    JWKS_PATH,
    OpenIDMetadata,
)
from kubeforge._apiserver.config import ServerConfig
from kubeforge._apiserver.discovery.documents import (
    aggregated,
    api_group,
    api_group_list,
    api_resource_list,
    api_versions,
)
from kubeforge._apiserver.discovery.openapi import OpenAPIV3
from kubeforge._apiserver.discovery.openapiv2 import OpenAPIV2
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.create import CreateHandler
from kubeforge._apiserver.handlers.delete import DeleteHandler
from kubeforge._apiserver.handlers.exchange import LINE, json_response, status_response
from kubeforge._apiserver.handlers.get import ReadHandler
from kubeforge._apiserver.handlers.patch import PatchHandler
from kubeforge._apiserver.handlers.subresources import SubresourceHandler
from kubeforge._apiserver.handlers.update import UpdateHandler
from kubeforge._apiserver.handlers.watch import WatchStreams
from kubeforge._apiserver.http.messages import Request, Response, ResponseStream, Upgraded
from kubeforge._apiserver.request.encoding import negotiate, parse_accept
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.request.info import RequestInfo, parse_request_path
from kubeforge._apiserver.request.metrics import (
    CONTENT_TYPE as METRICS_CONTENT_TYPE,
    RequestMetrics,
)
from kubeforge._apiserver.request.queryparams import query_flag
from kubeforge._apiserver.request.user import UserInfo
from kubeforge._apiserver.storage.objectmeta import new_uid
from kubeforge._apiserver.types.registry import Registry

__all__ = ["Answer", "RequestFaults", "Route", "Router"]

log = logging.getLogger("kubeforge.apiserver")

_PROBES = frozenset({"/healthz", "/livez", "/readyz"})
_DISCOVERY_V2 = "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
# What a failure of the server itself answers: never the exception, which may show internals.
_INTERNAL_MESSAGE = (
    "the server could not handle this request; its log has the details under Audit-Id {audit_id}"
)

Answer = Response | Awaitable[Response | ResponseStream | Upgraded]
Route = Callable[[Request, Call], Answer]


class RequestFaults(Protocol):
    """What a test puts in front of the resource handlers to fail, delay or record requests
    (kubeforge.testing's ServerFaults): given each resource request that reached its
    handler (authenticated, authorized, routed), and that handler."""

    def __call__(self, request: Request, call: Call, handler: Route) -> Answer:
        """The answer: `handler(request, call)`'s, or one of the fault's own."""


class Router:
    """Routes each request to what answers it."""

    def __init__(
        self,
        *,
        config: ServerConfig,
        registry: Registry,
        auth: Auth,
        metrics: RequestMetrics,
        openapi: OpenAPIV3,
        openapi_v2: OpenAPIV2,
        reads: ReadHandler,
        watches: WatchStreams,
        creates: CreateHandler,
        updates: UpdateHandler,
        patches: PatchHandler,
        deletes: DeleteHandler,
        subresources: SubresourceHandler,
    ) -> None:
        self.config = config
        self.registry = registry
        self.auth = auth
        self.metrics = metrics
        self.openapi = openapi
        self.openapi_v2 = openapi_v2
        self.reads = reads
        self.subresources = subresources
        # The issuer discovery documents, rendered once the port is known (APIServer.start).
        self.openid: OpenIDMetadata | None = None
        # Set only while a test injects faults: the one check a request pays without them.
        self.faults: RequestFaults | None = None
        self._verbs: dict[str, Callable[[Request, Call], Answer]] = {
            "get": reads.get,
            "list": reads.list,
            "watch": watches.watch,
            "create": creates.handle,
            "update": updates.handle,
            "patch": patches.handle,
            "delete": deletes.delete,
            "deletecollection": deletes.delete_collection,
        }

    def handle(self, request: Request) -> Answer:
        """Answer a request at once, or return what streams the answer (watch, logs).

        Every answer carries an Audit-Id, as kube-apiserver's do: the client's own, or a
        fresh one, which is also what the log names when the request fails.
        """
        audit_id = _audit_id(request)
        try:
            result = self._dispatch(request, audit_id)
        except StatusError as exc:
            result = status_response(exc)
        except Exception:
            result = self._internal_error(request, audit_id)
        if isinstance(result, Response):
            result.headers.append(("Audit-Id", audit_id))
            return result
        return self._streaming(request, audit_id, result)

    async def _streaming(
        self,
        request: Request,
        audit_id: str,
        pending: Awaitable[Response | ResponseStream | Upgraded],
    ) -> Response | ResponseStream | Upgraded:
        # Streams check their options before they start, so an error is still an answer
        # (a stream's own headers carry the Audit-Id: see WatchStreams.serve, PodSubresources.log).
        try:
            result = await pending
        except StatusError as exc:
            result = status_response(exc)
        except Exception:
            result = self._internal_error(request, audit_id)
        if isinstance(result, Response):
            result.headers.append(("Audit-Id", audit_id))
        return result

    def _internal_error(self, request: Request, audit_id: str) -> Response:
        """A failure of the server itself: the log gets the traceback, the client an answer
        that says where to look and nothing of the server's internals."""
        log.exception("%s %s failed (Audit-Id %s)", request.method, request.path, audit_id)
        return status_response(StatusError.internal(_INTERNAL_MESSAGE.format(audit_id=audit_id)))

    def error_response(self, code: int, message: str) -> Response:
        """The answer to a request the HTTP layer refused (or failed) before routing it."""
        audit_id = new_uid()
        if code == 413:
            response = status_response(StatusError.too_large(message))
        elif code == 400:
            response = status_response(StatusError.bad_request(message))
        elif code == 408:
            response = status_response(StatusError.request_timeout(message))
        elif code == 429:
            response = status_response(StatusError.too_many_requests(message))
        else:
            log.error("the HTTP layer answered %d (Audit-Id %s): %s", code, audit_id, message)
            response = status_response(
                StatusError.internal(_INTERNAL_MESSAGE.format(audit_id=audit_id))
            )
        response.headers.append(("Audit-Id", audit_id))
        return response

    def _dispatch(self, request: Request, audit_id: str) -> Answer:
        raw_path = request.path
        path = raw_path.rstrip("/") or "/"
        user = self.auth.authenticate(request.headers, request.peer_certificate, path)
        query: Mapping[str, str] = request.query
        watch_param = query_flag(query, "watch")
        info = parse_request_path(request.method, path, watch_param)
        self.auth.authorize(user, request.method, raw_path, info, query)
        if path in _PROBES or path.startswith(("/livez/", "/readyz/", "/healthz/")):
            return self._probe(request, path)
        if path == "/version":
            # As WriteRawJSON (endpoints/handlers/responsewriters/writers.go) writes it:
            # indented, and not through the object encoder, so with no newline at the end.
            return Response(200, orjson.dumps(self._version(), option=orjson.OPT_INDENT_2))
        if path == "/metrics":
            return Response(200, self.metrics.render(), METRICS_CONTENT_TYPE)
        if path in ("/api", "/apis"):
            return self._root_discovery(request, legacy=path == "/api")
        if path.startswith("/openapi/"):
            return self._openapi(path, request)
        if path in (CONFIGURATION_PATH, JWKS_PATH):
            return self._openid(path, request)
        if info is None:
            return self._group_discovery(path)
        return self.metrics.serve(request, info, lambda r, i: self._resource(r, i, user, audit_id))

    def _probe(self, request: Request, path: str) -> Response:
        if "verbose" in request.query:
            check = path.strip("/").split("/")[0]
            text = f"[+]ping ok\n[+]log ok\n[+]etcd ok\n{check} check passed\n"
            return Response(200, text.encode(), "text/plain")
        return Response(200, b"ok", "text/plain")

    def _version(self) -> dict[str, Any]:
        version = self.config.kubernetes_version
        parts = [*version.split("."), "0", "0"][:3]
        return {
            "major": parts[0],
            "minor": parts[1],
            "gitVersion": f"v{parts[0]}.{parts[1]}.{parts[2]}",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.24.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    def _root_discovery(self, request: Request, legacy: bool) -> Response:
        accept = parse_accept(request.headers.get("Accept"))
        negotiated = negotiate(accept, frozenset({"APIGroupDiscoveryList"}))
        if negotiated.as_kind == "APIGroupDiscoveryList":
            version = negotiated.version or "v2"
            body = aggregated(self.registry, legacy, f"apidiscovery.k8s.io/{version}")
            return Response(200, orjson.dumps(body, option=LINE), _DISCOVERY_V2.format(v=version))
        if legacy:
            host = request.host or f"{self.config.host}:{self.config.port}"
            return json_response(200, api_versions(host))
        return json_response(200, api_group_list(self.registry))

    def _group_discovery(self, path: str) -> Response:
        parts = [p for p in path.split("/") if p]
        doc: dict[str, Any] | None = None
        if len(parts) == 2 and parts[0] == "api":
            doc = api_resource_list(self.registry, "", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            doc = api_group(self.registry, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = api_resource_list(self.registry, parts[1], parts[2])
        if doc is None:
            raise StatusError.route_not_found()
        return json_response(200, doc)

    def _openapi(self, path: str, request: Request) -> Response:
        if path == "/openapi/v2":
            return self.openapi_v2.respond(request.headers)
        if path == "/openapi/v3":
            # kube-openapi's handler3 writes its index with json.Marshal: no newline.
            return Response(200, orjson.dumps(self.openapi.index()))
        if path.startswith("/openapi/v3/"):
            data = self.openapi.document(path[len("/openapi/v3/") :])
            if data is not None:
                return Response(200, data, headers=[("Cache-Control", "no-cache, private")])
        raise StatusError.route_not_found()

    def _openid(self, path: str, request: Request) -> Response:
        """The ServiceAccount issuer discovery documents (auth/openidmetadata.py)."""
        metadata = self.openid
        if metadata is None or not metadata.available:
            raise StatusError.route_not_found()
        if request.method not in ("GET", "HEAD"):
            raise StatusError.method_not_allowed()
        headers = [("Cache-Control", CACHE_CONTROL)]
        if path == CONFIGURATION_PATH:
            return Response(200, metadata.configuration, "application/json", headers)
        return Response(200, metadata.keyset, JWKS_CONTENT_TYPE, headers)

    def _resource(
        self, request: Request, info: RequestInfo, user: UserInfo, audit_id: str
    ) -> Answer:
        rt = self.registry.get(info.group, info.version, info.resource)
        if rt is None:
            raise StatusError.route_not_found()
        if info.namespace is not None and not rt.namespaced:
            raise StatusError.route_not_found()
        if rt.namespaced and info.namespace is None and info.name is not None:
            raise StatusError.route_not_found()
        call = Call(
            info,
            rt,
            request.query,
            request.headers.get("User-Agent", ""),
            user=user,
            audit_id=audit_id,
        )
        if rt.deprecated:
            call.warnings.append(
                rt.deprecation_warning or f"{rt.api_version} {rt.kind} is deprecated"
            )
        verb = info.verb
        handler: Route
        if info.subresource is not None:
            handler = self.subresources.handle
        else:
            if verb not in rt.verbs:
                raise StatusError.method_not_allowed()
            if rt.namespaced and info.namespace is None and verb in ("create", "deletecollection"):
                raise StatusError.method_not_allowed()
            if rt.virtual and verb in ("get", "list"):
                handler = self.reads.computed
            else:
                found = self._verbs.get(verb)
                if found is None:
                    raise StatusError.method_not_allowed()
                handler = found
        faults = self.faults
        if faults is not None:
            return faults(request, call, handler)
        return handler(request, call)


def _audit_id(request: Request) -> str:
    """The client's Audit-ID when it sent a usable one (kube-apiserver echoes it), else a new
    random (version 4) UUID."""
    given = request.headers.get("Audit-Id")
    if given and len(given) <= 256 and given.isascii() and given.isprintable():
        return str(given)
    return new_uid()
