"""The embedded Kubernetes API server: routing requests to the store and registry.

`APIServer` serves HTTPS with a fresh CA and bearer token on loopback; use it in-process as
`async with APIServer() as server:` (the kubeconfig is `server.kubeconfig_dict()` or written
with `server.write_kubeconfig(path)`), or run it with `kubeforge apiserver`.
"""

from __future__ import annotations

import gc
import hmac
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
import yaml

from kubeforge.apiserver.allocators import DEFAULT_SERVICE_CIDR, ServiceAllocators
from kubeforge.apiserver.builtin_schemas import BuiltinSchemas
from kubeforge.apiserver.call import Call
from kubeforge.apiserver.crds import CRDController
from kubeforge.apiserver.encoding import Negotiated, decode_body, negotiate, parse_accept
from kubeforge.apiserver.errors import StatusError
from kubeforge.apiserver.gc import GarbageCollector
from kubeforge.apiserver.httpserver import (
    ConnectionLimits,
    HTTPServer,
    Request,
    Response,
    ResponseStream,
)
from kubeforge.apiserver.kubeconfig import kubeconfig_dict, write_kubeconfig
from kubeforge.apiserver.listing import ListOptions, Selection, list_objects
from kubeforge.apiserver.namespaces import NamespaceController
from kubeforge.apiserver.openapi import OpenAPIV3
from kubeforge.apiserver.registry import Registry
from kubeforge.apiserver.requestinfo import RequestInfo, parse_request_path
from kubeforge.apiserver.resource import ResourceType
from kubeforge.apiserver.rest import Rest
from kubeforge.apiserver.store import Backend, Store, StoredObject
from kubeforge.apiserver.subresources import LogSource, NoLogs, Subresources
from kubeforge.apiserver.tables import to_table
from kubeforge.apiserver.tls import ServingCertificates, generate_certificates, load_or_generate
from kubeforge.apiserver.validation import TypeSupport
from kubeforge.apiserver.watch import WatchStreams

__all__ = ["APIServer", "ConnectionLimits", "ServerConfig", "serve", "tune_gc"]

log = logging.getLogger("kubeforge.apiserver")

ADMIN_USER = "kubeforge-admin"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_PROBES = frozenset({"/healthz", "/livez", "/readyz"})
_DISCOVERY_V2 = "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"


@dataclass
class ServerConfig:
    """How to run the server. Port 0 picks a free port."""

    host: str = "127.0.0.1"
    port: int = 0
    kubernetes_version: str = "1.33.0"
    token: str | None = None
    tls: bool = True
    history_size: int = 10_000
    bookmark_interval: float = 60.0
    max_request_bytes: int = 3 * 1024 * 1024
    # Timeouts for reading requests and idle connections, header size, connection cap.
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    backend: Backend | None = None
    extra_hosts: tuple[str, ...] = field(default_factory=tuple)
    # Owner-reference garbage collection and namespace deletion, which a real cluster's
    # controller manager does; off by default, as with envtest.
    garbage_collection: bool = False
    # Where Services' cluster IPs come from; the first address is the `kubernetes` Service's.
    service_cidr: str = DEFAULT_SERVICE_CIDR
    # Keep the CA, serving certificate and token here, so a restart keeps them.
    credentials_dir: Path | None = None


class APIServer:
    """A Kubernetes API server in this process."""

    def __init__(
        self,
        config: ServerConfig | None = None,
        *,
        logs: LogSource | None = None,
        **overrides: Any,
    ) -> None:
        self.config = config or ServerConfig()
        for key, value in overrides.items():
            setattr(self.config, key, value)
        cfg = self.config
        self.token = cfg.token or self._stored_token() or secrets.token_urlsafe(32)
        self.store = Store(history_size=cfg.history_size, backend=cfg.backend)
        self.registry = Registry()
        self.schemas = BuiltinSchemas.for_version(cfg.kubernetes_version)
        self.types = TypeSupport(self.schemas)
        self.rest = Rest(self.store, self.registry, self.types)
        self.watches = WatchStreams(self.store, cfg.bookmark_interval)
        self.crds = CRDController(self.rest)
        self.subresources = Subresources(self.rest, logs or NoLogs())
        self.allocators = ServiceAllocators(self.rest, cfg.service_cidr)
        self.gc: GarbageCollector | None = None
        self.namespaces: NamespaceController | None = None
        if cfg.garbage_collection:
            self.gc = GarbageCollector(self.rest)
            self.namespaces = NamespaceController(self.rest, self.subresources)
        self.openapi = OpenAPIV3(self.registry, self.schemas)
        self.certificates: ServingCertificates | None = None
        self.port = cfg.port
        self._http: HTTPServer | None = None
        self._bootstrap()

    # lifecycle ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        scheme = "https" if self.config.tls else "http"
        host = self.config.host
        if ":" in host:
            host = f"[{host}]"
        return f"{scheme}://{host}:{self.port}"

    @property
    def ca_pem(self) -> bytes:
        assert self.certificates is not None, "the server has not been started"
        return self.certificates.ca_pem

    async def start(self) -> None:
        """Bind and start serving (generating the TLS material first)."""
        cfg = self.config
        ssl_context = None
        if cfg.tls:
            if self.certificates is None:  # a restart keeps its credentials
                hosts = ("127.0.0.1", "localhost", "::1", *cfg.extra_hosts)
                if cfg.host not in hosts and cfg.host not in ("0.0.0.0", "::"):
                    hosts = (*hosts, cfg.host)
                if cfg.credentials_dir is not None:
                    self.certificates = load_or_generate(cfg.credentials_dir, hosts)
                else:
                    self.certificates = generate_certificates(hosts)
            ssl_context = self.certificates.server_context()
        self._http = HTTPServer(
            self._handle,
            max_body_bytes=cfg.max_request_bytes,
            error=self._error_response,
            limits=cfg.connections,
        )
        self.port = self.config.port = await self._http.start(cfg.host, cfg.port, ssl_context)
        # The `kubernetes` Service's endpoints point at the port actually bound.
        self.allocators.ensure_kubernetes_service(cfg.host, self.port)
        if self.gc is not None:
            self.gc.start()
        if self.namespaces is not None:
            self.namespaces.start()
        log.info("serving on %s", self.url)

    async def stop(self) -> None:
        """End every watch and stop serving (start() again serves the same state and port)."""
        if self.gc is not None:
            await self.gc.stop()
        if self.namespaces is not None:
            await self.namespaces.stop()
        self.watches.close_all()
        if self._http is not None:
            await self._http.stop()
            self._http = None

    async def __aenter__(self) -> APIServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def kubeconfig_dict(self, context: str = "kubeforge") -> dict[str, Any]:
        """A kubeconfig for this server (bearer token, CA data)."""
        return kubeconfig_dict(
            self.url, self.ca_pem if self.config.tls else b"", self.token, context
        )

    def write_kubeconfig(self, path: str | Path, context: str = "kubeforge") -> Path:
        """Write the kubeconfig (mode 0600) and return its path."""
        return write_kubeconfig(path, self.url, self.ca_pem, self.token, context)

    def _stored_token(self) -> str | None:
        directory = self.config.credentials_dir
        if directory is None:
            return None
        path = directory / "token"
        if path.exists():
            return path.read_text().strip() or None
        directory.mkdir(parents=True, exist_ok=True)
        token = secrets.token_urlsafe(32)
        path.write_text(token)
        path.chmod(0o600)
        return token

    def _bootstrap(self) -> None:
        self.crds.restore()
        ns_type = self.registry.get("", "v1", "namespaces")
        assert ns_type is not None
        for name in DEFAULT_NAMESPACES:
            if self.store.get(ns_type.group_resource, "", name) is None:
                info = RequestInfo("", "v1", None, "namespaces", None, None, "create")
                call = Call(info, ns_type, {"fieldManager": "kube-apiserver"})
                body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                self.rest.create(call, body)
        self.allocators.ensure_kubernetes_service(self.config.host, self.port)

    # request handling ---------------------------------------------------------------------

    def _handle(self, request: Request) -> Response | Awaitable[Response | ResponseStream]:
        """Answer a request at once, or return what streams the answer (watch, logs)."""
        try:
            return self._dispatch(request)
        except StatusError as exc:
            return self._status(exc)
        except Exception as exc:
            log.exception("%s %s failed", request.method, request.target)
            return self._status(StatusError.internal(f"{type(exc).__name__}: {exc}"))

    async def _streaming(self, stream: Awaitable[ResponseStream]) -> Response | ResponseStream:
        # Streams check their options before they start, so an error is still an answer.
        try:
            return await stream
        except StatusError as exc:
            return self._status(exc)

    def _status(self, exc: StatusError) -> Response:
        return Response(exc.code, orjson.dumps(exc.status()), headers=list(exc.headers.items()))

    def _error_response(self, code: int, message: str) -> Response:
        """The answer to a request the HTTP layer refused before routing it."""
        if code == 413:
            return self._status(StatusError.too_large(message))
        if code == 400:
            return self._status(StatusError.bad_request(message))
        if code == 408:
            return self._status(StatusError.request_timeout(message))
        if code == 429:
            return self._status(StatusError.too_many_requests(message))
        return self._status(StatusError.internal(message))

    def _authorized(self, request: Request) -> bool:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[7:].strip().encode(), self.token.encode())

    def _dispatch(self, request: Request) -> Response | Awaitable[Response | ResponseStream]:
        path = request.path.rstrip("/") or "/"
        if path in _PROBES or path.startswith(("/livez/", "/readyz/", "/healthz/")):
            return self._probe(request, path)
        if not self._authorized(request):
            raise StatusError.unauthorized()
        if path == "/version":
            return self._json(200, self._version())
        if path in ("/api", "/apis"):
            return self._root_discovery(request, legacy=path == "/api")
        if path.startswith("/openapi/"):
            return self._openapi(path, request)
        query: Mapping[str, str] = request.query
        watch_param = query.get("watch") in ("true", "1", "True")
        info = parse_request_path(request.method, path, watch_param)
        if info is None:
            return self._group_discovery(path)
        return self._resource(request, info)

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
            body = self.registry.aggregated(legacy, f"apidiscovery.k8s.io/{version}")
            return Response(200, orjson.dumps(body), _DISCOVERY_V2.format(v=version))
        if legacy:
            host = request.host or f"{self.config.host}:{self.port}"
            return self._json(200, self.registry.api_versions(host))
        return self._json(200, self.registry.api_group_list())

    def _group_discovery(self, path: str) -> Response:
        parts = [p for p in path.split("/") if p]
        doc: dict[str, Any] | None = None
        if len(parts) == 2 and parts[0] == "api":
            doc = self.registry.api_resource_list("", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            doc = self.registry.api_group(parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = self.registry.api_resource_list(parts[1], parts[2])
        if doc is None:
            raise StatusError.route_not_found()
        return self._json(200, doc)

    def _openapi(self, path: str, request: Request) -> Response:
        if path == "/openapi/v3":
            return self._json(200, self.openapi.index())
        if path.startswith("/openapi/v3/"):
            data = self.openapi.document(path[len("/openapi/v3/") :])
            if data is not None:
                return Response(200, data, headers=[("Cache-Control", "no-cache, private")])
        raise StatusError.route_not_found()

    def _json(
        self,
        code: int,
        body: bytes | dict[str, Any],
        warnings: list[str] | None = None,
        fmt: str = "json",
    ) -> Response:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        ctype = "application/json"
        if fmt == "yaml":
            data = yaml.safe_dump(orjson.loads(data), sort_keys=False).encode()
            ctype = "application/yaml"
        headers = []
        for text in warnings or ():
            escaped = text.replace("\\", "\\\\").replace('"', '\\"')
            headers.append(("Warning", f'299 - "{escaped}"'))
        return Response(code, data, ctype, headers)

    # resources ----------------------------------------------------------------------------

    def _resource(
        self, request: Request, info: RequestInfo
    ) -> Response | Awaitable[Response | ResponseStream]:
        rt = self.registry.get(info.group, info.version, info.resource)
        if rt is None:
            raise StatusError.route_not_found()
        if info.namespace is not None and not rt.namespaced:
            raise StatusError.route_not_found()
        if rt.namespaced and info.namespace is None and info.name is not None:
            raise StatusError.route_not_found()
        call = Call(info, rt, request.query, request.headers.get("User-Agent", ""))
        if rt.deprecated:
            call.warnings.append(
                rt.deprecation_warning or f"{rt.api_version} {rt.kind} is deprecated"
            )
        verb = info.verb
        if info.subresource is not None:
            return self._subresource(request, call)
        if verb not in rt.verbs:
            raise StatusError.method_not_allowed()
        if rt.namespaced and info.namespace is None and verb in ("create", "deletecollection"):
            raise StatusError.method_not_allowed()
        if verb == "get":
            return self._get(request, call)
        if verb == "list":
            return self._list(request, call)
        if verb == "watch":
            return self._watch(request, call)
        if verb == "create":
            body = self._body(request)
            if rt.virtual:
                return self._json(201, self._virtual(call, body), call.warnings)
            if self.crds.refuses_instances(rt):
                raise StatusError(
                    405,
                    "MethodNotAllowed",
                    "create not allowed while custom resource definition is terminating",
                )
            code, result = self.rest.create(call, body)
            return self._json(code, result, call.warnings)
        if verb == "update":
            body = self._body(request)
            code, result = self.rest.update(call, body)
            return self._json(code, result, call.warnings)
        if verb == "patch":
            raw = request.body
            ctype = request.headers.get("Content-Type", "")
            decoded = decode_body(raw, _patch_decode_type(ctype))
            code, result = self.rest.patch(call, raw, ctype, decoded)
            return self._json(code, result, call.warnings)
        if verb == "delete":
            options = self._delete_options(request)
            code, result = self.rest.delete(call, options)
            return self._json(code, result, call.warnings)
        if verb == "deletecollection":
            return self._delete_collection(request, call)
        raise StatusError.method_not_allowed()

    def _body(self, request: Request) -> Any:
        return decode_body(request.body, request.headers.get("Content-Type"))

    def _delete_options(self, request: Request) -> dict[str, Any]:
        raw = request.body
        options: dict[str, Any] = {}
        if raw.strip():
            decoded = decode_body(raw, request.headers.get("Content-Type"))
            if not isinstance(decoded, dict):
                raise StatusError.bad_request("the request body must be DeleteOptions")
            options = decoded
        q = request.query
        if "propagationPolicy" in q:
            options["propagationPolicy"] = q["propagationPolicy"]
        if "gracePeriodSeconds" in q:
            try:
                options["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            except ValueError:
                raise StatusError.bad_request("invalid gracePeriodSeconds") from None
        if "orphanDependents" in q:
            options["orphanDependents"] = q["orphanDependents"] == "true"
        return options

    def _served(self, rt: ResourceType) -> Any:
        def convert(stored: StoredObject) -> dict[str, Any]:
            return self.rest.served(rt, stored)

        return convert

    def _get(self, request: Request, call: Call) -> Response:
        rt = call.rt
        negotiated = self._negotiate(request, {"Table", "PartialObjectMetadata"})
        stored = self.rest.get(call)
        if negotiated.as_kind == "Table":
            table = to_table(
                rt,
                [self.rest.served(rt, stored)],
                include_object=self._include_object(call),
                table_version=negotiated.version or "v1",
                resource_version=str(stored.rv),
            )
            return self._json(200, table, call.warnings)
        if negotiated.as_kind == "PartialObjectMetadata":
            return self._json(200, _partial(stored.obj, negotiated.version), call.warnings)
        return self._json(200, self.rest.served_raw(rt, stored), call.warnings, negotiated.format)

    def _list(self, request: Request, call: Call) -> Response:
        rt = call.rt
        negotiated = self._negotiate(request, {"Table", "PartialObjectMetadataList"})
        selection = Selection.parse(rt, call.query)
        options = ListOptions.parse(call.query)
        result = list_objects(self.store, rt, call.info.namespace, selection, options)
        if negotiated.as_kind == "Table":
            table = to_table(
                rt,
                [self.rest.served(rt, s) for s in result.items],
                include_object=self._include_object(call),
                table_version=negotiated.version or "v1",
                resource_version=str(result.resource_version),
                continue_token=result.continue_token,
                remaining=result.remaining,
            )
            return self._json(200, table, call.warnings)
        meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
        if result.continue_token:
            meta["continue"] = result.continue_token
            if result.remaining is not None:
                meta["remainingItemCount"] = result.remaining
        if negotiated.as_kind == "PartialObjectMetadataList":
            version = negotiated.version or "v1"
            doc = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": f"meta.k8s.io/{version}",
                "metadata": meta,
                "items": [_partial(s.obj, version) for s in result.items],
            }
            return self._json(200, doc, call.warnings)
        items: list[bytes] = []
        for stored in result.items:
            served = self.rest.served_raw(rt, stored)
            items.append(served if isinstance(served, bytes) else orjson.dumps(served))
        head = orjson.dumps({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta})
        body = head[:-1] + b',"items":[' + b",".join(items) + b"]}"
        return self._json(200, body, call.warnings, negotiated.format)

    def _watch(self, request: Request, call: Call) -> Awaitable[Response | ResponseStream]:
        rt = call.rt
        negotiated = self._negotiate(request, {"Table", "PartialObjectMetadata"})
        table = None
        served = self._served(rt)
        raw_ok = rt.from_storage is None
        if negotiated.as_kind == "Table":
            include = self._include_object(call)
            version = negotiated.version or "v1"

            def table(objs: list[dict[str, Any]], no_headers: bool) -> dict[str, Any]:
                return to_table(
                    rt, objs, include_object=include, table_version=version, no_headers=no_headers
                )

        elif negotiated.as_kind == "PartialObjectMetadata":
            version = negotiated.version or "v1"

            def served(stored: StoredObject) -> dict[str, Any]:
                return _partial(stored.obj, version)

            raw_ok = False
        return self._streaming(self.watches.serve(request, call, negotiated, served, raw_ok, table))

    def _delete_collection(self, request: Request, call: Call) -> Response:
        rt = call.rt
        options = self._delete_options(request)
        selection = Selection.parse(rt, call.query)
        result = list_objects(
            self.store, rt, call.info.namespace, selection, ListOptions(0, None, None, False)
        )
        deleted: list[Any] = []
        for stored in result.items:
            ns, name = stored.key
            info = RequestInfo(rt.group, rt.version, ns or None, rt.plural, name, None, "delete")
            item_call = Call(info, rt, call.query, call.user_agent, call.warnings)
            current = self.store.get(rt.group_resource, ns, name)
            if current is None:
                continue
            _, out = self.rest.delete_stored(item_call, current, options)
            deleted.append(self.rest.served(rt, current) if not isinstance(out, dict) else out)
        items = [d for d in deleted if d.get("kind") != "Status"]
        body = {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(self.store.revision)},
            "items": items,
        }
        return self._json(200, body, call.warnings)

    def _negotiate(self, request: Request, allow: set[str]) -> Negotiated:
        return negotiate(parse_accept(request.headers.get("Accept")), frozenset(allow))

    def _include_object(self, call: Call) -> str:
        value = call.query.get("includeObject") or "Metadata"
        if value not in ("None", "Metadata", "Object"):
            raise StatusError.bad_request(
                f'includeObject: Unsupported value: "{value}": supported values: "Metadata", '
                '"None", "Object"'
            )
        return value

    def _virtual(self, call: Call, body: Any) -> dict[str, Any]:
        if call.rt.kind == "Binding":
            name = (body.get("metadata") or {}).get("name", "") if isinstance(body, dict) else ""
            return self.subresources.bind(call, body, name)
        return self.subresources.review(call, body, ADMIN_USER)

    def _subresource(
        self, request: Request, call: Call
    ) -> Response | Awaitable[Response | ResponseStream]:
        rt, info = call.rt, call.info
        name = info.subresource or ""
        sub = rt.subresource(name)
        if sub is None:
            raise StatusError.route_not_found()
        verb = {"watch": "get", "list": "get"}.get(info.verb, info.verb)
        if verb not in sub.verbs:
            raise StatusError.method_not_allowed()
        if name == "status":
            if verb == "get":
                return self._json(200, self.rest.served_raw(rt, self.rest.get(call)))
            if verb == "update":
                code, result = self.rest.update(call, self._body(request))
                return self._json(code, result, call.warnings)
            raw = request.body
            ctype = request.headers.get("Content-Type", "")
            decoded = decode_body(raw, _patch_decode_type(ctype))
            code, result = self.rest.patch(call, raw, ctype, decoded)
            return self._json(code, result, call.warnings)
        if name == "scale":
            if verb == "get":
                return self._json(200, self.subresources.get_scale(call))
            raw = request.body
            ctype = request.headers.get("Content-Type", "")
            if verb == "update":
                scale = self.subresources.write_scale(call, decode_body(raw, ctype), None)
            else:
                scale = self.subresources.write_scale(
                    call, decode_body(raw, _patch_decode_type(ctype)), ctype
                )
            return self._json(200, scale, call.warnings)
        if name == "log":
            return self._streaming(self._log(request, call))
        if name == "binding":
            return self._json(201, self.subresources.bind(call, self._body(request), call.name))
        if name == "eviction":
            return self._json(201, self.subresources.evict(call, self._body(request)))
        if name == "token":
            return self._json(201, self.subresources.token(call, self._body(request)))
        if name == "finalize":
            code, result = self.subresources.finalize_namespace(call, self._body(request))
            return self._json(code, result, call.warnings)
        if name in ("ephemeralcontainers", "resize") and verb == "get":
            return self._json(200, self.rest.served_raw(rt, self.rest.get(call)))
        raise StatusError.method_not_allowed()

    async def _log(self, request: Request, call: Call) -> ResponseStream:
        log_request = self.subresources.log_request(call)
        stream = request.stream(200, {"Content-Type": "text/plain"})
        try:
            async for chunk in self.subresources.logs.stream(log_request):
                await stream.write(chunk)
            await stream.finish()
        except ConnectionResetError:
            pass  # the client stopped following the log
        return stream


def _patch_decode_type(content_type: str) -> str:
    """Patch bodies are JSON except apply patches, which are YAML (JSON being YAML too)."""
    ctype = content_type.split(";")[0].strip().lower()
    return "application/yaml" if ctype.endswith("yaml") else "application/json"


def _partial(obj: dict[str, Any], version: str | None) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"meta.k8s.io/{version or 'v1'}",
        "metadata": obj.get("metadata", {}),
    }


def tune_gc() -> None:
    """Tune the cyclic garbage collector for a process that is mainly a server.

    A server holds many long-lived objects (the schemas, every stored object) and allocates
    quickly under load; with the default thresholds the collector rescans the long-lived
    heap many times a second. Freezing what exists after start-up and collecting less often
    removes most of that cost. Call it from a program's entry point, not from a library.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)


@asynccontextmanager
async def serve(config: ServerConfig | None = None, **overrides: Any) -> AsyncIterator[APIServer]:
    """Run an API server for the duration of an `async with` block."""
    server = APIServer(config, **overrides)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
