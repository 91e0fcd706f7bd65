"""RFC 9112 request framing: what a hardened server must refuse, and what it must still take.

Each refused request gets a 400 and the connection is closed, as maintained servers do; the
handler never sees it (nor anything smuggled inside it), and the server goes on serving
other clients.
"""

from __future__ import annotations

import pytest

from kubeforge._apiserver.http.messages import Request, Response
from tests.support.rawhttp import (
    CHUNKED_HEAD,
    Served,
    echo_now,
    echoed,
    get,
    post,
    refused,
)


class Recorder:
    """The echo handler, remembering every request line it was given."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, request: Request) -> Response:
        self.seen.append(f"{request.method} {request.target}")
        return echo_now(request)


SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: test\r\n\r\n"

REFUSED = {
    # A vertical tab after "chunked": read as chunked by some and not by others, which is
    # how one request hides another.
    "transfer-encoding-with-vertical-tab": (
        b"POST /te HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\x0b\r\n\r\n"
        b"5\r\nhello\r\n0\r\n\r\n" + SMUGGLED
    ),
    "content-length-with-vertical-tab": (
        b"POST /cl HTTP/1.1\r\nHost: test\r\nContent-Length: 5\x0b\r\n\r\nhello" + SMUGGLED
    ),
    # A bare LF inside a field value: a server splitting lines at CRLF only would read the
    # rest as a second request.
    "bare-lf-inside-a-header-value": (
        b"GET /lf HTTP/1.1\r\nHost: test\r\nX-Note: one\n" + SMUGGLED
    ),
    # After the last chunk come trailer fields; a request line there is not one.
    "request-after-the-last-chunk-as-trailers": CHUNKED_HEAD + b"5\r\nhello\r\n0\r\n" + SMUGGLED,
    # RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 means the framing cannot be trusted.
    "transfer-encoding-in-http-1.0": (
        b"POST /old HTTP/1.0\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n0\r\n\r\n" + SMUGGLED
    ),
    # RFC 9112 3.2: an HTTP/1.1 request has exactly one Host, and a valid one.
    "missing-host": b"GET /nohost HTTP/1.1\r\nAccept: */*\r\n\r\n",
    "two-hosts": b"GET /hosts HTTP/1.1\r\nHost: test\r\nHost: other\r\n\r\n",
    "two-hosts-apart": b"GET /hosts HTTP/1.1\r\nHost: test\r\nX-A: 1\r\nhost: test\r\n\r\n",
    "host-with-space": b"GET /h HTTP/1.1\r\nHost: te st\r\n\r\n",
    "host-with-slash": b"GET /h HTTP/1.1\r\nHost: test/x\r\n\r\n",
    "host-with-at": b"GET /h HTTP/1.1\r\nHost: user@test\r\n\r\n",
    # Field names are tokens.
    "field-name-with-parenthesis": b"GET /n HTTP/1.1\r\nHost: test\r\nX(y): 1\r\n\r\n",
    "field-name-with-slash": b"GET /n HTTP/1.1\r\nHost: test\r\nX/y: 1\r\n\r\n",
    "field-name-non-ascii": b"GET /n HTTP/1.1\r\nHost: test\r\nX\xc3\xa9: 1\r\n\r\n",
    "field-name-with-nul": b"GET /n HTTP/1.1\r\nHost: test\r\nX\x00y: 1\r\n\r\n",
    # Field values: visible characters, spaces and tabs, and obs-text; no controls.
    "field-value-with-nul": b"GET /v HTTP/1.1\r\nHost: test\r\nX-A: a\x00b\r\n\r\n",
    "field-value-with-cr": b"GET /v HTTP/1.1\r\nHost: test\r\nX-A: a\rb\r\n\r\n",
    "field-value-with-escape": b"GET /v HTTP/1.1\r\nHost: test\r\nX-A: a\x1bb\r\n\r\n",
    "field-value-with-delete": b"GET /v HTTP/1.1\r\nHost: test\r\nX-A: a\x7fb\r\n\r\n",
    "host-value-with-nul": b"GET /v HTTP/1.1\r\nHost: te\x00st\r\n\r\n",
    # The request target: no controls, no spaces, no raw non-ASCII bytes.
    "target-with-control": b"GET /a\x01b HTTP/1.1\r\nHost: test\r\n\r\n",
    "target-with-nul": b"GET /a\x00b HTTP/1.1\r\nHost: test\r\n\r\n",
    "target-with-delete": b"GET /a\x7fb HTTP/1.1\r\nHost: test\r\n\r\n",
    "target-with-tab": b"GET /a\tb HTTP/1.1\r\nHost: test\r\n\r\n",
    "target-with-escape": b"GET /a\x1b[0mb HTTP/1.1\r\nHost: test\r\n\r\n",
    "target-with-utf8": b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: test\r\n\r\n",
    # Lines end with CRLF; a request ending its lines with a bare LF must be refused at
    # once, not waited on forever.
    "lines-ending-with-bare-lf": b"GET /lf HTTP/1.1\nHost: test\n\n",
    "head-ending-with-bare-lf": b"GET /lf HTTP/1.1\r\nHost: test\r\n\n",
    "chunk-size-ending-with-bare-lf": CHUNKED_HEAD + b"5\nhello\r\n0\r\n\r\n",
    "chunk-data-ending-with-bare-lf": CHUNKED_HEAD + b"5\r\nhello\n0\r\n\r\n",
    # A body on a request asking to switch protocols: the parser would leave it unread.
    "upgrade-with-a-body": (
        b"POST /up HTTP/1.1\r\nHost: test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        b"Content-Length: 5\r\n\r\nhello" + SMUGGLED
    ),
    "http2-prior-knowledge": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    "more-than-one-empty-line-first": b"\r\n\r\n" + SMUGGLED,
}


@pytest.mark.parametrize("raw", list(REFUSED.values()), ids=list(REFUSED))
async def test_request_breaking_the_framing_rules_gets_400_and_close(raw: bytes) -> None:
    handler = Recorder()
    async with Served(handler) as served:
        conn = await served.connect()
        conn.send(raw)
        assert await conn.answer() == refused(400, close=True)
        assert await conn.eof() == b""
        assert served.error_codes == [400]
        assert handler.seen == [], "the handler was given (part of) a refused request"
        await served.still_serving()
        assert handler.seen == ["GET /healthy"]


@pytest.mark.parametrize("piece", [1, 7], ids=["bytewise", "7-bytes"])
async def test_refused_whatever_the_reads(piece: int) -> None:
    # The same verdicts when the bytes come in small pieces, each a read of its own; the
    # refusal comes as soon as the offending bytes are in, without waiting for more.
    handler = Recorder()
    cases = {
        "bare-lf-inside-a-header-value": b"one\n",
        "request-after-the-last-chunk-as-trailers": b"0\r\nGET ",
    }
    async with Served(handler) as served:
        for name, offending in cases.items():
            raw = REFUSED[name]
            conn = await served.connect()
            await conn.trickle(raw[: raw.index(offending) + len(offending)], piece)
            assert await conn.answer() == refused(400, close=True), name
            assert await conn.eof() == b""
        assert handler.seen == []
        await served.still_serving()


async def test_good_requests_before_a_refused_one_are_answered() -> None:
    handler = Recorder()
    async with Served(handler) as served:
        conn = await served.connect()
        conn.send(get("/one") + post("/two", b"ab") + REFUSED["two-hosts"] + get("/never"))
        assert await conn.response() == echoed("GET /one")
        assert await conn.response() == echoed("POST /two", b"ab")
        assert await conn.response() == refused(400, close=True)
        assert await conn.eof() == b""
        assert handler.seen == ["GET /one", "POST /two"]


ACCEPTED = {
    # HTTP/1.0 predates Host.
    "http-1.0-without-host": (b"GET /old HTTP/1.0\r\n\r\n", "GET /old"),
    # RFC 9112 2.2: one empty line before a request line is tolerated.
    "one-empty-line-first": (b"\r\n" + get("/after-blank"), "GET /after-blank"),
    # RFC 9112 3: a recipient may split the request line on runs of spaces.
    "double-space-in-request-line": (b"GET  /spaced HTTP/1.1\r\nHost: test\r\n\r\n", "GET /spaced"),
    "empty-host": (b"GET /e HTTP/1.1\r\nHost:\r\n\r\n", "GET /e"),
    "ipv6-host-and-port": (b"GET /v6 HTTP/1.1\r\nHost: [::1]:6443\r\n\r\n", "GET /v6"),
    "obs-text-and-tab-in-a-value": (
        b"GET /o HTTP/1.1\r\nHost: test\r\nX-Name: caf\xe9\tbar\r\n\r\n",
        "GET /o",
    ),
    "upgrade-without-connection-upgrade": (
        b"GET /plain HTTP/1.1\r\nHost: test\r\nUpgrade: websocket\r\n\r\n",
        "GET /plain",
    ),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
async def test_requests_the_rules_allow_are_served(case: str) -> None:
    raw, line = ACCEPTED[case]
    handler = Recorder()
    async with Served(handler) as served:
        conn = await served.connect()
        conn.send(raw)
        close = raw.startswith(b"GET /old HTTP/1.0")
        assert await conn.response() == echoed(line, close=close)
        assert handler.seen == [line]
        assert served.errors == []


async def test_header_values_are_trimmed_and_latin1() -> None:
    seen: list[Request] = []

    def handler(request: Request) -> Response:
        seen.append(request)
        return echo_now(request)

    async with Served(handler) as served:
        conn = await served.connect()
        conn.send(b"GET /o HTTP/1.1\r\nHost: test \t\r\nX-Name: \tcaf\xe9\tbar \t\r\n\r\n")
        assert await conn.response() == echoed("GET /o")
    (request,) = seen
    assert request.headers["X-Name"] == "caf\xe9\tbar"
    assert request.host == "test"


@pytest.mark.parametrize(
    "raw",
    [
        b"GET /ws HTTP/1.1\r\nHost: test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        b"POST /ws HTTP/1.1\r\nHost: test\r\nConnection: upgrade\r\nUpgrade: SPDY/3.1\r\n"
        b"Content-Length: 0\r\n\r\n",
        b"CONNECT test:443 HTTP/1.1\r\nHost: test:443\r\n\r\n",
    ],
    ids=["websocket", "spdy", "connect"],
)
async def test_upgrade_requests_are_answered_then_the_connection_closed(raw: bytes) -> None:
    # No other protocol is spoken: the handler answers (exec and port-forward get an error
    # from it), and since what a client sends next would not be HTTP/1.1, nothing after the
    # request is read.
    handler = Recorder()
    async with Served(handler) as served:
        conn = await served.connect()
        conn.send(raw + SMUGGLED)
        line = raw.split(b" HTTP/1.1")[0].decode()
        assert await conn.response() == echoed(line, close=True)
        assert await conn.eof() == b""
        assert handler.seen == [line]
        await served.still_serving()
