"""Authentication: who sent a request.

Tried in kube-apiserver's order: a client certificate the TLS layer verified against the
server's CA (CN = user, each O = a group), then a bearer token (the admin token, or a
ServiceAccount token this server signed), then anonymous. A token that is presented but
not accepted is a 401, never anonymous. Anonymous requests may be limited to some paths,
as kube-apiserver's authentication configuration allows (`anonymous.conditions`). The
scheme `Bearer` is matched case-insensitively and a header with an extra space before the
token is ignored, as the apiserver's bearertoken authenticator does.
"""

from __future__ import annotations

import base64
import hmac
from dataclasses import dataclass

from cryptography import x509
from cryptography.x509.oid import NameOID

from kubeforge._apiserver.auth.tokens import TokenClaims, TokenError, TokenIssuer
from kubeforge._apiserver.request.user import (
    ADMIN,
    ANONYMOUS,
    AUTHENTICATED,
    UserInfo,
    service_account_groups,
    service_account_user,
)
from kubeforge._apiserver.storage.store import Store
from kubeforge._apiserver.types.resource import GroupResource

__all__ = ["AuthResult", "Authenticator", "certificate_user"]

EXTRA_SPACE_WARNING = (
    "the provided Authorization header contains extra space before the bearer token, and is ignored"
)
SERVICE_ACCOUNTS = GroupResource("", "serviceaccounts")
PODS = GroupResource("", "pods")
SECRETS = GroupResource("", "secrets")
NODES = GroupResource("", "nodes")
_CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class AuthResult:
    """A token's owner (None when rejected) with the audiences it is valid for, or why not."""

    user: UserInfo | None
    audiences: tuple[str, ...] = ()
    error: str = ""


def certificate_user(der: bytes) -> UserInfo | None:
    """The user a verified client certificate names (None without a common name)."""
    cert = x509.load_der_x509_certificate(der)
    subject = cert.subject
    names = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not names or not str(names[0].value):
        return None
    groups = tuple(str(a.value) for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
    return UserInfo(str(names[0].value), groups=(*groups, AUTHENTICATED))


class Authenticator:
    """Turns a request's credentials into a UserInfo."""

    def __init__(
        self,
        admin_token: str,
        issuer: TokenIssuer,
        store: Store,
        anonymous_paths: frozenset[str] | None = None,
    ) -> None:
        self.admin_token = admin_token.encode()
        self.anonymous_paths = anonymous_paths
        self.issuer = issuer
        self.store = store
        self._verified: dict[str, TokenClaims] = {}
        self._certificates: dict[bytes, UserInfo | None] = {}

    def authenticate(
        self, header: str | None, certificate: bytes | None, path: str, warnings: list[str]
    ) -> UserInfo | None:
        """The requester; None when a credential was presented and rejected, or when there
        was none and `path` is not open to anonymous requests (a 401)."""
        if certificate is not None:
            user = self._certificate(certificate)
            if user is not None:
                return user
        if header:
            token = bearer_token(header, warnings)
            if token is not None:
                if hmac.compare_digest(token.encode(), self.admin_token):
                    return ADMIN
                return self.token_user(token, self.issuer.audiences).user
        if self.anonymous_paths is None or path in self.anonymous_paths:
            return ANONYMOUS
        return None

    def _certificate(self, der: bytes) -> UserInfo | None:
        cached = self._certificates.get(der, False)
        if cached is not False:
            return cached  # type: ignore[return-value]
        if len(self._certificates) >= _CACHE_SIZE:
            self._certificates.clear()
        user = certificate_user(der)
        self._certificates[der] = user
        return user

    def token_user(self, token: str, audiences: tuple[str, ...]) -> AuthResult:
        """Authenticate a bearer token for `audiences` (TokenReview's question too)."""
        if hmac.compare_digest(token.encode(), self.admin_token):
            # The static admin token is valid for whatever the server itself accepts.
            wanted = audiences or self.issuer.audiences
            common = tuple(a for a in wanted if a in self.issuer.audiences)
            if not common:
                return AuthResult(None, error=_audience_error(self.issuer.audiences, wanted))
            return AuthResult(ADMIN, common)
        claims = self._verified.get(token)
        if claims is None:
            try:
                claims = self.issuer.verify(token)
            except TokenError as exc:
                return AuthResult(None, error=str(exc))
            if claims is None:
                return AuthResult(None, error="invalid bearer token")
            if len(self._verified) >= _CACHE_SIZE:
                self._verified.clear()
            self._verified[token] = claims
        elif claims.expires is not None and self.issuer.expired(claims.expires):
            del self._verified[token]
            return AuthResult(None, error="service account token has expired")
        wanted = audiences or self.issuer.audiences
        if claims.legacy:
            valid_for = tuple(a for a in wanted if a in self.issuer.audiences)
        else:
            valid_for = tuple(a for a in wanted if a in claims.audiences)
        if not valid_for:
            return AuthResult(None, error=_audience_error(claims.audiences, wanted))
        error = self._still_valid(claims, token)
        if error:
            return AuthResult(None, error=error)
        return AuthResult(self._account_user(claims), valid_for)

    def _still_valid(self, claims: TokenClaims, token: str) -> str:
        """Why a well-signed token no longer stands (kube-apiserver's messages), or ""."""
        account = self.store.get(SERVICE_ACCOUNTS, claims.namespace, claims.name)
        if account is None or account.obj["metadata"].get("deletionTimestamp"):
            return f"service account {claims.namespace}/{claims.name} has been deleted"
        uid = account.obj["metadata"].get("uid", "")
        if claims.uid and uid != claims.uid:
            return f"service account UID ({uid}) does not match claim ({claims.uid})"
        if claims.secret is not None:
            secret = self.store.get(SECRETS, claims.namespace, claims.secret.name)
            if secret is None or secret.obj["metadata"].get("deletionTimestamp"):
                return "service account token has been invalidated"
            secret_uid = secret.obj["metadata"].get("uid", "")
            if claims.secret.uid and secret_uid != claims.secret.uid:
                return (
                    f"secret UID ({secret_uid}) does not match service account secret ref "
                    f"claim ({claims.secret.uid})"
                )
            if claims.legacy:
                data = (secret.obj.get("data") or {}).get("token") or ""
                try:
                    stored = base64.b64decode(data)
                except ValueError:
                    stored = b""
                if not hmac.compare_digest(stored, token.encode()):
                    return "token does not match the secret"
        if claims.pod is not None:
            pod = self.store.get(PODS, claims.namespace, claims.pod.name)
            if pod is None or pod.obj["metadata"].get("deletionTimestamp"):
                return "service account token has been invalidated"
            pod_uid = pod.obj["metadata"].get("uid", "")
            if pod_uid != claims.pod.uid:
                return (
                    f"pod UID ({pod_uid}) does not match service account pod ref claim "
                    f"({claims.pod.uid})"
                )
        elif claims.node is not None:
            node = self.store.get(NODES, "", claims.node.name)
            if node is None or node.obj["metadata"].get("deletionTimestamp"):
                return "service account token has been invalidated"
            node_uid = node.obj["metadata"].get("uid", "")
            if node_uid != claims.node.uid:
                return (
                    f"node UID ({node_uid}) does not match service account node ref claim "
                    f"({claims.node.uid})"
                )
        return ""

    def _account_user(self, claims: TokenClaims) -> UserInfo:
        extra: dict[str, tuple[str, ...]] = {}
        if claims.pod is not None:
            extra["authentication.kubernetes.io/pod-name"] = (claims.pod.name,)
            extra["authentication.kubernetes.io/pod-uid"] = (claims.pod.uid,)
        if claims.node is not None:
            extra["authentication.kubernetes.io/node-name"] = (claims.node.name,)
            extra["authentication.kubernetes.io/node-uid"] = (claims.node.uid,)
        if claims.jti:
            extra["authentication.kubernetes.io/credential-id"] = (f"JTI={claims.jti}",)
        return UserInfo(
            service_account_user(claims.namespace, claims.name),
            claims.uid,
            (*service_account_groups(claims.namespace), AUTHENTICATED),
            extra,
        )


def bearer_token(header: str, warnings: list[str]) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (scheme in any case)."""
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return None
    if not parts[1]:
        if len(parts) == 3:
            warnings.append(EXTRA_SPACE_WARNING)
        return None
    return parts[1]


def _go_strings(values: tuple[str, ...]) -> str:
    return "[" + " ".join(f'"{v}"' for v in values) + "]"


def _audience_error(have: tuple[str, ...], wanted: tuple[str, ...]) -> str:
    return (
        f"token audiences {_go_strings(have)} is invalid for the target audiences "
        f"{_go_strings(wanted)}"
    )
