"""The embedded Kubernetes API server: its parts put together, started and stopped.

`APIServer` serves HTTPS with a fresh CA and bearer token on loopback; use it in-process as
`async with APIServer() as server:` (the kubeconfig is `server.kubeconfig_dict()` or written
with `server.write_kubeconfig(path)`), or run it with `kubeforge apiserver`.

This module builds each stage from the ones below it and wires what the stages above hand
down: the commit observers (`storage/commits.py`), the kind-specific steps of the write
pipeline (`handlers/writes.py`), and the handlers the router sends requests to
(`router.py`). It also creates what a new cluster has (namespaces, the `kubernetes` Service,
APIServices, APF's mandatory objects, the bootstrap RBAC policy).
"""

from __future__ import annotations

import gc
import logging
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from kubeforge._apiserver.admission import Admission, volumes
from kubeforge._apiserver.auth import Auth
from kubeforge._apiserver.auth.bootstrap import bootstrap_objects
from kubeforge._apiserver.auth.csradmission import CertificateAdmission
from kubeforge._apiserver.auth.openidmetadata import JWKS_PATH, OpenIDMetadata
from kubeforge._apiserver.auth.tokens import TokenIssuer, load_or_generate_key
from kubeforge._apiserver.config import ServerConfig
from kubeforge._apiserver.controllers.allocators import ServiceAllocators, advertised_address
from kubeforge._apiserver.controllers.apfconfig import APFConfiguration
from kubeforge._apiserver.controllers.apiservices import LocalAPIServices
from kubeforge._apiserver.controllers.crds import CRDController
from kubeforge._apiserver.controllers.defaultservicecidr import ensure_default_service_cidr
from kubeforge._apiserver.controllers.gc import GarbageCollector
from kubeforge._apiserver.controllers.namespaces import NamespaceController
from kubeforge._apiserver.discovery.openapi import OpenAPIV3
from kubeforge._apiserver.discovery.openapiv2 import OpenAPIV2
from kubeforge._apiserver.handlers.call import Call
from kubeforge._apiserver.handlers.connect import ConnectHandler
from kubeforge._apiserver.handlers.create import CreateHandler
from kubeforge._apiserver.handlers.delete import DeleteHandler
from kubeforge._apiserver.handlers.get import ReadHandler
from kubeforge._apiserver.handlers.patch import PatchHandler
from kubeforge._apiserver.handlers.pods import LogSource, NoLogs, PodSubresources
from kubeforge._apiserver.handlers.scale import ScaleHandler
from kubeforge._apiserver.handlers.subresources import SubresourceHandler
from kubeforge._apiserver.handlers.update import UpdateHandler
from kubeforge._apiserver.handlers.watch import WatchStreams
from kubeforge._apiserver.handlers.writes import Writes, run_now
from kubeforge._apiserver.http.inprocess import UnframedAnswer
from kubeforge._apiserver.http.server import HTTPServer
from kubeforge._apiserver.kubeconfig import kubeconfig_dict, write_kubeconfig
from kubeforge._apiserver.request.info import RequestInfo
from kubeforge._apiserver.request.metrics import RequestMetrics
from kubeforge._apiserver.router import Router
from kubeforge._apiserver.storage.codec import Codec
from kubeforge._apiserver.storage.commits import Commits
from kubeforge._apiserver.storage.componentstatuses import ComponentStatuses
from kubeforge._apiserver.storage.store import Store
from kubeforge._apiserver.streaming.runtime import StreamingRuntime
from kubeforge._apiserver.tls import (
    ServingCertificates,
    client_certificate,
    generate_certificates,
    load_or_generate,
)
from kubeforge._apiserver.types.builtin_schemas import BuiltinSchemas
from kubeforge._apiserver.types.conversion import Conversions
from kubeforge._apiserver.types.registry import Registry
from kubeforge._apiserver.types.resource import GroupResource
from kubeforge._apiserver.types.strategies import SYSTEM_PRIORITY_CLASSES
from kubeforge._apiserver.types.typesupport import TypeSupport
from kubeforge._apiserver.webhookclient.client import WebhookClient
from kubeforge._apiserver.webhookclient.services import LocalServices

__all__ = ["APIServer", "serve", "tune_gc"]

log = logging.getLogger("kubeforge.apiserver")

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_SERVICES = GroupResource("", "services")


class APIServer:
    """A Kubernetes API server in this process."""

    def __init__(
        self,
        config: ServerConfig | None = None,
        *,
        logs: LogSource | None = None,
        streams: StreamingRuntime | None = None,
        **overrides: Any,
    ) -> None:
        self.config = config or ServerConfig()
        for key, value in overrides.items():
            setattr(self.config, key, value)
        cfg = self.config
        self.token = cfg.token or self._stored_token() or secrets.token_urlsafe(32)
        # storage and types
        self.store = Store(history_size=cfg.history_size, backend=cfg.backend)
        self.commits = Commits(self.store)
        self.registry = Registry()
        self.schemas = BuiltinSchemas.for_version(cfg.kubernetes_version)
        self.types = TypeSupport(self.schemas)
        # Admission and conversion webhooks are called by the same client, so a Service
        # reference leads to the same place (ServerConfig.resolve_service).
        self.services = LocalServices(self._service)
        self.webhook_client = WebhookClient(cfg.resolve_service or self.services.resolve)
        self.codec = Codec(Conversions(self.webhook_client, cfg.conversion_webhook_timeout))
        self.writes = writes = Writes(self.store, self.commits, self.types, self.codec)
        # the server's own loops
        self.crds = CRDController(self.store, self.commits, self.registry, self.types, writes)
        self.apiservices = LocalAPIServices(self.store, self.commits, self.registry, writes)
        self.apf = APFConfiguration(self.store, self.commits, self.registry, writes)
        self.allocators = ServiceAllocators(
            self.store, self.registry, self.codec, writes, cfg.service_cidr
        )
        self.components = ComponentStatuses()
        self.gc: GarbageCollector | None = None
        self.namespaces: NamespaceController | None = None
        # authentication, authorization and admission
        issuer = TokenIssuer(load_or_generate_key(cfg.credentials_dir), cfg.service_account_issuer)
        anonymous = None if cfg.anonymous_paths is None else frozenset(cfg.anonymous_paths)
        self.auth = Auth(self.store, self.schemas, self.token, issuer, anonymous)
        self.admission = Admission(
            self.store, self.registry, self.types, self.codec, self.webhook_client, self.auth.check
        )
        self.watches = WatchStreams(self.store, self.codec, cfg.bookmark_interval)
        self.metrics = RequestMetrics()
        self.router = self._handlers(logs or NoLogs(), streams)
        subresources = self.router.subresources
        if cfg.garbage_collection:
            self.gc = GarbageCollector(self.store, self.registry, self.codec, writes)
        deletes_namespaces = cfg.namespace_deletion
        if deletes_namespaces if deletes_namespaces is not None else cfg.garbage_collection:
            self.namespaces = NamespaceController(
                self.store, self.registry, self.codec, writes, subresources.finalize_namespace
            )
        self._wire()
        self.certificates: ServingCertificates | None = None
        self.port = cfg.port
        self._http: HTTPServer | None = None
        self._bootstrap()

    def _handlers(self, logs: LogSource, streams: StreamingRuntime | None) -> Router:
        """The handlers of each verb family, and the router that sends requests to them."""
        cfg = self.config
        store, writes, codec, admission = self.store, self.writes, self.codec, self.admission
        updates = UpdateHandler(store, writes, admission)
        patches = PatchHandler(store, writes, codec, self.types, admission)
        pods = PodSubresources(store, self.registry, writes, codec, logs)
        subresources = SubresourceHandler(
            store,
            writes,
            codec,
            admission,
            updates,
            patches,
            ScaleHandler(store, writes, codec),
            pods,
            ConnectHandler(
                store,
                admission,
                lambda user, info: self.auth.authorize(user, "POST", "", info, {}),
                streams,
            ),
            self.auth.token_request,
        )
        creates = CreateHandler(
            writes,
            admission,
            self.auth.review,
            pods.bind,
            self.crds.refuses_instances,
            # Only pods of a server that admits them wait for their namespace's account.
            self.auth.pods,
            self.registry.get("", "v1", "pods") if cfg.service_account_admission else None,
        )
        return Router(
            config=cfg,
            registry=self.registry,
            auth=self.auth,
            metrics=self.metrics,
            openapi=OpenAPIV3(self.registry, self.schemas),
            openapi_v2=OpenAPIV2(self.registry, self.schemas),  # built on first request
            reads=ReadHandler(store, codec, self.components),
            watches=self.watches,
            creates=creates,
            updates=updates,
            patches=patches,
            deletes=DeleteHandler(store, writes, codec, admission),
            subresources=subresources,
        )

    def _wire(self) -> None:
        """What the stages above add to the write pipeline, and who hears of each commit
        (in this order)."""
        writes = self.writes
        writes.mutators.append(self.allocators.mutate)
        if self.config.service_account_admission:
            writes.mutators.append(self.auth.pods)
        writes.mutators.append(volumes.DefaultStorageClass(self.store))
        if self.config.pvc_protection or self.config.pv_protection:
            protection = volumes.InUseProtection(
                claims=self.config.pvc_protection, volumes=self.config.pv_protection
            )
            writes.mutators.append(protection)
        writes.validators.append(self.crds.validate)
        writes.admitters.append(self.auth.escalation)
        writes.admitters.append(CertificateAdmission(self.auth.decide))
        writes.admitters.append(volumes.ClaimResize(self.store))
        observers = self.commits.observers
        observers.append(self.crds.observe)
        observers.append(self.apiservices.observe)
        observers.append(self.apf.observe)
        observers.append(self.allocators.observe)
        if self.gc is not None:
            observers.append(self.gc.observe)
        if self.namespaces is not None:
            observers.append(self.namespaces.observe)
        observers.append(self.auth.observe)
        observers.append(self.admission.observe)

    def _service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        stored = self.store.get(_SERVICES, namespace, name)
        return None if stored is None else stored.obj

    # lifecycle ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Where the server listens: `https://127.0.0.1:<port>`."""
        scheme = "https" if self.config.tls else "http"
        host = self.config.host
        if ":" in host:
            host = f"[{host}]"
        return f"{scheme}://{host}:{self.port}"

    @property
    def ca_pem(self) -> bytes:
        """The CA certificate clients verify the server with (PEM)."""
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
            self.router.handle,
            max_body_bytes=cfg.max_request_bytes,
            error=self.router.error_response,
            limits=cfg.connections,
        )
        self.port = self.config.port = await self._http.start(cfg.host, cfg.port, ssl_context)
        if cfg.local_socket is not None:
            await self._http.serve_unix(str(cfg.local_socket))
        # The `kubernetes` Service's endpoints point at the port actually bound.
        self.allocators.ensure_kubernetes_service(cfg.host, self.port)
        jwks_uri = cfg.service_account_jwks_uri
        if jwks_uri is None:
            # As kube-apiserver: https://<external address>/openid/v1/jwks.
            address = advertised_address(cfg.host)
            host = f"[{address}]" if ":" in address else address
            jwks_uri = f"https://{host}:{self.port}{JWKS_PATH}"
        self.router.openid = OpenIDMetadata(self.auth.issuer, jwks_uri)
        if self.gc is not None:
            self.gc.start()
        if self.namespaces is not None:
            self.namespaces.start()
        log.info("serving on %s", self.url)

    async def exchange(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> UnframedAnswer:
        """Answer one request of a client in this process, given as its parts (header field
        names in lower case), through the handler a connection's requests go to: the same
        authentication, authorization and limits, no socket (http/inprocess.py)."""
        http = self._http
        if http is None or http.in_process is None:
            raise ConnectionRefusedError("the API server is not serving")
        return await http.in_process.exchange(method, target, headers, body)

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
        await self.webhook_client.close()

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
                run_now(self.writes.create(call, body))
        self.allocators.ensure_kubernetes_service(self.config.host, self.port)
        ensure_default_service_cidr(
            self.store, self.commits, self.registry, self.writes, self.config.service_cidr
        )
        self.apiservices.register_builtin()
        self.apf.bootstrap()
        self._bootstrap_rbac()
        self._bootstrap_priority_classes()

    def _bootstrap_priority_classes(self) -> None:
        """The two system PriorityClasses, as kube-apiserver's
        scheduling/bootstrap-system-priority-classes hook creates them when missing
        (pkg/registry/scheduling/rest/storage_scheduling.go; pkg/apis/scheduling/helpers.go)."""
        rt = self.registry.get("scheduling.k8s.io", "v1", "priorityclasses")
        assert rt is not None
        for name, value, description in SYSTEM_PRIORITY_CLASSES:
            if self.store.get(rt.group_resource, "", name) is not None:
                continue
            body = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "description": description,
            }
            info = RequestInfo(rt.group, "v1", None, rt.plural, None, None, "create")
            run_now(self.writes.create(Call(info, rt, {"fieldManager": "kube-apiserver"}), body))

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
            run_now(self.writes.create(Call(info, rt, {"fieldManager": "kube-apiserver"}), obj))


def tune_gc() -> None:
    """Tune the cyclic garbage collector for a process that is mainly a server.

    A server holds many long-lived objects (the schemas, every stored object) and allocates
    quickly under load; with the default thresholds the collector rescans the long-lived
    heap many times a second. Freezing what exists after start-up and collecting less often
    removes most of that cost. A young collection walks every young container still alive,
    and the young generation is larger than its count says: the count is allocations less
    deallocations of any age, so a server replacing stored objects (old ones freed, new ones
    made) fills it while the count stands still. Collected every 1,000,000 (net)
    allocations, a development cluster starting 10,000 pods collects its young objects about
    once (half a second) rather than twenty times (2 s in all); objects that live a while
    but not for good (a decoded version soon replaced) are mostly gone before a collection
    looks at them. Call it from a program's entry point, not from a library.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(1_000_000, 50, 100)


@asynccontextmanager
async def serve(config: ServerConfig | None = None, **overrides: Any) -> AsyncIterator[APIServer]:
    """Run an API server for the duration of an `async with` block."""
    server = APIServer(config, **overrides)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
