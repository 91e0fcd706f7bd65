"""How the client finds a cluster and authenticates to it, with kubectl's rules.

`load_config()` looks where kubectl looks: an explicit kubeconfig, else the files listed in
KUBECONFIG (merged), else ~/.kube/config, and falls back to the pod's service account when
none of them selects a context. The result is a `ClusterConfig`: the server URL, what to trust,
the client certificate, and a `CredentialProvider` for bearer tokens.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from kubeforge._client.auth import (
    EXEC_API_VERSIONS,
    CredentialError,
    CredentialProvider,
    ExecPlugin,
    ExecProvider,
    StaticToken,
    TokenFile,
)
from kubeforge._client.inprocess import InProcessServer

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "SERVICE_ACCOUNT_DIR_ENV",
    "ClusterConfig",
    "ConfigError",
    "CredentialError",
    "CredentialProvider",
    "KubeconfigContext",
    "kubeconfig_context",
    "kubeconfig_contexts",
    "load_config",
    "load_incluster",
    "load_kubeconfig",
    "load_kubeconfig_data",
]

log = logging.getLogger("kubeforge.client.config")

# Where the kubelet mounts a pod's service account; tests point it elsewhere.
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# When set, the directory that holds the service account's files instead: a process the
# development cluster runs for a pod on this machine cannot have them at the absolute path.
SERVICE_ACCOUNT_DIR_ENV = "KUBEFORGE_SERVICE_ACCOUNT_DIR"

# The cluster extension whose value is handed to exec plugins as spec.cluster.config.
EXEC_CLUSTER_EXTENSION = "client.authentication.k8s.io/exec"

_INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
_PROXY_SCHEMES = ("http", "https", "socks5")
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ConfigError(Exception):
    """The configuration is missing, unreadable or inconsistent; the message says where."""


@dataclass
class ClusterConfig:
    """Everything needed to reach one API server as one user."""

    server: str
    ca_data: bytes | None = field(default=None, repr=False)
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    client_cert_data: bytes | None = field(default=None, repr=False)
    client_key_data: bytes | None = field(default=None, repr=False)
    credentials: CredentialProvider | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    namespace: str = "default"
    context: str | None = None
    proxy_url: str | None = None
    # The server's Unix socket, when this client runs on its machine and may open it: plain
    # HTTP over it rather than TLS to `server` (a development cluster's own components).
    unix_socket: str | None = None
    # The server itself, when it runs in this client's process: whole exchanges are handed
    # to it, streams (watches) still go over a connection (a development cluster's own
    # components).
    in_process: InProcessServer | None = field(default=None, repr=False, compare=False)
    _ssl: ssl.SSLContext | bool | None = field(default=None, init=False, repr=False, compare=False)

    def ssl_context(self) -> ssl.SSLContext | bool:
        """The TLS context for this server, built once; False when verification is skipped.

        With `insecure_skip_tls_verify` and a client certificate, a non-verifying context
        carrying the certificate is returned instead, so the certificate is still presented.
        """
        if self._ssl is None:
            if self.insecure_skip_tls_verify and not self.client_cert_data:
                self._ssl = False
            else:
                self._ssl = self.ssl_context_with_client_cert(
                    self.client_cert_data, self.client_key_data
                )
        return self._ssl

    def ssl_context_with_client_cert(
        self, cert_data: bytes | None, key_data: bytes | None
    ) -> ssl.SSLContext:
        """A new TLS context for this server presenting the given PEM certificate and key.

        For credentials that arrive later, e.g. an exec plugin returning a client certificate.
        """
        # A bare client context rather than create_default_context(): newer Pythons make the
        # default context reject CA certificates that Go (and so every cluster) accepts.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if self.insecure_skip_tls_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.ca_data:
            try:
                ctx.load_verify_locations(cadata=self.ca_data.decode("ascii", "ignore"))
            except (ssl.SSLError, ValueError) as exc:
                raise ConfigError(
                    f"invalid certificate authority data for {self.server}: {exc}"
                ) from exc
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if cert_data:
            if not key_data:
                raise ConfigError(f"a client certificate for {self.server} needs a client key")
            _load_client_cert(ctx, cert_data, key_data)
        return ctx


def _load_client_cert(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    # The ssl module loads certificates only from files: write them to a private temporary
    # directory that is removed as soon as they are loaded.
    with tempfile.TemporaryDirectory(prefix="kubeforge-tls-") as tmp:
        cert_path = os.path.join(tmp, "client.crt")
        key_path = os.path.join(tmp, "client.key")
        for path, data in ((cert_path, cert), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        try:
            ctx.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as exc:
            raise ConfigError(f"invalid client certificate or key: {exc}") from exc


# -- loading ---------------------------------------------------------------------------------


def load_kubeconfig(
    path: str | os.PathLike[str] | None = None, *, context: str | None = None
) -> ClusterConfig:
    """The cluster of `context` (default: current-context) in `path`, or in the default files.

    Without `path`, the files in KUBECONFIG (merged) or ~/.kube/config are read.
    """
    if path is not None:
        file = os.fspath(path)
        if not os.path.exists(file):
            raise ConfigError(f"kubeconfig file {file} does not exist")
        merged = _merge([file])
    else:
        files, missing = _default_files()
        merged = _merge(files)
        if not merged.files:
            raise ConfigError(f"no kubeconfig found: {missing}")
    return _resolve(merged, context)


def load_kubeconfig_data(
    data: bytes | str,
    *,
    context: str | None = None,
    source: str = "kubeconfig data",
    inline_only: bool = False,
) -> ClusterConfig:
    """The cluster of `context` (default: current-context) in a kubeconfig given as its text,
    as client-go's RESTConfigFromKubeConfig reads one (a kubeconfig a Secret holds, say);
    `source` names it in errors.

    With `inline_only`, a kubeconfig that would have this process run a command (an exec
    plugin) or read one of its files (tokenFile, certificate-authority, client-certificate,
    client-key) is refused with ConfigError: whoever wrote the text could otherwise run code
    here, or have this process send a token of its own to a server of theirs.
    """
    raw = data.encode() if isinstance(data, str) else data
    merged = _Merged(files=[source])
    _merge_doc(merged, _parse(raw, source), source, "")
    if inline_only:
        _check_inline(merged, context, source)
    return _resolve(merged, context)


def kubeconfig_contexts(path: str | os.PathLike[str]) -> list[str]:
    """The names of the contexts a kubeconfig file defines, in its order."""
    file = os.fspath(path)
    if not os.path.exists(file):
        raise ConfigError(f"kubeconfig file {file} does not exist")
    return list(_merge([file]).contexts)


def load_incluster(*, directory: str | os.PathLike[str] | None = None) -> ClusterConfig:
    """The cluster of the pod this runs in, through its service account.

    The account's files (token, ca.crt, namespace) are read from `directory`, else from the
    directory $KUBEFORGE_SERVICE_ACCOUNT_DIR names when it is set (a pod of the development
    cluster run as a local process), else from SERVICE_ACCOUNT_DIR.
    """
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError(
            "unable to load in-cluster configuration, "
            "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"
        )
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    if directory is None:
        directory = os.environ.get(SERVICE_ACCOUNT_DIR_ENV) or SERVICE_ACCOUNT_DIR
    base = Path(directory)
    token = TokenFile(base / "token")
    try:
        token.read()
    except CredentialError as exc:
        raise ConfigError(f"unable to load in-cluster configuration: {exc}") from exc
    ca: bytes | None = None
    try:
        ca = (base / "ca.crt").read_bytes()
    except OSError as exc:
        # client-go goes on with the system trust store; say why TLS may fail later.
        log.error("expected to load the in-cluster root CA from %s: %s", base / "ca.crt", exc)
    return ClusterConfig(
        server=f"https://{host}:{port}",
        ca_data=ca,
        credentials=token,
        namespace=_incluster_namespace(base),
    )


def load_config(
    *, kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None
) -> ClusterConfig:
    """The cluster as kubectl would pick it, falling back to in-cluster like client-go.

    Order: `kubeconfig` > KUBECONFIG (merged) > ~/.kube/config; when those select no context
    (no file, no current-context, no `context`) and KUBERNETES_SERVICE_HOST/PORT are set, the
    pod's service account is used.
    """
    if kubeconfig:
        return load_kubeconfig(kubeconfig, context=context)
    files, missing = _default_files()
    merged = _merge(files)
    if not context and not merged.current_context and _in_cluster():
        return load_incluster()
    if not merged.files:
        raise ConfigError(
            f"no configuration found: {missing}, and not running in a cluster "
            "(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)"
        )
    return _resolve(merged, context)


@dataclass(frozen=True)
class KubeconfigContext:
    """A context of merged kubeconfig files, by the names they give it: a kubeconfig listed
    before `files` in KUBECONFIG can add a context over the same cluster and user."""

    files: tuple[str, ...]
    name: str
    cluster: str
    user: str


def kubeconfig_context(
    *, kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None
) -> KubeconfigContext | None:
    """The context load_config(kubeconfig=, context=) picks, with the files it merged; None
    when it picks the pod's service account instead. ConfigError as load_config raises it."""
    if kubeconfig:
        merged = _merge([os.fspath(kubeconfig)])
    else:
        merged = _merge(_default_files()[0])
        if not context and not merged.current_context and _in_cluster():
            return None
    name = context or merged.current_context
    entry = merged.contexts.get(name)
    if entry is None:
        _resolve(merged, context)  # raises the error load_config would
        raise ConfigError(f'context "{name}" was not found')
    where = entry.where("context")
    return KubeconfigContext(
        tuple(merged.files),
        name,
        _str(entry.body, "cluster", where),
        _str(entry.body, "user", where),
    )


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and bool(
        os.environ.get("KUBERNETES_SERVICE_PORT")
    )


def _incluster_namespace(base: Path) -> str:
    # POD_NAMESPACE (set through the downward API) comes first, as in client-go.
    namespace = os.environ.get("POD_NAMESPACE", "")
    if namespace:
        return namespace
    try:
        namespace = (base / "namespace").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        namespace = ""
    return namespace or "default"


def _default_files() -> tuple[list[str], str]:
    """The kubeconfig files to merge, and how to say that none of them exists."""
    env = os.environ.get("KUBECONFIG", "")
    if env:
        files: list[str] = []
        for entry in env.split(os.pathsep):
            if entry and entry not in files:
                files.append(entry)
        return files, f"none of the files in KUBECONFIG={env} exists"
    home = os.path.join(os.path.expanduser("~"), ".kube", "config")
    return [home], f"{home} does not exist and KUBECONFIG is not set"


# -- merging ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    """A named cluster, user or context, and the directory its relative paths start from."""

    name: str
    body: dict[str, Any]
    file: str
    base: str

    def where(self, kind: str) -> str:
        return f'{kind} "{self.name}" in {self.file}'


@dataclass
class _Merged:
    files: list[str] = field(default_factory=list)
    clusters: dict[str, _Entry] = field(default_factory=dict)
    users: dict[str, _Entry] = field(default_factory=dict)
    contexts: dict[str, _Entry] = field(default_factory=dict)
    current_context: str = ""


_SECTIONS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))


def _merge(files: list[str]) -> _Merged:
    """Merge kubeconfig files: the first file to define a name or current-context wins."""
    merged = _Merged()
    for file in files:
        doc = _read(file)
        if doc is None:
            continue
        merged.files.append(file)
        _merge_doc(merged, doc, file, os.path.dirname(os.path.abspath(file)))
    return merged


def _merge_doc(merged: _Merged, doc: dict[str, Any], file: str, base: str) -> None:
    """Merge one kubeconfig document into `merged`, whose names win over the document's."""
    for section, key in _SECTIONS:
        target: dict[str, _Entry] = getattr(merged, section)
        items = doc.get(section) or []
        if not isinstance(items, list):
            raise ConfigError(f"kubeconfig {file}: {section} must be a list")
        seen: set[str] = set()
        for item in items:
            if not isinstance(item, dict):
                raise ConfigError(f"kubeconfig {file}: every entry of {section} must be a map")
            name = item.get("name") or ""
            if not isinstance(name, str):
                raise ConfigError(f"kubeconfig {file}: a name in {section} is not a string")
            if name in seen:
                raise ConfigError(f'kubeconfig {file}: duplicate name "{name}" in {section}')
            seen.add(name)
            body = item.get(key) or {}
            if not isinstance(body, dict):
                raise ConfigError(f'kubeconfig {file}: {key} of "{name}" must be a map')
            if name not in target:
                target[name] = _Entry(name, body, file, base)
    current = doc.get("current-context") or ""
    if not isinstance(current, str):
        raise ConfigError(f"kubeconfig {file}: current-context must be a string")
    if current and not merged.current_context:
        merged.current_context = current


def _read(file: str) -> dict[str, Any] | None:
    """A kubeconfig file's content ({} when empty), or None when the file does not exist."""
    try:
        data = Path(file).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"unable to read kubeconfig {file}: {exc}") from exc
    return _parse(data, file)


def _parse(data: bytes, source: str) -> dict[str, Any]:
    """A kubeconfig's text as a document ({} when empty)."""
    try:
        doc = yaml.load(data, Loader=_Loader)  # a safe loader (C or pure Python)
    except yaml.YAMLError as exc:
        raise ConfigError(f"error loading kubeconfig {source}: {exc}") from exc
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"error loading kubeconfig {source}: not a Config object")
    return doc


# What a kubeconfig that must carry everything inline may not name: files of this machine,
# and commands it would run (Flux refuses exec plugins in the kubeconfigs its Secrets hold
# by default the same way: fluxcd/pkg runtime/client KubeConfigOptions.InsecureExecProvider).
_LOCAL_CLUSTER_KEYS = ("certificate-authority",)
_LOCAL_USER_KEYS = ("tokenFile", "client-certificate", "client-key", "exec", "auth-provider")


def _check_inline(merged: _Merged, context: str | None, source: str) -> None:
    """Refuse a context whose cluster or user reads a local file or runs a command."""
    entry = merged.contexts.get(context or merged.current_context)
    if entry is None:
        return  # _resolve says what is missing
    for section, name_key, keys in (
        (merged.clusters, "cluster", _LOCAL_CLUSTER_KEYS),
        (merged.users, "user", _LOCAL_USER_KEYS),
    ):
        name = entry.body.get(name_key)
        found = section.get(name) if isinstance(name, str) else None
        if found is None:
            continue
        for key in keys:
            if found.body.get(key):
                raise ConfigError(
                    f"{found.where(name_key)}: {key} is not allowed here: the kubeconfig of "
                    f"{source} must carry its credentials inline (no local files, no commands)"
                )


# -- resolving one context -------------------------------------------------------------------


def _resolve(merged: _Merged, context: str | None) -> ClusterConfig:
    """The ClusterConfig of one context of merged kubeconfig files."""
    sources = ", ".join(merged.files)
    name = context or merged.current_context
    if not name:
        raise ConfigError(
            f"no context selected: current-context is not set in {sources} and no context was given"
        )
    ctx = merged.contexts.get(name)
    if ctx is None:
        if context:
            raise ConfigError(f'context "{name}" does not exist in {sources}')
        raise ConfigError(f'current-context "{name}" was not found in {sources}')
    where = ctx.where("context")
    cluster_name = _str(ctx.body, "cluster", where)
    user_name = _str(ctx.body, "user", where)
    namespace = _str(ctx.body, "namespace", where) or "default"
    if not cluster_name:
        raise ConfigError(f'cluster was not specified for context "{name}" in {ctx.file}')
    cluster = merged.clusters.get(cluster_name)
    if cluster is None:
        raise ConfigError(
            f'cluster "{cluster_name}" was not found for context "{name}" in {sources}'
        )
    user = None
    if user_name:
        user = merged.users.get(user_name)
        if user is None:
            raise ConfigError(f'user "{user_name}" was not found for context "{name}" in {sources}')

    errors: list[str] = []
    server = _Server.parse(cluster, errors)
    auth = _User.parse(user, errors) if user is not None else _User()
    if errors:
        raise ConfigError(f'invalid configuration for context "{name}": ' + "; ".join(errors))

    config = ClusterConfig(
        server=server.url(auth.has_client_cert),
        ca_data=server.ca,
        insecure_skip_tls_verify=server.insecure,
        tls_server_name=server.tls_server_name or None,
        namespace=namespace,
        context=name,
        proxy_url=server.proxy_url or None,
    )
    # Like client-go, user credentials go only over TLS.
    if config.server.startswith("https://"):
        auth.apply(config, server, user)
    elif user is not None and auth.has_credentials:
        log.warning(
            'the credentials of user "%s" are not sent to %s: it is not https',
            user.name,
            config.server,
        )
    return config


def _str(body: dict[str, Any], key: str, where: str) -> str:
    value = body.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string, not {type(value).__name__}")
    return value


def _bool(body: dict[str, Any], key: str, where: str) -> bool:
    value = body.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} must be true or false, not {value!r}")
    return value


def _path(entry: _Entry, key: str, kind: str) -> str:
    """A file path of an entry, relative paths taken from the directory of its file."""
    value = _str(entry.body, key, entry.where(kind))
    if value and not os.path.isabs(value):
        value = os.path.join(entry.base, value)
    return value


def _b64(entry: _Entry, key: str, kind: str) -> bytes | None:
    value = _str(entry.body, key, entry.where(kind))
    if not value:
        return None
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(f"{entry.where(kind)}: {key} is not valid base64: {exc}") from exc


def _read_file(path: str, what: str, owner: str, errors: list[str]) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        errors.append(f"unable to read {what} {path} for {owner} due to {exc}")
        return None


@dataclass
class _Server:
    """The cluster part of a context."""

    name: str
    server: str
    ca: bytes | None
    insecure: bool
    tls_server_name: str
    proxy_url: str
    exec_extension: Any

    @classmethod
    def parse(cls, entry: _Entry, errors: list[str]) -> _Server:
        where = entry.where("cluster")
        body = entry.body
        name = entry.name
        server = _str(body, "server", where)
        ca_file = _path(entry, "certificate-authority", "cluster")
        ca = _b64(entry, "certificate-authority-data", "cluster")
        insecure = _bool(body, "insecure-skip-tls-verify", where)
        proxy_url = _str(body, "proxy-url", where)
        if not server:
            errors.append(f'no server found for cluster "{name}"')
        if proxy_url:
            scheme = urlsplit(proxy_url).scheme
            if scheme not in _PROXY_SCHEMES:
                errors.append(
                    f'invalid \'proxy-url\' "{proxy_url}" for cluster "{name}": unsupported '
                    f'scheme "{scheme}", must be http, https, or socks5'
                )
        if ca_file and ca:
            errors.append(
                f"certificate-authority-data and certificate-authority are both specified "
                f"for {name}. certificate-authority-data will override."
            )
        elif ca_file:
            ca = _read_file(ca_file, "certificate-authority", name, errors)
        if insecure and (ca or ca_file):
            errors.append(
                f"specifying a root certificates file with the insecure flag is not allowed "
                f'(cluster "{name}")'
            )
        return cls(
            name=name,
            server=server,
            ca=ca,
            insecure=insecure,
            tls_server_name=_str(body, "tls-server-name", where),
            proxy_url=proxy_url,
            exec_extension=_extension(body, EXEC_CLUSTER_EXTENSION, where),
        )

    def url(self, has_client_cert: bool) -> str:
        """The server URL without a trailing slash; https is assumed when TLS is configured."""
        url = self.server
        parts = urlsplit(url)
        if not parts.scheme or not parts.netloc:
            tls = bool(self.ca) or self.insecure or has_client_cert
            url = ("https://" if tls else "http://") + url
        return url.rstrip("/")

    def exec_cluster(self) -> dict[str, Any]:
        """The spec.cluster an exec plugin receives when it asks for cluster information."""
        info: dict[str, Any] = {"server": self.server}
        if self.tls_server_name:
            info["tls-server-name"] = self.tls_server_name
        if self.insecure:
            info["insecure-skip-tls-verify"] = True
        if self.ca:
            info["certificate-authority-data"] = base64.b64encode(self.ca).decode()
        if self.proxy_url:
            info["proxy-url"] = self.proxy_url
        if self.exec_extension is not None:
            info["config"] = self.exec_extension
        return info


def _extension(body: dict[str, Any], name: str, where: str) -> Any:
    extensions = body.get("extensions") or []
    if not isinstance(extensions, list):
        raise ConfigError(f"{where}: extensions must be a list")
    for item in extensions:
        if isinstance(item, dict) and item.get("name") == name:
            return item.get("extension")
    return None


@dataclass
class _User:
    """The user part of a context: which credentials it carries."""

    token: str = ""
    token_file: str = ""
    cert: bytes | None = None
    key: bytes | None = None
    username: str = ""
    password: str = ""
    exec: dict[str, Any] | None = None

    @property
    def has_client_cert(self) -> bool:
        return self.cert is not None

    @property
    def has_credentials(self) -> bool:
        return bool(
            self.token or self.token_file or self.cert or self.username or self.password
        ) or (self.exec is not None)

    @classmethod
    def parse(cls, entry: _Entry, errors: list[str]) -> _User:
        where = entry.where("user")
        body = entry.body
        name = entry.name
        provider = body.get("auth-provider")
        if provider is not None:
            kind = provider.get("name") if isinstance(provider, dict) else None
            raise ConfigError(
                f'{where}: the auth-provider "{kind}" is not supported (auth providers were '
                "removed from Kubernetes clients; use an exec credential plugin instead)"
            )
        for key in ("as", "as-uid", "as-groups", "as-user-extra"):
            if body.get(key):
                raise ConfigError(f"{where}: impersonation ({key}) is not supported")
        user = cls(
            token=_str(body, "token", where),
            token_file=_path(entry, "tokenFile", "user"),
            username=_str(body, "username", where),
            password=_str(body, "password", where),
        )
        methods = []
        if user.token:
            methods.append("token")
        if user.username or user.password:
            methods.append("basicAuth")
        if len(methods) > 1:
            errors.append(
                f"more than one authentication method found for {name}; "
                f"found [{' '.join(methods)}], only one is allowed"
            )
        user._parse_cert(entry, errors)
        exec_body = body.get("exec")
        if exec_body is not None:
            if not isinstance(exec_body, dict):
                raise ConfigError(f"{where}: exec must be a map")
            user.exec = exec_body
            _check_exec(entry, exec_body, errors)
        if user.token_file and not user.token:
            # Without a token to fall back on, client-go needs the file at load time.
            _read_file(user.token_file, "tokenFile", name, errors)
        return user

    def _parse_cert(self, entry: _Entry, errors: list[str]) -> None:
        name = entry.name
        cert_file = _path(entry, "client-certificate", "user")
        cert = _b64(entry, "client-certificate-data", "user")
        key_file = _path(entry, "client-key", "user")
        key = _b64(entry, "client-key-data", "user")
        if not cert_file and not cert:
            return
        if cert_file and cert:
            errors.append(
                f"client-cert-data and client-cert are both specified for {name}. "
                "client-cert-data will override."
            )
        if key_file and key:
            errors.append(
                f"client-key-data and client-key are both specified for {name}; "
                "client-key-data will override"
            )
        if not key_file and not key:
            errors.append(
                f"client-key-data or client-key must be specified for {name} to use the "
                "clientCert authentication method."
            )
        if cert_file and not cert:
            cert = _read_file(cert_file, "client-cert", name, errors)
        if key_file and not key:
            key = _read_file(key_file, "client-key", name, errors)
        self.cert = cert
        self.key = key

    def apply(self, config: ClusterConfig, server: _Server, entry: _Entry | None) -> None:
        """Set the credentials of `config`, with client-go's precedence."""
        config.client_cert_data = self.cert
        config.client_key_data = self.key
        if self.token_file:
            # The file wins over `token`; the token only covers for an unreadable file.
            config.credentials = TokenFile(self.token_file, fallback=self.token or None)
        elif self.token:
            config.credentials = StaticToken(self.token)
        elif self.username or self.password:
            config.username = self.username
            config.password = self.password
        elif self.exec is not None and self.cert is None and entry is not None:
            # A plugin is consulted only when the user has no other credential.
            config.credentials = ExecProvider(_exec_plugin(entry, self.exec, server))


def _check_exec(entry: _Entry, body: dict[str, Any], errors: list[str]) -> None:
    name = entry.name
    where = entry.where("user")
    if not _str(body, "command", where):
        errors.append(f"command must be specified for {name} to use exec authentication plugin")
    api_version = _str(body, "apiVersion", where)
    if not api_version:
        errors.append(f"apiVersion must be specified for {name} to use exec authentication plugin")
    elif api_version not in EXEC_API_VERSIONS:
        errors.append(
            f'exec plugin: invalid apiVersion "{api_version}" for {name} '
            f"(supported: {', '.join(EXEC_API_VERSIONS)})"
        )
    env = body.get("env") or []
    if not isinstance(env, list) or not all(isinstance(v, dict) for v in env):
        errors.append(f"env of the exec plugin of {name} must be a list of name/value maps")
    elif any(not v.get("name") for v in env):
        errors.append(
            f"env variable name must be specified for {name} to use exec authentication plugin"
        )
    args = body.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        errors.append(f"args of the exec plugin of {name} must be a list of strings")
    mode = _str(body, "interactiveMode", where)
    if not mode:
        if api_version == "client.authentication.k8s.io/v1":
            errors.append(
                f"interactiveMode must be specified for {name} to use exec authentication plugin"
            )
    elif mode not in _INTERACTIVE_MODES:
        errors.append(f'invalid interactiveMode for {name}: "{mode}"')


def _exec_plugin(entry: _Entry, body: dict[str, Any], server: _Server) -> ExecPlugin:
    where = entry.where("user")
    command = _str(body, "command", where)
    # A command with a path separator is a path, relative to the kubeconfig that named it;
    # a bare name is looked up on PATH.
    if (os.sep in command or (os.altsep and os.altsep in command)) and not os.path.isabs(command):
        command = os.path.join(entry.base, command)
    env = tuple((str(v["name"]), str(v.get("value") or "")) for v in body.get("env") or [])
    return ExecPlugin(
        command=command,
        api_version=_str(body, "apiVersion", where),
        args=tuple(body.get("args") or ()),
        env=env,
        install_hint=_str(body, "installHint", where) or None,
        interactive_mode=_str(body, "interactiveMode", where) or "IfAvailable",
        cluster=server.exec_cluster() if _bool(body, "provideClusterInfo", where) else None,
    )
