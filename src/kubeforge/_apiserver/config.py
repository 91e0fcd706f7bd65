"""How to run an API server: address, credentials, limits, and which of kube-controller-
manager's loops it runs itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kubeforge._apiserver.auth.tokens import DEFAULT_ISSUER
from kubeforge._apiserver.controllers.allocators import DEFAULT_SERVICE_CIDR
from kubeforge._apiserver.http.server import ConnectionLimits
from kubeforge._apiserver.storage.store import Backend
from kubeforge._apiserver.types.conversion import TIMEOUT_SECONDS
from kubeforge._apiserver.webhookclient.client import ServiceResolver

__all__ = ["ServerConfig"]


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
    # StorageObjectInUseProtection: the protection finalizers on new claims and volumes; on
    # in a development cluster whose pvc-/pv-protection controllers remove them.
    pvc_protection: bool = False
    pv_protection: bool = False
    # Paths open to requests without credentials (as system:anonymous, whom RBAC then
    # checks); None opens every path, as kube-apiserver's --anonymous-auth=true does.
    anonymous_paths: tuple[str, ...] | None = ("/healthz", "/livez", "/readyz")
    # How a webhook's Service reference is reached: (namespace, name, port) -> (host, port);
    # None: this machine, at the Service's target port (webhookclient/services.py).
    resolve_service: ServiceResolver | None = None
    # Also serve plain HTTP on this Unix socket, for clients on this machine that may open
    # it (a development cluster's own controllers and nodes): no TLS to pay for. Requests
    # authenticate as over TCP; keep the socket in a directory only its owner can enter.
    local_socket: Path | None = None
    # Seconds a CRD's conversion webhook has to answer (kube-apiserver's 30; tests shorten it).
    conversion_webhook_timeout: int = TIMEOUT_SECONDS
