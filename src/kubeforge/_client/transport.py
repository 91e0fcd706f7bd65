"""HTTP to the API server: pooled keep-alive connections, TLS, credentials and retries.

Whole request/response exchanges go through `http1.ConnectionPool`; watches and log streams
(and every request when the cluster is reached through a proxy) through one aiohttp session.

Retries follow client-go: a 429 is retried for any request (waiting Retry-After when the
server gives one), 5xx answers and dropped connections only for reads (GET), with
exponential backoff; a 401 makes the credentials refresh once. There is no client-side rate
limiting: the API server's priority and fairness is the limiter, as in controller-runtime.
"""

from __future__ import annotations

import asyncio
import base64
import random
import re
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import aiohttp
import orjson
from multidict import CIMultiDict, CIMultiDictProxy

from kubeforge._client.config import ClusterConfig
from kubeforge._client.errors import error_from_status
from kubeforge._client.http1 import Answer, ConnectionPool, decoded
from kubeforge._client.inprocess import InProcessServer
from kubeforge._client.refusals import report_refusal
from kubeforge._version import __version__
from kubeforge.clock import activity

__all__ = ["ClientClosed", "RequestObserver", "Response", "Transport", "raise_for"]

USER_AGENT = f"kubeforge/{__version__} (python)"
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS"})
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
# Path characters sent as they are (RFC 3986 pchar and "/"); anything else is percent-encoded.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_LONE_PERCENT = re.compile("%(?![0-9A-Fa-f]{2})")

# Called after every request: (method, host, status code or "<error>", seconds).
RequestObserver = Callable[[str, str, int | str, float], None]


class ClientClosed(RuntimeError):
    """A request through a client that was already closed."""


@dataclass(frozen=True, slots=True)
class Response:
    """A complete (non-streaming) answer."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body) if self.body else None


def _status_of(body: bytes) -> dict[str, Any] | None:
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


class Transport:
    """Sends requests to one cluster. Create it in the event loop that will use it."""

    def __init__(
        self,
        config: ClusterConfig,
        *,
        timeout: float = 30.0,
        max_retries: int = 10,
        user_agent: str = USER_AGENT,
        on_request: RequestObserver | None = None,
        on_retry: RequestObserver | None = None,
    ) -> None:
        self.config = config
        self.timeout = timeout
        self.max_retries = max_retries
        self.user_agent = user_agent
        self.on_request = on_request
        self.on_retry = on_retry
        self._session: aiohttp.ClientSession | None = None
        self._closed = False
        self._aborted: Awaitable[None] | None = None
        self._host = config.server.split("://", 1)[-1]
        self._pool: ConnectionPool | None = None
        url = urlsplit(config.server)
        self._base_path = url.path.rstrip("/")
        self._netloc = url.netloc.rpartition("@")[2]

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._closed:
            # A new session now would never be closed (and leak its connections).
            raise ClientClosed("the client is closed")
        if self._session is None or self._session.closed:
            connector: aiohttp.BaseConnector
            if self.config.unix_socket is not None:
                connector = aiohttp.UnixConnector(self.config.unix_socket, limit=0)
            else:
                connector = aiohttp.TCPConnector(
                    ssl=self.config.ssl_context(), limit=0, enable_cleanup_closed=True
                )
            self._session = aiohttp.ClientSession(
                connector=connector,
                json_serialize=lambda v: orjson.dumps(v).decode(),
                headers={"User-Agent": self.user_agent},
            )
        return self._session

    def _http1_pool(self) -> ConnectionPool:
        if self._closed:
            raise ClientClosed("the client is closed")
        if self._pool is None:
            url = urlsplit(self.config.server)
            context: ssl.SSLContext | None = None
            if url.scheme == "https" and self.config.unix_socket is None:
                configured = self.config.ssl_context()
                context = configured if isinstance(configured, ssl.SSLContext) else _unverified()
            self._pool = ConnectionPool(
                url.hostname or "localhost",
                url.port or (443 if url.scheme == "https" else 80),
                ssl_context=context,
                server_hostname=self.config.tls_server_name or url.hostname,
                unix_socket=self.config.unix_socket,
            )
        return self._pool

    async def close(self) -> None:
        """Close the connections; the transport cannot be used afterwards."""
        self._refuse()
        if self._aborted is not None:
            await self._aborted
            self._aborted = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    def abort(self) -> None:
        """Refuse every request from now on (ClientClosed) and drop the connections at
        once, streams included, as a process that dies does; `close()` still releases
        what is left."""
        self._refuse()
        connector = self._session.connector if self._session is not None else None
        if connector is not None and self._aborted is None:
            # aiohttp closes the sockets here; what it returns finishes the closing.
            self._aborted = connector.close(abort_ssl=True)

    def _refuse(self) -> None:
        """No request from now on; idle pooled connections close."""
        self._closed = True
        if self._pool is not None:
            self._pool.close()

    async def _headers(self, accept: str | None, content_type: str | None) -> dict[str, str]:
        headers: dict[str, str] = {"Accept": accept or "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        credentials = self.config.credentials
        if credentials is not None:
            token = await credentials.token()
            if token:
                headers["Authorization"] = f"Bearer {token}"
        elif self.config.username is not None:
            pair = f"{self.config.username}:{self.config.password or ''}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        return headers

    def _url(self, path: str) -> str:
        if self.config.unix_socket is not None:
            # Plain HTTP over the socket; the host only fills the Host header.
            return f"http://{self._netloc}{self._base_path}{path}"
        return self.config.server + path

    def _kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self.config.tls_server_name and self.config.unix_socket is None:
            kwargs["server_hostname"] = self.config.tls_server_name
        if self.config.proxy_url:
            kwargs["proxy"] = self.config.proxy_url
        return kwargs

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        accept: str | None = None,
        timeout: float | None = None,
    ) -> Response:
        """Send a request and read the whole answer; non-2xx answers raise ApiError."""
        # Counted from the first attempt to the answer, waits between retries included: a
        # virtual clock waits for it before it calls the process quiet.
        activity.requests += 1
        try:
            return await self._request(method, path, params, body, content_type, accept, timeout)
        finally:
            activity.requests -= 1

    async def _request(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: bytes | None,
        content_type: str | None,
        accept: str | None,
        timeout: float | None,
    ) -> Response:
        attempt = 0
        refreshed = False
        seconds = timeout or self.timeout
        # Through a proxy (and for HEAD, whose answer has no body to frame) aiohttp does it all.
        direct = not self.config.proxy_url and method != "HEAD"
        target = self._target(path, params) if direct else ""
        while True:
            # The machine's clock, here and below: these time and pace I/O (latency metrics,
            # retries of a failed exchange, as client-go's), not the cluster's objects.
            started = time.monotonic()
            headers = await self._headers(accept, content_type)
            try:
                if direct:
                    answer = await self._exchange(method, target, headers, body, seconds)
                    data, status = answer.body, answer.status
                    resp_headers = CIMultiDictProxy(CIMultiDict(answer.headers))
                else:
                    status, resp_headers, data = await self._aiohttp_request(
                        method, path, params, body, headers, seconds
                    )
            except (TimeoutError, OSError, aiohttp.ClientConnectionError) as exc:
                self._observe(method, "<error>", started)
                if method in _IDEMPOTENT and attempt < self.max_retries:
                    attempt += 1
                    await self._wait(method, "<error>", _backoff(attempt))
                    continue
                raise ConnectionError(f"{method} {path}: {exc or type(exc).__name__}") from exc
            self._observe(method, status, started)
            if status < 400:
                return Response(status, resp_headers, data)
            if status == 401 and self.config.credentials is not None and not refreshed:
                self.config.credentials.invalidate()
                refreshed = True
                continue
            retry_after = _retry_after(resp_headers)
            retryable = status == 429 or (
                status >= 500 and (method in _IDEMPOTENT or retry_after is not None)
            )
            if retryable and attempt < self.max_retries:
                attempt += 1
                await self._wait(method, status, retry_after or _backoff(attempt))
                continue
            status_body = _status_of(data)
            if status == 403:
                report_refusal(method, path, params, status_body)
            raise error_from_status(status, status_body)

    def _target(self, path: str, params: Mapping[str, str] | None) -> str:
        """The request target: the server's path prefix, the path (percent-encoded where it
        must be), the query."""
        # Escapes already in the path stay as they are (as aiohttp's URLs keep them).
        target = self._base_path + quote(_LONE_PERCENT.sub("%25", path), safe=_PATH_SAFE + "%")
        if params:
            target += "?" + urlencode(params)
        return target

    async def _exchange(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes | None,
        seconds: float,
    ) -> Answer:
        fields = self._fields(method, headers, body)
        server = self.config.in_process
        if server is not None:
            return await self._in_process(server, method, target, fields, body, seconds)
        lines = [f"{method} {target} HTTP/1.1", *(f"{name}: {value}" for name, value in fields)]
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if body:
            request += body
        async with asyncio.timeout(seconds):
            return await self._http1_pool().exchange(method, request)

    def _fields(
        self, method: str, headers: dict[str, str], body: bytes | None
    ) -> list[tuple[str, str]]:
        """A request's header fields as sent."""
        fields = [
            ("Host", self._netloc),
            ("User-Agent", self.user_agent),
            ("Accept-Encoding", "gzip"),
        ]
        for name, value in headers.items():
            if "\r" in value or "\n" in value:
                raise ValueError(f"the {name} header contains a line break")
            fields.append((name, value))
        if body is not None or method in _WITH_BODY:
            fields.append(("Content-Length", str(len(body or b""))))
        return fields

    async def _in_process(
        self,
        server: InProcessServer,
        method: str,
        target: str,
        fields: list[tuple[str, str]],
        body: bytes | None,
        seconds: float,
    ) -> Answer:
        """`_exchange` with a server in this process: the header fields a connection would
        carry, as the server's parser hands them on, given to it directly."""
        if self._closed:
            raise ClientClosed("the client is closed")
        parsed: dict[str, str] = {}
        for name, value in fields:
            if not value.isascii():
                value.encode("latin-1")  # what a connection could not send fails alike
            parsed[name.lower()] = value.strip(" \t")
        async with asyncio.timeout(seconds):
            status, answer_fields, data = await server.exchange(method, target, parsed, body or b"")
        return decoded(Answer(status, answer_fields, data, True))

    async def _aiohttp_request(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: bytes | None,
        headers: dict[str, str],
        seconds: float,
    ) -> tuple[int, CIMultiDictProxy[str], bytes]:
        async with self.session.request(
            method,
            self._url(path),
            params=params,
            data=body,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=seconds),
            **self._kwargs(),
        ) as resp:
            return resp.status, resp.headers, await resp.read()

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        accept: str | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """Open a streaming answer (watch, logs); non-2xx answers raise ApiError.

        `timeout` bounds how long the stream may stay silent, not its total length.
        """
        headers = await self._headers(accept, None)
        client_timeout = aiohttp.ClientTimeout(total=None, sock_read=timeout)
        started = time.monotonic()
        async with self.session.request(
            method,
            self._url(path),
            params=params,
            headers=headers,
            timeout=client_timeout,
            **self._kwargs(),
        ) as resp:
            self._observe(method, resp.status, started)
            if resp.status >= 400:
                data = await resp.read()
                if resp.status == 401 and self.config.credentials is not None:
                    self.config.credentials.invalidate()
                status_body = _status_of(data)
                if resp.status == 403:
                    report_refusal(method, path, params, status_body)
                raise error_from_status(resp.status, status_body)
            yield resp

    def _observe(self, method: str, code: int | str, started: float) -> None:
        if self.on_request is not None:
            self.on_request(method, self._host, code, time.monotonic() - started)

    async def _wait(self, method: str, code: int | str, seconds: float) -> None:
        if self.on_retry is not None:
            self.on_retry(method, self._host, code, seconds)
        await asyncio.sleep(seconds)


def _unverified() -> ssl.SSLContext:
    """A TLS context that checks nothing (insecure-skip-tls-verify without a certificate)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None


def _backoff(attempt: int) -> float:
    """Exponential backoff with jitter: 0.1 s, 0.2 s, 0.4 s ... capped at 5 s."""
    base: float = min(0.1 * 2 ** (attempt - 1), 5.0)
    return float(base * (0.5 + random.random()))


def raise_for(status: int, body: bytes) -> None:
    """Raise the ApiError for a non-2xx status (used by callers reading raw answers)."""
    if status >= 400:
        raise error_from_status(status, _status_of(body))
