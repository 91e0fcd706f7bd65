"""Secure metrics: /metrics over HTTPS, for callers the API server authenticates and
authorizes (controller-runtime's filters.WithAuthenticationAndAuthorization, which
kubebuilder scaffolds).

A request's bearer token is checked with a TokenReview, then a SubjectAccessReview asks
whether its user may `get` the non-resource path (`/metrics`); answers are cached briefly
(a minute for identities and allowed decisions, ten seconds for refusals), so a scraper
costs the API server a request now and then rather than two per scrape. The manager's own
credentials need `create` on tokenreviews and subjectaccessreviews (kubebuilder's
metrics-auth-role); a scraper needs `get` on the nonResourceURL /metrics (metrics-reader).
"""

from __future__ import annotations

import ssl
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from kubeforge._api.machinery.certificates import generate_certificates
from kubeforge._client.client import Client

__all__ = ["MetricsAuth", "serving_context"]

_IDENTITY_TTL = 60.0
_ALLOWED_TTL = 60.0
_DENIED_TTL = 10.0


class MetricsAuth:
    """Authenticates and authorizes requests through the API server's review APIs."""

    # The machine's time: these are caches of the API server's answers, kept to spare it
    # requests, as controller-runtime's authentication and authorization filters keep them.
    def __init__(self, client: Client, clock: Any = time.monotonic) -> None:
        self.client = client
        self.clock = clock
        self._identities: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._decisions: dict[tuple[str, str, str], tuple[float, bool]] = {}

    async def _identity(self, token: str) -> dict[str, Any] | None:
        now = self.clock()
        cached = self._identities.get(token)
        if cached is not None and cached[0] > now:
            return cached[1]
        body: dict[str, Any] = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        review = await self.client.create(body)
        status = review.get("status") or {}
        user = status.get("user") if status.get("authenticated") else None
        if len(self._identities) > 1024:
            self._identities.clear()
        self._identities[token] = (now + _IDENTITY_TTL, user)
        return user

    async def _allowed(self, user: dict[str, Any], verb: str, path: str) -> bool:
        now = self.clock()
        key = (repr(sorted(user.items())), verb, path)
        cached = self._decisions.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        spec: dict[str, Any] = {
            "user": user.get("username", ""),
            "groups": user.get("groups") or [],
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.get("uid"):
            spec["uid"] = user["uid"]
        if user.get("extra"):
            spec["extra"] = user["extra"]
        body: dict[str, Any] = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        review = await self.client.create(body)
        allowed = bool((review.get("status") or {}).get("allowed"))
        if len(self._decisions) > 1024:
            self._decisions.clear()
        self._decisions[key] = (now + (_ALLOWED_TTL if allowed else _DENIED_TTL), allowed)
        return allowed

    async def refusal(self, authorization: str, verb: str, path: str) -> web.Response | None:
        """Why a request with this Authorization header may not `verb` the non-resource
        `path` (a 401 or 403 answer), or None when it may."""
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return web.Response(status=401, text="Unauthorized\n")
        user = await self._identity(token)
        if user is None:
            return web.Response(status=401, text="Unauthorized\n")
        if not await self._allowed(user, verb, path):
            name = user.get("username", "")
            return web.Response(status=403, text=f"Authorization denied for user {name}\n")
        return None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        header = request.headers.get("Authorization", "")
        refused = await self.refusal(header, request.method.lower(), request.path)
        if refused is not None:
            return refused
        response: web.StreamResponse = await handler(request)
        return response


def serving_context(cert_dir: str | None, host: str) -> ssl.SSLContext:
    """TLS for the metrics server: `tls.crt`/`tls.key` from `cert_dir`, or, without one, a
    certificate made now by a throwaway CA that nobody else trusts (controller-runtime makes a
    self-signed one without a CertDir: scrapers skip verification either way)."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    if cert_dir:
        ctx.load_cert_chain(Path(cert_dir) / "tls.crt", Path(cert_dir) / "tls.key")
        return ctx
    hosts = (host or "localhost", "localhost")
    generated = generate_certificates(hosts, common_name="kubeforge-metrics")
    return generated.server_context(client_certificates=False)
