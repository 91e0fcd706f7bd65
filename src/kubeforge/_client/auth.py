"""Bearer-token sources: a fixed token, a token file that rotates, and exec credential plugins.

Every source implements `CredentialProvider`: the transport awaits `token()` before a request
and calls `invalidate()` after a 401 so that the next `token()` fetches a fresh credential.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import orjson

from kubeforge import clock as process_clock
from kubeforge._api.machinery.timestamps import parse_time

__all__ = [
    "EXEC_API_VERSIONS",
    "CredentialError",
    "CredentialProvider",
    "ExecCredential",
    "ExecPlugin",
    "ExecProvider",
    "ServiceAccountToken",
    "StaticToken",
    "TokenFile",
]

# The ExecCredential versions client-go still speaks (v1alpha1 was removed in 1.24).
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")

# How long a token read from a file is trusted before the file is read again; client-go's
# cached file token source uses the same period, which is what makes rotated service
# account tokens (refreshed by the kubelet well before they expire) reach the client.
TOKEN_FILE_MAX_AGE = 60.0

_NOT_FOUND_HELP = (
    "\n\nIt looks like you are trying to use a client-go credential plugin that is not "
    "installed.\n\nTo learn more about this feature, consult the documentation available at:\n"
    "      https://kubernetes.io/docs/reference/access-authn-authz/authentication/"
    "#client-go-credential-plugins"
)


class CredentialError(Exception):
    """A credential could not be obtained (unreadable token file, failing exec plugin)."""


@runtime_checkable
class CredentialProvider(Protocol):
    """A source of bearer tokens for requests to the API server."""

    async def token(self) -> str | None:
        """The current bearer token, refreshed as needed (None: send no token)."""
        ...

    def invalidate(self) -> None:
        """Forget the cached credential (the server rejected it); the next token() refreshes."""
        ...


class StaticToken:
    """A token that never changes (`token:` in a kubeconfig user)."""

    __slots__ = ("_token",)

    def __init__(self, token: str) -> None:
        self._token = token

    async def token(self) -> str | None:
        """The configured token."""
        return self._token

    def invalidate(self) -> None:
        """Nothing to refresh: the same token is sent again."""

    def __repr__(self) -> str:
        return "StaticToken(<redacted>)"


class TokenFile:
    """A token read from a file and re-read at most every `max_age` seconds and after a 401.

    `fallback` is used while the file cannot be read and nothing was read yet (a kubeconfig
    user with both `token` and `tokenFile`); after one good read the last good token is kept
    while the file is unreadable, as client-go does. `max_age` is the machine's time: it
    paces reading a file.
    """

    __slots__ = ("_clock", "_read_at", "_token", "fallback", "max_age", "path")

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fallback: str | None = None,
        max_age: float = TOKEN_FILE_MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.fallback = fallback
        self.max_age = max_age
        self._clock = clock
        self._token: str | None = None
        self._read_at: float | None = None

    def read(self) -> str:
        """Read the file now and cache its token; raises CredentialError if that fails."""
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise CredentialError(f"unable to read token file {self.path}: {exc}") from exc
        if not text:
            raise CredentialError(f"read empty token from file {self.path}")
        self._token = text
        self._read_at = self._clock()
        return text

    async def token(self) -> str | None:
        """The token from the file, read again when the cached one is older than `max_age`."""
        read_at = self._read_at
        if read_at is not None and self._clock() - read_at < self.max_age:
            return self._token
        # A token file is a few hundred bytes on a local (usually tmpfs) mount: reading it
        # inline costs less than handing it to a thread.
        try:
            return self.read()
        except CredentialError:
            if self._token is not None:
                return self._token
            if self.fallback is not None:
                return self.fallback
            raise

    def invalidate(self) -> None:
        """Read the file again on the next token() call."""
        self._read_at = None

    def __repr__(self) -> str:
        return f"TokenFile({str(self.path)!r})"


@dataclass(frozen=True)
class ExecPlugin:
    """How to run a credential plugin: a kubeconfig user's `exec` section, paths resolved."""

    command: str
    api_version: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    install_hint: str | None = None
    interactive_mode: str = "IfAvailable"
    # `spec.cluster` of the request; set only when the user asked for provideClusterInfo.
    cluster: Mapping[str, Any] | None = None

    def request(self) -> bytes:
        """The ExecCredential sent to the plugin in KUBERNETES_EXEC_INFO."""
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster is not None:
            spec["cluster"] = dict(self.cluster)
        return orjson.dumps(
            {"kind": "ExecCredential", "apiVersion": self.api_version, "spec": spec}
        )


@dataclass(frozen=True)
class ExecCredential:
    """What a plugin returned: a token and/or a client certificate, valid until `expiration`."""

    token: str | None = field(repr=False)
    client_certificate_data: bytes | None = field(default=None, repr=False)
    client_key_data: bytes | None = field(default=None, repr=False)
    expiration: datetime | None = None


class ExecProvider:
    """Runs an exec credential plugin, caching its credential until it expires or a 401."""

    def __init__(
        self,
        plugin: ExecPlugin,
        *,
        # The machine's time: a plugin's credentials come from outside the process and
        # expire in real time.
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.plugin = plugin
        self._now = now
        self._cached: ExecCredential | None = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    async def token(self) -> str | None:
        """The plugin's current token (None when it only returned a client certificate)."""
        return (await self.credential()).token

    async def credential(self) -> ExecCredential:
        """The cached credential, or a fresh one from the plugin when none is valid."""
        cached = self._cached
        if cached is not None and not self._expired(cached):
            return cached
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            # A lock belongs to one event loop; a configuration may outlive several.
            self._lock = asyncio.Lock()
            self._lock_loop = loop
        async with self._lock:
            # Concurrent callers waited here while one of them ran the plugin.
            cached = self._cached
            if cached is not None and not self._expired(cached):
                return cached
            fresh = await self._run()
            self._cached = fresh
            return fresh

    def invalidate(self) -> None:
        """Run the plugin again on the next call."""
        self._cached = None

    def _expired(self, cred: ExecCredential) -> bool:
        return cred.expiration is not None and self._now() >= cred.expiration

    def _executable(self) -> str:
        command = self.plugin.command
        if os.sep in command or (os.altsep is not None and os.altsep in command):
            if os.access(command, os.X_OK) and not os.path.isdir(command):
                return command
            found = None
        else:
            # Looked up on this process's PATH, not on a PATH the plugin's env might set.
            found = shutil.which(command)
        if found is None:
            message = f"exec: executable {command} not found{_NOT_FOUND_HELP}"
            if self.plugin.install_hint:
                message += f"\n\n{self.plugin.install_hint}"
            raise CredentialError(message)
        return found

    async def _run(self) -> ExecCredential:
        plugin = self.plugin
        if plugin.interactive_mode == "Always":
            raise CredentialError(
                "exec plugin cannot support interactive mode: "
                "standard input is not available to the plugin"
            )
        executable = self._executable()
        env = dict(os.environ)
        env.update(plugin.env)
        env["KUBERNETES_EXEC_INFO"] = plugin.request().decode()
        try:
            proc = await asyncio.create_subprocess_exec(
                executable,
                *plugin.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
        except OSError as exc:
            raise CredentialError(f"exec: unable to start {plugin.command}: {exc}") from exc
        try:
            stdout, stderr = await proc.communicate()
        except BaseException:
            # Cancelled while waiting: do not leave the plugin running.
            if proc.returncode is None:
                proc.kill()
            raise
        if proc.returncode != 0:
            message = f"exec: executable {plugin.command} failed with exit code {proc.returncode}"
            detail = stderr.decode(errors="replace").strip()
            if detail:
                message += f": {detail}"
            raise CredentialError(message)
        return self._parse(stdout)

    def _parse(self, stdout: bytes) -> ExecCredential:
        want = self.plugin.api_version
        try:
            doc = orjson.loads(stdout)
        except orjson.JSONDecodeError as exc:
            raise CredentialError(f"exec plugin output is not JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise CredentialError("exec plugin output is not an ExecCredential object")
        got = doc.get("apiVersion")
        if got != want:
            raise CredentialError(
                f"exec plugin is configured to use API version {want}, "
                f"plugin returned version {got}"
            )
        if doc.get("kind") != "ExecCredential":
            raise CredentialError(
                f"exec plugin returned kind {doc.get('kind')!r}, expected ExecCredential"
            )
        status = doc.get("status")
        if not isinstance(status, dict):
            raise CredentialError("exec plugin didn't return a status field")
        token = _text(status, "token")
        cert = _text(status, "clientCertificateData")
        key = _text(status, "clientKeyData")
        if not token and not cert and not key:
            raise CredentialError("exec plugin didn't return a token or cert/key pair")
        if bool(cert) != bool(key):
            raise CredentialError("exec plugin returned only certificate or key, not both")
        return ExecCredential(
            token=token or None,
            client_certificate_data=cert.encode() if cert else None,
            client_key_data=key.encode() if key else None,
            expiration=_timestamp(status.get("expirationTimestamp")),
        )

    def __repr__(self) -> str:
        return f"ExecProvider({self.plugin.command!r})"


def _text(status: dict[str, Any], key: str) -> str:
    value = status.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CredentialError(f"exec plugin returned a non-string status.{key}")
    return value


def _timestamp(value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise CredentialError(f"exec plugin returned an invalid expirationTimestamp: {value!r}")
    try:
        # metav1.Time: RFC 3339, so always with a time zone.
        return parse_time(value)
    except ValueError as exc:
        raise CredentialError(
            f"exec plugin returned an invalid expirationTimestamp {value!r}: {exc}"
        ) from exc


class ServiceAccountToken:
    """Tokens of a ServiceAccount from TokenRequest, asked for again before they expire.

    `request(namespace, name, body)` posts the TokenRequest (for instance a client's
    `create_subresource("v1/ServiceAccount", name, "token", body, namespace=...)` with
    credentials allowed to create tokens); a new token is fetched when four fifths of the
    last one's lifetime have passed, or after a 401. Their lifetime is counted on the
    process's clock, the one the API server of a test cluster dates them by.
    """

    def __init__(
        self,
        request: Callable[[str, str, dict[str, Any]], Any],
        namespace: str,
        name: str,
        *,
        seconds: int = 3600,
        clock: Callable[[], float] = process_clock.monotonic,
    ) -> None:
        self.request = request
        self.namespace = namespace
        self.name = name
        self.seconds = seconds
        self._clock = clock
        self._token: str | None = None
        self._renew_at = 0.0

    async def token(self) -> str | None:
        """A valid token of the account."""
        if self._token is None or self._clock() >= self._renew_at:
            body = {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": self.seconds},
            }
            reply = await self.request(self.namespace, self.name, body)
            token = str(((reply or {}).get("status") or {}).get("token") or "")
            if not token:
                raise CredentialError(f"no token for service account {self.namespace}/{self.name}")
            self._token = token
            self._renew_at = self._clock() + self.seconds * 0.8
        return self._token

    def invalidate(self) -> None:
        """Ask for a new token on the next call."""
        self._token = None

    def __repr__(self) -> str:
        return f"ServiceAccountToken({self.namespace}/{self.name})"
