"""ServiceAccount tokens: JWTs signed with the server's own key (PyJWT, ES256).

Bound tokens (TokenRequest, projected volumes) carry the claims kube-apiserver writes:
`iss`, `sub` = `system:serviceaccount:<ns>:<name>`, `aud`, `exp`, `iat`, `nbf`, `jti` and,
under `kubernetes.io`, the namespace, the service account and the pod or secret the token
is bound to (with the pod's node). Legacy tokens (what the token controller puts in
`kubernetes.io/service-account-token` Secrets) have the old `kubernetes/serviceaccount`
issuer and flat claims and never expire. This module checks signatures and time; whether
the account and bound objects still exist is the authenticator's part.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kubeforge import clock as process_clock

__all__ = [
    "DEFAULT_ISSUER",
    "EXTENDED_SECONDS",
    "LEGACY_ISSUER",
    "SIGNING_ALGORITHM",
    "WARN_ONLY_SECONDS",
    "BoundObject",
    "TokenClaims",
    "TokenError",
    "TokenIssuer",
    "load_or_generate_key",
]

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
LEGACY_ISSUER = "kubernetes/serviceaccount"
# A token asked for with exactly this lifetime (the kubelet's projected volumes) is valid
# for a year but reports use after this many seconds (kube-apiserver's default with
# --service-account-extend-token-expiration).
WARN_ONLY_SECONDS = 3607
EXTENDED_SECONDS = 365 * 24 * 60 * 60
LEEWAY = 60  # seconds of clock skew tolerated (go-jose's jwt.DefaultLeeway, which kube uses)
SIGNING_ALGORITHM = "ES256"


class TokenError(Exception):
    """A token that is ours but not acceptable; the message is kube-apiserver's."""


@dataclass(frozen=True, slots=True)
class BoundObject:
    kind: str  # Pod, Secret or Node
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class TokenClaims:
    """What a verified token says."""

    namespace: str
    name: str
    uid: str
    audiences: tuple[str, ...]
    expires: float | None
    pod: BoundObject | None = None
    secret: BoundObject | None = None
    node: BoundObject | None = None
    jti: str = ""
    legacy: bool = False


def load_or_generate_key(directory: Path | None) -> ec.EllipticCurvePrivateKey:
    """The signing key kept in `directory`/sa.key (made there on first use), or a new one."""
    if directory is not None:
        path = directory / "sa.key"
        if path.exists():
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
            if isinstance(key, ec.EllipticCurvePrivateKey):
                return key
    key = ec.generate_private_key(ec.SECP256R1())
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "sa.key"
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        path.chmod(0o600)
    return key


def _key_id(key: ec.EllipticCurvePublicKey) -> str:
    # As kube-apiserver: the unpadded base64url SHA-256 of the DER public key.
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


def _bound(value: Any, kind: str) -> BoundObject | None:
    if not isinstance(value, dict):
        return None
    return BoundObject(kind, str(value.get("name") or ""), str(value.get("uid") or ""))


class TokenIssuer:
    """Signs and verifies this server's ServiceAccount tokens; `clock` (seconds since the
    epoch; the process's clock by default) dates new tokens and judges expiry, so a test can
    move it instead of waiting."""

    def __init__(
        self,
        key: ec.EllipticCurvePrivateKey | None = None,
        issuer: str = DEFAULT_ISSUER,
        clock: Callable[[], float] = process_clock.time,
    ) -> None:
        self.clock = clock
        self.key = key or ec.generate_private_key(ec.SECP256R1())
        self.public_key = self.key.public_key()
        self.key_id = _key_id(self.public_key)
        self.issuer = issuer
        self.audiences: tuple[str, ...] = (issuer,)

    def issue(
        self,
        namespace: str,
        name: str,
        uid: str,
        *,
        audiences: tuple[str, ...] = (),
        seconds: int = 3600,
        bound: BoundObject | None = None,
        node: BoundObject | None = None,
        now: float | None = None,
    ) -> tuple[str, float]:
        """A bound token and the time it is reported to expire (exp may be later when the
        lifetime is extended)."""
        issued = int(now if now is not None else self.clock())
        private: dict[str, Any] = {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": uid},
        }
        if bound is not None and bound.kind in ("Pod", "Secret"):
            private[bound.kind.lower()] = {"name": bound.name, "uid": bound.uid}
        if node is not None:
            private["node"] = {"name": node.name, "uid": node.uid}
        expires = issued + seconds
        if seconds == WARN_ONLY_SECONDS and bound is not None and bound.kind == "Pod":
            private["warnafter"] = expires
            exp = issued + EXTENDED_SECONDS
        else:
            exp = expires
        payload = {
            "aud": list(audiences or self.audiences),
            "exp": exp,
            "iat": issued,
            "iss": self.issuer,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": private,
            "nbf": issued,
            "sub": f"system:serviceaccount:{namespace}:{name}",
        }
        token = jwt.encode(
            payload, self.key, algorithm=SIGNING_ALGORITHM, headers={"kid": self.key_id}
        )
        return token, float(expires)

    def issue_legacy(self, namespace: str, name: str, uid: str, secret: str) -> str:
        """The never-expiring token of a `kubernetes.io/service-account-token` Secret."""
        payload = {
            "iss": LEGACY_ISSUER,
            "kubernetes.io/serviceaccount/namespace": namespace,
            "kubernetes.io/serviceaccount/secret.name": secret,
            "kubernetes.io/serviceaccount/service-account.name": name,
            "kubernetes.io/serviceaccount/service-account.uid": uid,
            "sub": f"system:serviceaccount:{namespace}:{name}",
        }
        return jwt.encode(
            payload, self.key, algorithm=SIGNING_ALGORITHM, headers={"kid": self.key_id}
        )

    def expired(self, exp: float, now: float | None = None) -> bool:
        """Whether a token whose `exp` claim is `exp` has expired (after the leeway)."""
        return (self.clock() if now is None else now) > exp + LEEWAY

    def verify(self, token: str) -> TokenClaims | None:
        """The claims of a token this server signed (None: not one of ours); TokenError when
        it is ours but expired, not yet valid or issued in the future."""
        try:
            payload = jwt.decode(
                token,
                self.public_key,
                algorithms=[SIGNING_ALGORITHM],
                options={
                    "verify_aud": False,
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                    "verify_iss": False,
                },
            )
        except jwt.PyJWTError:
            return None
        issuer = payload.get("iss")
        if issuer == LEGACY_ISSUER:
            return TokenClaims(
                namespace=str(payload.get("kubernetes.io/serviceaccount/namespace") or ""),
                name=str(payload.get("kubernetes.io/serviceaccount/service-account.name") or ""),
                uid=str(payload.get("kubernetes.io/serviceaccount/service-account.uid") or ""),
                audiences=(),
                expires=None,
                secret=BoundObject(
                    "Secret",
                    str(payload.get("kubernetes.io/serviceaccount/secret.name") or ""),
                    "",
                ),
                legacy=True,
            )
        if issuer != self.issuer:
            return None
        # As pkg/serviceaccount/claims.go judges them through go-jose's Claims.Validate, in
        # its order: nbf, exp, then an iat later than now, each with a minute of leeway.
        now = self.clock()
        nbf = payload.get("nbf")
        if isinstance(nbf, int | float) and now + LEEWAY < nbf:
            raise TokenError("service account token is not valid yet")
        exp = payload.get("exp")
        if not isinstance(exp, int | float) or self.expired(float(exp), now):
            raise TokenError("service account token has expired")
        iat = payload.get("iat")
        if isinstance(iat, int | float) and now + LEEWAY < iat:
            raise TokenError("service account token is issued in the future")
        private = payload.get("kubernetes.io") or {}
        account = private.get("serviceaccount") or {}
        aud = payload.get("aud")
        audiences = (aud,) if isinstance(aud, str) else tuple(str(a) for a in aud or ())
        return TokenClaims(
            namespace=str(private.get("namespace") or ""),
            name=str(account.get("name") or ""),
            uid=str(account.get("uid") or ""),
            audiences=audiences,
            expires=float(exp),
            pod=_bound(private.get("pod"), "Pod"),
            secret=_bound(private.get("secret"), "Secret"),
            node=_bound(private.get("node"), "Node"),
            jti=str(payload.get("jti") or ""),
        )
