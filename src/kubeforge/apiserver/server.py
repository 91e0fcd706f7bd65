"""The embedded Kubernetes API server: routing requests to the store and registry.

`APIServer` serves HTTPS with a fresh CA and bearer token on loopback; use it in-process as
`async with APIServer() as server:` (the kubeconfig is `server.kubeconfig_dict()` or written
with `server.write_kubeconfig(path)`), or run it with `kubeforge apiserver`.
"""

from __future__ import annotations

import gc
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import yaml

from kubeforge.apiserver.admission import Admission, ServiceResolver
from kubeforge.apiserver.auth import Auth, UserInfo
from kubeforge.apiserver.auth.bootstrap import bootstrap_objects
from kubeforge.apiserver.auth.csradmission import CertificateAdmission
from kubeforge.apiserver.auth.openidmetadata import (
    CACHE_CONTROL,
    CONFIGURATION_PATH,
    JWKS_CONTENT_TYPE,
    JWKS_PATH,
    OpenIDMetadata,
)
from kubeforge.apiserver.auth.tokens import DEFAULT_ISSUER, TokenIssuer, load_or_generate_key
from kubeforge.apiserver.controllers.allocators import (
    DEFAULT_SERVICE_CIDR,
    ServiceAllocators,
    advertised_address,
)
from kubeforge.apiserver.controllers.apfconfig import APFConfiguration
from kubeforge.apiserver.controllers.apiservices import LocalAPIServices
from kubeforge.apiserver.controllers.crds import CRDController
from kubeforge.apiserver.controllers.defaultservicecidr import ensure_default_service_cidr
from kubeforge.apiserver.controllers.gc import GarbageCollector
from kubeforge.apiserver.controllers.namespaces import NamespaceController
from kubeforge.apiserver.discovery.openapi import OpenAPIV3
from kubeforge.apiserver.discovery.openapiv2 import OpenAPIV2
from kubeforge.apiserver.handlers.call import Call
from kubeforge.apiserver.handlers.subresources import LogSource, NoLogs, Subresources
from kubeforge.apiserver.handlers.watch import WatchStreams
from kubeforge.apiserver.handlers.writes import Rest, run_now
from kubeforge.apiserver.http.server import (
    ConnectionLimits,
    HTTPServer,
    Request,
    Response,
    ResponseStream,
)
from kubeforge.apiserver.kubeconfig import kubeconfig_dict, write_kubeconfig
from kubeforge.apiserver.printing.tables import to_table
from kubeforge.apiserver.request import nesting
from kubeforge.apiserver.request.deleteoptions import (
    decode_delete_options,
    delete_options_from_query,
)
from kubeforge.apiserver.request.encoding import Negotiated, decode_body, negotiate, parse_accept
from kubeforge.apiserver.request.errors import StatusError
from kubeforge.apiserver.request.info import RequestInfo, parse_request_path
from kubeforge.apiserver.request.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE, RequestMetrics
from kubeforge.apiserver.request.queryparams import query_flag
from kubeforge.apiserver.request.warningheaders import warning_headers
from kubeforge.apiserver.storage.componentstatuses import ComponentStatuses
from kubeforge.apiserver.storage.listing import ListOptions, Selection, list_converted, list_objects
from kubeforge.apiserver.storage.objectmeta import new_uid
from kubeforge.apiserver.storage.store import Backend, Store, StoredObject
from kubeforge.apiserver.tls import (
    ServingCertificates,
    client_certificate,
    generate_certificates,
    load_or_generate,
)
from kubeforge.apiserver.types.builtin_schemas import BuiltinSchemas
from kubeforge.apiserver.types.conversion import TIMEOUT_SECONDS, Conversions
from kubeforge.apiserver.types.registry import Registry
from kubeforge.apiserver.types.resource import ResourceType
from kubeforge.apiserver.types.typesupport import TypeSupport

__all__ = ["APIServer", "ConnectionLimits", "ServerConfig", "serve", "tune_gc"]

log = logging.getLogger("kubeforge.apiserver")

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_PROBES = frozenset({"/healthz", "/livez", "/readyz"})
_DISCOVERY_V2 = "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
# apimachinery's JSON serializer writes with json.Encoder.Encode, which ends each document
# with a newline; so does every JSON object this server answers with.
_LINE = orjson.OPT_APPEND_NEWLINE
# What a failure of the server itself answers: never the exception, which may show internals.
_INTERNAL_MESSAGE = (
    "the server could not handle this request; its log has the details under Audit-Id {audit_id}"
)

Written = tuple[int, bytes | dict[str, Any]]


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
    # controller manager does; off by default, as with envtest. Namespace deletion follows
    # garbage_collection unless set on its own.
    garbage_collection: bool = False
    namespace_deletion: bool | None = None
    # Where Services' cluster IPs come from; the first address is the `kubernetes` Service's.
    service_cidr: str = DEFAULT_SERVICE_CIDR
    # Keep the CA, serving certificate and token here, so a restart keeps them.
    credentials_dir: Path | None = None
    # The `iss` of ServiceAccount tokens, and the audience the server accepts.
    service_account_issuer: str = DEFAULT_ISSUER
    # Where the issuer discovery document says the token keys are (--service-account-jwks-uri);
    # None: this server's own /openid/v1/jwks at its advertised address.
    service_account_jwks_uri: str | None = None
    # The ServiceAccount admission plugin for pods (an account that exists, its token
    # mounted); on in a development cluster, whose controllers create the accounts.
    service_account_admission: bool = False
    # Paths open to requests without credentials (as system:anonymous, whom RBAC then
    # checks); None opens every path, as kube-apiserver's --anonymous-auth=true does.
    anonymous_paths: tuple[str, ...] | None = ("/healthz", "/livez", "/readyz")
    # How a webhook's Service reference is reached: (namespace, name, port) -> (host, port);
    # None: this machine, at the Service's target port (Admission.resolve_service).
    resolve_service: ServiceResolver | None = None
    # Seconds a CRD's conversion webhook has to answer (kube-apiserver's 30; tests shorten it).
    conversion_webhook_timeout: int = TIMEOUT_SECONDS


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
        self.apiservices = LocalAPIServices(self.rest)
        self.apf = APFConfiguration(self.rest)
        self.subresources = Subresources(self.rest, logs or NoLogs())
        self.components = ComponentStatuses()
        self.allocators = ServiceAllocators(self.rest, cfg.service_cidr)
        self.gc: GarbageCollector | None = None
        self.namespaces: NamespaceController | None = None
        if cfg.garbage_collection:
            self.gc = GarbageCollector(self.rest)
        deletes_namespaces = cfg.namespace_deletion
        if deletes_namespaces if deletes_namespaces is not None else cfg.garbage_collection:
            self.namespaces = NamespaceController(self.rest, self.subresources)
        self.openapi = OpenAPIV3(self.registry, self.schemas)
        self.openapi_v2 = OpenAPIV2(self.registry, self.schemas)  # built on first request
        self.metrics = RequestMetrics()
        issuer = TokenIssuer(load_or_generate_key(cfg.credentials_dir), cfg.service_account_issuer)
        anonymous = None if cfg.anonymous_paths is None else frozenset(cfg.anonymous_paths)
        self.auth = Auth(self.rest, self.token, issuer, anonymous)
        self.rest.admitters.append(CertificateAdmission(self.auth.decide))
        self.admission = Admission(
            self.rest, resolve_service=cfg.resolve_service, authorize=self.auth.check
        )
        # Conversion webhooks are called as admission webhooks are, by the same client, so a
        # Service reference leads to the same place (ServerConfig.resolve_service).
        self.rest.conversions = Conversions(self.admission.client, cfg.conversion_webhook_timeout)
        if cfg.service_account_admission:
            self.rest.mutators.append(self.auth.pods)
        self.certificates: ServingCertificates | None = None
        # The issuer discovery documents, rendered once the port is known (start()).
        self.openid: OpenIDMetadata | None = None
        self.port = cfg.port
        self._http: HTTPServer | None = None
        pods = self.registry.get("", "v1", "pods")
        # Only pods of a server that admits them wait for their namespace's account.
        self._pods = pods if cfg.service_account_admission else None
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
        jwks_uri = cfg.service_account_jwks_uri
        if jwks_uri is None:
            # As kube-apiserver: https://<external address>/openid/v1/jwks.
            address = advertised_address(cfg.host)
            host = f"[{address}]" if ":" in address else address
            jwks_uri = f"https://{host}:{self.port}{JWKS_PATH}"
        self.openid = OpenIDMetadata(self.auth.issuer, jwks_uri)
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
        await self.admission.close()

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

    def write_kubeconfig(
        self, path: str | Path, context: str = "kubeforge", namespace: str = "default"
    ) -> Path:
        """Write the kubeconfig (mode 0600; its context's namespace `namespace`) and return
        its path."""
        return write_kubeconfig(
            path, self.url, self.ca_pem, self.token, context, namespace=namespace
        )

    def user_kubeconfig_dict(
        self, user: str, groups: tuple[str, ...] = (), context: str = "kubeforge"
    ) -> dict[str, Any]:
        """A kubeconfig for `user` in `groups`: a client certificate signed by the server's
        CA (CN = user, O = each group), for trying what RBAC lets other users do."""
        assert self.certificates is not None, "the server has not been started"
        cert = client_certificate(self.certificates, user, groups)
        return kubeconfig_dict(self.url, self.ca_pem, None, context, cert)

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
                run_now(self.rest.create(call, body))
        self.allocators.ensure_kubernetes_service(self.config.host, self.port)
        ensure_default_service_cidr(self.rest, self.config.service_cidr)
        self.apiservices.register_builtin()
        self.apf.bootstrap()
        self._bootstrap_rbac()

    def _bootstrap_rbac(self) -> None:
        """Create the default roles and bindings that are missing (kube-apiserver's
        bootstrap policy); ones a user changed are left as they are."""
        for obj in bootstrap_objects():
            plural = "clusterroles" if obj["kind"] == "ClusterRole" else "clusterrolebindings"
            rt = self.registry.get("rbac.authorization.k8s.io", "v1", plural)
            assert rt is not None
            if self.store.get(rt.group_resource, "", obj["metadata"]["name"]) is not None:
                continue
            info = RequestInfo(rt.group, "v1", None, plural, None, None, "create")
            run_now(self.rest.create(Call(info, rt, {"fieldManager": "kube-apiserver"}), obj))

    # request handling ---------------------------------------------------------------------

    def _handle(self, request: Request) -> Response | Awaitable[Response | ResponseStream]:
        """Answer a request at once, or return what streams the answer (watch, logs).

        Every answer carries an Audit-Id, as kube-apiserver's do: the client's own, or a
        fresh one, which is also what the log names when the request fails.
        """
        audit_id = _audit_id(request)
        try:
            result = self._dispatch(request, audit_id)
        except StatusError as exc:
            result = self._status(exc)
        except Exception:
            result = self._internal_error(request, audit_id)
        if isinstance(result, Response):
            result.headers.append(("Audit-Id", audit_id))
            return result
        return self._streaming(request, audit_id, result)

    async def _streaming(
        self, request: Request, audit_id: str, pending: Awaitable[Response | ResponseStream]
    ) -> Response | ResponseStream:
        # Streams check their options before they start, so an error is still an answer
        # (a stream's own headers carry the Audit-Id: see WatchStreams.serve and _log).
        try:
            result = await pending
        except StatusError as exc:
            result = self._status(exc)
        except Exception:
            result = self._internal_error(request, audit_id)
        if isinstance(result, Response):
            result.headers.append(("Audit-Id", audit_id))
        return result

    def _status(self, exc: StatusError, warnings: list[str] | None = None) -> Response:
        headers = list(exc.headers.items()) + warning_headers(warnings)
        return Response(exc.code, orjson.dumps(exc.status(), option=_LINE), headers=headers)

    def _internal_error(self, request: Request, audit_id: str) -> Response:
        """A failure of the server itself: the log gets the traceback, the client an answer
        that says where to look and nothing of the server's internals."""
        log.exception("%s %s failed (Audit-Id %s)", request.method, request.path, audit_id)
        return self._status(StatusError.internal(_INTERNAL_MESSAGE.format(audit_id=audit_id)))

    def _error_response(self, code: int, message: str) -> Response:
        """The answer to a request the HTTP layer refused (or failed) before routing it."""
        audit_id = new_uid()
        if code == 413:
            response = self._status(StatusError.too_large(message))
        elif code == 400:
            response = self._status(StatusError.bad_request(message))
        elif code == 408:
            response = self._status(StatusError.request_timeout(message))
        elif code == 429:
            response = self._status(StatusError.too_many_requests(message))
        else:
            log.error("the HTTP layer answered %d (Audit-Id %s): %s", code, audit_id, message)
            response = self._status(
                StatusError.internal(_INTERNAL_MESSAGE.format(audit_id=audit_id))
            )
        response.headers.append(("Audit-Id", audit_id))
        return response

    def _dispatch(
        self, request: Request, audit_id: str
    ) -> Response | Awaitable[Response | ResponseStream]:
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
            body = self.registry.aggregated(legacy, f"apidiscovery.k8s.io/{version}")
            return Response(200, orjson.dumps(body, option=_LINE), _DISCOVERY_V2.format(v=version))
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

    def _json(
        self,
        code: int,
        body: bytes | dict[str, Any],
        warnings: list[str] | None = None,
        fmt: str = "json",
    ) -> Response:
        data = body + b"\n" if isinstance(body, bytes) else orjson.dumps(body, option=_LINE)
        ctype = "application/json"
        if fmt == "yaml":
            data = yaml.safe_dump(orjson.loads(data), sort_keys=False).encode()
            ctype = "application/yaml"
        return Response(code, data, ctype, warning_headers(warnings))

    # writes -------------------------------------------------------------------------------

    def _finish(
        self, call: Call, write: Coroutine[Any, Any, Written]
    ) -> Response | Awaitable[Response]:
        """Answer a write: at once when no admission applies to it and no conversion webhook
        converts its type, else once admitted and converted."""
        if call.admission is None and call.rt.webhook_conversion is None:
            code, result = run_now(write)
            return self._json(code, result, call.warnings)
        return self._admitted(call, write)

    async def _admitted(self, call: Call, write: Coroutine[Any, Any, Written]) -> Response:
        try:
            code, result = await write
        except StatusError as exc:
            # Warnings (a webhook's, say) reach the client with a refusal too.
            return self._status(exc, call.warnings)
        return self._json(code, result, call.warnings)

    # resources ----------------------------------------------------------------------------

    def _resource(
        self, request: Request, info: RequestInfo, user: UserInfo, audit_id: str
    ) -> Response | Awaitable[Response | ResponseStream]:
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
        if info.subresource is not None:
            return self._subresource(request, call)
        if verb not in rt.verbs:
            raise StatusError.method_not_allowed()
        if rt.namespaced and info.namespace is None and verb in ("create", "deletecollection"):
            raise StatusError.method_not_allowed()
        if rt.virtual and verb in ("get", "list"):
            return self._computed(request, call)
        if verb == "get":
            return self._get(request, call)
        if verb == "list":
            return self._list(request, call)
        if verb == "watch":
            return self._watch(request, call)
        if verb == "create":
            body = self._body(request)
            if rt.virtual:
                call.admission = self.admission.begin(call, ("CREATE",))
                return self._finish(call, _written(201, self._virtual(call, body)))
            if rt is self._pods and self.auth.pods.missing_account(call, body):
                call.admission = self.admission.begin(call, ("CREATE",))
                return self._admitted(call, self._create_pod_later(call, body))
            if self.crds.refuses_instances(rt):
                raise StatusError(
                    405,
                    "MethodNotAllowed",
                    "create not allowed while custom resource definition is terminating",
                )
            call.admission = self.admission.begin(call, ("CREATE",))
            return self._finish(call, self.rest.create(call, body))
        if verb == "update":
            body = self._body(request)
            call.admission = self.admission.begin(call, ("UPDATE",))
            return self._finish(call, self.rest.update(call, body))
        if verb == "patch":
            raw = request.body
            ctype = request.headers.get("Content-Type", "")
            decoded = self._decode(request, _patch_decode_type(ctype))
            # A server-side apply may create the object.
            call.admission = self.admission.begin(call, ("CREATE", "UPDATE"))
            return self._finish(call, self.rest.patch(call, raw, ctype, decoded))
        if verb == "delete":
            options = self._delete_options(request, call)
            call.admission = self.admission.begin(call, ("DELETE",))
            return self._finish(call, self.rest.delete(call, options))
        if verb == "deletecollection":
            return self._delete_collection(request, call)
        raise StatusError.method_not_allowed()

    def _body(self, request: Request) -> Any:
        return self._decode(request, request.headers.get("Content-Type"))

    def _decode(self, request: Request, content_type: str | None) -> Any:
        """Every request body, decoded and held to the nesting limit before any handler
        walks it (nesting.py)."""
        decoded = decode_body(request.body, content_type)
        nesting.check_body(request.body, decoded, content_type)
        return decoded

    def _delete_options(self, request: Request, call: Call) -> dict[str, Any]:
        """The request's DeleteOptions: from its body, or from its query when it has none
        (as kube-apiserver reads them); the dry run they ask for becomes the call's."""
        if request.body.strip():
            options = decode_delete_options(self._body(request))
        else:
            options = delete_options_from_query(request.query)
        query = {k: v for k, v in call.query.items() if k != "dryRun"}
        if options.get("dryRun"):
            query["dryRun"] = "All"
        call.query = query
        return options

    def _served(self, rt: ResourceType) -> Any:
        def convert(stored: StoredObject) -> dict[str, Any]:
            return self.rest.served(rt, stored)

        return convert

    def _get(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        rt = call.rt
        negotiated = self._negotiate(request, {"Table", "PartialObjectMetadata"})
        stored = self.rest.get(call)
        if (
            rt.webhook_conversion is not None
            and stored.obj.get("apiVersion") != rt.api_version
            and negotiated.as_kind != "PartialObjectMetadata"
        ):
            # Metadata-only reads are answered from the stored object, whatever its version.
            return self._get_converted(call, negotiated, stored)
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

    async def _get_converted(
        self, call: Call, negotiated: Negotiated, stored: StoredObject
    ) -> Response:
        """A get of an object its CRD's webhook converts to the version asked for."""
        rt = call.rt
        obj = await self.rest.read_as(rt, stored)
        if negotiated.as_kind == "Table":
            table = to_table(
                rt,
                [obj],
                include_object=self._include_object(call),
                table_version=negotiated.version or "v1",
                resource_version=str(stored.rv),
            )
            return self._json(200, table, call.warnings)
        return self._json(200, obj, call.warnings, negotiated.format)

    def _list(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        rt = call.rt
        negotiated = self._negotiate(request, {"Table", "PartialObjectMetadataList"})
        selection = Selection.parse(rt, call.query)
        options = ListOptions.parse(call.query)
        if rt.webhook_conversion is not None and negotiated.as_kind != "PartialObjectMetadataList":
            return self._list_converted(call, negotiated, selection, options)
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

    async def _list_converted(
        self, call: Call, negotiated: Negotiated, selection: Selection, options: ListOptions
    ) -> Response:
        """A list of objects a CRD's webhook converts: the page's objects stored in another
        version converted in one review (selectors read them in the version asked for)."""
        rt = call.rt
        result, items = await list_converted(
            self.store, rt, call.info.namespace, selection, options, self._converter(rt)
        )
        meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
        if result.continue_token:
            meta["continue"] = result.continue_token
            if result.remaining is not None:
                meta["remainingItemCount"] = result.remaining
        if negotiated.as_kind == "Table":
            table = to_table(
                rt,
                items,
                include_object=self._include_object(call),
                table_version=negotiated.version or "v1",
                resource_version=str(result.resource_version),
                continue_token=result.continue_token,
                remaining=result.remaining,
            )
            return self._json(200, table, call.warnings)
        doc = {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": items}
        return self._json(200, doc, call.warnings, negotiated.format)

    def _converter(self, rt: ResourceType) -> Any:
        """Stored objects to `rt`'s version, those stored in another version converted by
        the CRD's webhook in one review."""

        async def convert(objects: list[StoredObject]) -> list[dict[str, Any]]:
            out = await self.rest.read_all(rt, objects)
            return [orjson.loads(o) if isinstance(o, bytes) else o for o in out]

        return convert

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
        convert = None
        if rt.webhook_conversion is not None and negotiated.as_kind != "PartialObjectMetadata":
            convert = self._converter(rt)
        return self.watches.serve(request, call, negotiated, served, raw_ok, table, convert)

    def _delete_collection(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        call.admission = self.admission.begin(call, ("DELETE",))
        return self._finish(call, self._delete_items(request, call))

    async def _delete_items(self, request: Request, call: Call) -> Written:
        rt = call.rt
        options = self._delete_options(request, call)
        selection = Selection.parse(rt, call.query)
        everything = ListOptions(0, None, None, False)
        if rt.webhook_conversion is not None and not selection.version_invariant:
            result, _ = await list_converted(
                self.store, rt, call.info.namespace, selection, everything, self._converter(rt)
            )
        else:
            result = list_objects(self.store, rt, call.info.namespace, selection, everything)
        deleted: list[Any] = []
        for stored in result.items:
            ns, name = stored.key
            info = RequestInfo(rt.group, rt.version, ns or None, rt.plural, name, None, "delete")
            item_call = Call(info, rt, call.query, call.user_agent, call.warnings, call.user)
            if call.admission is not None:
                # Each deletion is admitted, without a name, as upstream's collection delete.
                item_call.admission = self.admission.begin(item_call, ("DELETE",), name="")
            current = self.store.get(rt.group_resource, ns, name)
            if current is None:
                continue
            _, out = await self.rest.delete_stored(item_call, current, options)
            deleted.append(orjson.loads(out) if isinstance(out, bytes) else out)
        items = [d for d in deleted if d.get("kind") != "Status"]
        body = {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(self.store.revision)},
            "items": items,
        }
        return 200, body

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

    async def _virtual(self, call: Call, body: Any) -> dict[str, Any]:
        if call.rt.kind == "Binding":
            name = (body.get("metadata") or {}).get("name", "") if isinstance(body, dict) else ""
            return await self.subresources.bind(call, body, name)
        review = call.admission
        if review is not None and isinstance(body, dict):
            typed = {**body, "apiVersion": call.rt.api_version, "kind": call.rt.kind}
            body = await review.mutate("CREATE", typed, None)
            await review.validate("CREATE", body, None)
        return self.auth.review(call, body)

    def _computed(self, request: Request, call: Call) -> Response:
        """A get or list of objects worked out when asked (ComponentStatuses)."""
        rt = call.rt
        negotiated = self._negotiate(request, {"Table"})
        if call.info.name is not None:
            objects = [self.components.get(call.info.name)]
        else:
            objects = self.components.list(Selection.parse(rt, call.query))
        if negotiated.as_kind == "Table":
            table = to_table(rt, objects, include_object=self._include_object(call))
            return self._json(200, table, call.warnings)
        if call.info.name is not None:
            return self._json(200, objects[0], call.warnings, negotiated.format)
        doc = {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": {}, "items": objects}
        return self._json(200, doc, call.warnings, negotiated.format)

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
        if name == "status" or name == "approval":
            if verb == "get":
                if rt.webhook_conversion is not None:
                    return self._answered(self.rest.answer(rt, self.rest.get(call)))
                return self._json(200, self.rest.served_raw(rt, self.rest.get(call)))
            if verb == "update":
                body = self._body(request)
                call.admission = self.admission.begin(call, ("UPDATE",))
                return self._finish(call, self.rest.update(call, body))
            raw = request.body
            ctype = request.headers.get("Content-Type", "")
            decoded = self._decode(request, _patch_decode_type(ctype))
            call.admission = self.admission.begin(call, ("UPDATE",))
            return self._finish(call, self.rest.patch(call, raw, ctype, decoded))
        if name == "scale":
            if verb == "get":
                if rt.webhook_conversion is not None:
                    return self._answered(self.subresources.get_scale(call))
                return self._json(200, run_now(self.subresources.get_scale(call)))
            raw = request.body
            ctype = request.headers.get("Content-Type", "")
            if verb == "update":
                body, patch_type = self._decode(request, ctype), None
            else:
                body, patch_type = self._decode(request, _patch_decode_type(ctype)), ctype
            call.admission = self.admission.begin(call, ("UPDATE",))
            scale = self.subresources.write_scale(call, body, patch_type)
            return self._finish(call, _written(200, scale))
        if name == "log":
            return self._log(request, call)
        if name == "binding":
            body = self._body(request)
            call.admission = self.admission.begin(call, ("CREATE",))
            return self._finish(call, _written(201, self.subresources.bind(call, body, call.name)))
        if name == "eviction":
            body = self._body(request)
            call.admission = self.admission.begin(call, ("CREATE",))
            return self._finish(call, _written(201, self.subresources.evict(call, body)))
        if name == "token":
            body = self._body(request)
            call.admission = self.admission.begin(call, ("CREATE",))
            return self._finish(call, _written(201, self.auth.token_request(call, body)))
        if name == "finalize":
            body = self._body(request)
            call.admission = self.admission.begin(call, ("UPDATE",))
            return self._finish(call, self.subresources.finalize_namespace(call, body))
        if name in ("ephemeralcontainers", "resize") and verb == "get":
            return self._json(200, self.rest.served_raw(rt, self.rest.get(call)))
        if name in _CONNECT_UNSUPPORTED:
            return self._connect(request, call)
        raise StatusError.method_not_allowed()

    def _connect(self, request: Request, call: Call) -> Response | Awaitable[Response]:
        """exec, attach, port-forward and proxy: admitted as CONNECT, as kube-apiserver does
        before it connects anything; this server then refuses them (it streams none)."""
        self.rest.get(call)  # a missing object is still a 404
        if "dryRun" in call.query:
            raise StatusError.bad_request("dryRun is not supported")
        call.admission = self.admission.begin(call, ("CONNECT",))
        if call.admission is None:
            raise _connect_unsupported(call)
        return self._finish(call, self._connect_admitted(request, call))

    async def _connect_admitted(self, request: Request, call: Call) -> Written:
        assert call.admission is not None
        await call.admission.connect(_connect_options(call, request))
        raise _connect_unsupported(call)
        raise StatusError.method_not_allowed()

    async def _answered(self, pending: Awaitable[bytes | dict[str, Any]]) -> Response:
        return self._json(200, await pending)

    async def _create_pod_later(self, call: Call, body: Any) -> Written:
        # ServiceAccount admission waits a little for a new namespace's `default` account,
        # which the service account controller creates soon after the namespace.
        await self.auth.pods.wait_for_default(call.namespace)
        return await self.rest.create(call, body)

    async def _log(self, request: Request, call: Call) -> ResponseStream:
        log_request = self.subresources.log_request(call)
        stream = request.stream(200, {"Content-Type": "text/plain", "Audit-Id": call.audit_id})
        try:
            async for chunk in self.subresources.logs.stream(log_request):
                await stream.write(chunk)
            await stream.finish()
        except ConnectionResetError:
            pass  # the client stopped following the log
        return stream


# Connections through the API server to a container or a port: kube-apiserver hands them to
# the node's kubelet, which this server does not have. They are refused with 400, as
# kube-apiserver refuses a connection to a pod it cannot reach (no node assigned); client-go
# reads the Status of a failed upgrade (SPDY and WebSocket alike) and kubectl prints it.
_CONNECT_UNSUPPORTED = {
    "exec": "exec (kubectl exec and cp)",
    "attach": "attach (kubectl attach)",
    "portforward": "port forwarding (kubectl port-forward)",
    "proxy": "proxying",
}


def _audit_id(request: Request) -> str:
    """The client's Audit-ID when it sent a usable one (kube-apiserver echoes it), else a new
    random (version 4) UUID."""
    given = request.headers.get("Audit-Id")
    if given and len(given) <= 256 and given.isascii() and given.isprintable():
        return str(given)
    return new_uid()


def _connect_unsupported(call: Call) -> StatusError:
    what = _CONNECT_UNSUPPORTED[call.info.subresource or ""]
    return StatusError.bad_request(
        f'{call.rt.plural} "{call.name}": {what} is not supported: this API server has no '
        "kubelet or container runtime behind it to connect to"
    )


async def _written(code: int, pending: Awaitable[dict[str, Any]]) -> Written:
    return code, await pending


def _connect_options(call: Call, request: Request) -> dict[str, Any]:
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
