"""Who may use the console (decision 62).

The console listens on loopback only. A browser logs in with the login token of the link
printed at start (`/#login=<token>`: in the URL's fragment, which browsers never send in a
request, a Referer or a proxy's log); the page posts it to `/api/session` and gets a session
cookie (random, HttpOnly, SameSite=Strict, scoped to the console's port) in exchange, and
the page drops the fragment from the address bar. Scripts send a bearer token the cluster
accepts instead: the cluster authenticates it (TokenReview) and authorizes it
(SubjectAccessReview: `get` on the non-resource URL `/console`), as a secure metrics
endpoint does.

Every request must name the console's own address in its Host header (a page of another
site that resolves its name to 127.0.0.1 cannot read the console: DNS rebinding), and a
request that carries an Origin must come from the console's own. Answers forbid framing,
sniffing, referrers and any script or style from elsewhere.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from kubeforge._runtime.metricsauth import MetricsAuth

__all__ = ["REVIEWED_PATH", "SESSION_SECONDS", "ConsoleAuth", "security_headers"]

SESSION_SECONDS = 12 * 3600.0
MAX_SESSIONS = 64
# The non-resource URL a bearer token's user must be allowed to `get`.
REVIEWED_PATH = "/console"
# Paths any caller may load: the page and its assets, which hold no data of the cluster.
_PUBLIC_PREFIXES = ("/static/",)
_PUBLIC = frozenset({"/", "/favicon.ico", "/api/session"})

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ConsoleAuth:
    """The console's login token, its browser sessions, and bearer tokens checked by the
    cluster (`reviews`; None: browser sessions only)."""

    # The machine's time: a browser session lasts real hours, whatever clock the cluster
    # runs on.
    def __init__(self, reviews: MetricsAuth | None, clock: Callable[[], float] = time.monotonic):
        self.reviews = reviews
        self.login_token = secrets.token_urlsafe(32)
        self.clock = clock
        self._sessions: OrderedDict[str, float] = OrderedDict()
        self.hosts: frozenset[str] = frozenset()
        self.origins: frozenset[str] = frozenset()
        self.cookie = "kubeforge-console"

    def serving(self, port: int) -> None:
        """The port the console listens on: the Host and Origin it accepts, and its cookie."""
        names = ("127.0.0.1", "localhost", "[::1]")
        self.hosts = frozenset(f"{name}:{port}" for name in names)
        self.origins = frozenset(f"http://{host}" for host in self.hosts)
        # Browsers share cookies between the ports of one host: each console has its own.
        self.cookie = f"kubeforge-console-{port}"

    def login(self, token: str) -> str | None:
        """A new session for the right login token (None for a wrong one)."""
        if not hmac.compare_digest(token.encode(), self.login_token.encode()):
            return None
        session = secrets.token_urlsafe(32)
        self._sessions[session] = self.clock() + SESSION_SECONDS
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    def _valid(self, session: str | None) -> bool:
        if not session:
            return False
        expires = self._sessions.get(session)
        if expires is None:
            return False
        if expires < self.clock():
            del self._sessions[session]
            return False
        return True

    async def _refusal(self, request: web.Request) -> web.Response | None:
        if request.headers.get("Host", "") not in self.hosts:
            return web.Response(status=421, text="Misdirected Request\n")
        origin = request.headers.get("Origin")
        if origin is not None and origin not in self.origins:
            return web.Response(status=403, text="Forbidden: cross-origin request\n")
        path = request.path
        if path in _PUBLIC or path.startswith(_PUBLIC_PREFIXES):
            return None
        if self._valid(request.cookies.get(self.cookie)):
            return None
        authorization = request.headers.get("Authorization")
        if authorization and self.reviews is not None:
            return await self.reviews.refusal(authorization, "get", REVIEWED_PATH)
        message = {"message": "log in with the link the console printed"}
        return web.json_response(message, status=401)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = await self._refusal(request)
        if refused is not None:
            security_headers(refused)
            return refused
        return await handler(request)

    def set_session(self, response: web.StreamResponse, session: str) -> None:
        response.set_cookie(
            self.cookie,
            session,
            httponly=True,
            samesite="Strict",
            path="/",
            max_age=int(SESSION_SECONDS),
        )


def security_headers(response: web.StreamResponse, **_: Any) -> None:
    """What every answer says to the browser."""
    headers = response.headers
    headers["Content-Security-Policy"] = CSP
    headers["X-Content-Type-Options"] = "nosniff"
    headers["X-Frame-Options"] = "DENY"
    headers["Referrer-Policy"] = "no-referrer"
    headers["Cross-Origin-Opener-Policy"] = "same-origin"
    headers["Cross-Origin-Resource-Policy"] = "same-origin"
    headers.setdefault("Cache-Control", "no-store")
