"""The API server's exec and port-forward protocols by hand, over TLS, against a streaming
runtime of the test's own: the upgrade and what is refused before it, SPDY and WebSocket
framing, the outcome on the error stream, hostile frames ending only their connection, and
an upgraded connection outliving the HTTP layer's timeouts."""

from __future__ import annotations

import asyncio
import base64
import os
import ssl
import struct
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from wsproto import ConnectionType
from wsproto.connection import Connection
from wsproto.events import BytesMessage, CloseConnection, Message, TextMessage

from kubeforge._apiserver.streaming.runtime import (
    ContainerRef,
    ProcessStreams,
    StreamRefused,
)
from kubeforge._apiserver.streaming.spdyframes import (
    FLAG_FIN,
    Data,
    FrameReader,
    FrameWriter,
    GoAway,
    SynReply,
)
from kubeforge.apiserver import APIServer, ConnectionLimits
from kubeforge.testing import eventually
from tests.support import connect

EXEC = "/api/v1/namespaces/default/pods/web/exec"


class Runtime:
    """Runs `echo-stdin N` (its input back, then exit N) and `hold` (until its input ends)."""

    def __init__(self) -> None:
        self.listening: int | None = None

    def check(self, target: ContainerRef, subresource: str) -> None:
        if target.container == "gone":
            raise StreamRefused(404, "NotFound", 'container not found ("gone")')

    async def exec(self, target: ContainerRef, command: list[str], streams: ProcessStreams) -> int:
        assert streams.stdout is not None
        if streams.stdin is not None:
            while data := await streams.stdin.read():
                await streams.stdout.write(data)
        if command[0] == "hold":
            await streams.stdout.write(b"held\n")
        return int(command[1]) if len(command) > 1 else 0

    async def attach(self, target: ContainerRef, streams: ProcessStreams) -> None:
        return None

    async def port_forward(
        self, target: ContainerRef, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        raise ConnectionRefusedError(f"dial tcp4 127.0.0.1:{port}: connect: connection refused")


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    limits = ConnectionLimits(header_timeout=0.3, body_timeout=0.3, idle_timeout=0.3)
    async with APIServer(streams=Runtime(), connections=limits) as srv:
        async with connect(srv) as http:
            pod = {
                "metadata": {"name": "web"},
                "spec": {
                    "nodeName": "node",
                    "containers": [{"name": "c", "image": "x"}, {"name": "gone", "image": "x"}],
                },
            }
            reply = await http.post("/api/v1/namespaces/default/pods", pod)
            assert reply.status == 201, reply.body
        yield srv


class Tls:
    """One TLS connection to the server, spoken by hand."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, server: APIServer) -> Tls:
        context = ssl.create_default_context(cadata=server.ca_pem.decode())
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
        return cls(reader, writer)

    async def request(
        self, method: str, target: str, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", *headers_lines(headers)]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), 10)
        status_line, *rest = head.decode("latin-1").split("\r\n")[:-2]
        answer: dict[str, str] = {}
        for line in rest:
            name, _, value = line.partition(":")
            answer[name.lower()] = value.strip()
        body = b""
        if "content-length" in answer:
            body = await self.reader.readexactly(int(answer["content-length"]))
        return int(status_line.split()[1]), answer, body

    async def until_closed(self) -> bytes:
        return await asyncio.wait_for(self.reader.read(), 10)

    def close(self) -> None:
        self.writer.close()


def headers_lines(headers: dict[str, str]) -> list[str]:
    return [f"{name}: {value}" for name, value in headers.items()]


SPDY = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1"}


def token(server: APIServer) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}"}


async def test_what_is_refused_before_the_upgrade(server: APIServer) -> None:
    conn = await Tls.open(server)
    try:
        status, _, body = await conn.request(
            "POST", f"{EXEC}?command=x&stdout=1&container=c", token(server)
        )
        assert status == 400
        assert orjson.loads(body)["message"] == "Upgrade request required"
    finally:
        conn.close()
    conn = await Tls.open(server)
    try:
        headers = {**token(server), **SPDY, "X-Stream-Protocol-Version": "v9.channel.k8s.io"}
        status, answer, body = await conn.request(
            "POST", f"{EXEC}?command=x&stdout=1&container=c", headers
        )
        assert status == 403
        assert "unable to negotiate protocol" in orjson.loads(body)["message"]
        assert "v4.channel.k8s.io" in answer["x-accepted-stream-protocol-versions"]
    finally:
        conn.close()
    conn = await Tls.open(server)
    try:
        headers = {**token(server), **SPDY, "X-Stream-Protocol-Version": "v4.channel.k8s.io"}
        target = f"{EXEC}?command=x&stdout=1&container=gone"
        status, _, body = await conn.request("POST", target, headers)
        assert status == 404
        assert orjson.loads(body)["message"] == 'container not found ("gone")'
    finally:
        conn.close()


async def _spdy_exec(server: APIServer, command: str, conn: Tls) -> tuple[FrameWriter, FrameReader]:
    headers = {**token(server), **SPDY, "X-Stream-Protocol-Version": "v4.channel.k8s.io"}
    target = f"{EXEC}?{command}&container=c&stdin=1&stdout=1"
    status, answer, _ = await conn.request("POST", target, headers)
    assert status == 101
    assert answer["x-stream-protocol-version"] == "v4.channel.k8s.io"
    writer, reader = FrameWriter(), FrameReader()
    wire = writer.syn_stream(1, {"streamtype": "error"})
    wire += writer.syn_stream(3, {"streamtype": "stdin"})
    wire += writer.syn_stream(5, {"streamtype": "stdout"})
    conn.writer.write(wire)
    return writer, reader


async def _frames(conn: Tls, reader: FrameReader) -> list[Any]:
    frames: list[Any] = []
    while data := await asyncio.wait_for(conn.reader.read(65536), 10):
        frames += reader.feed(data)
    return frames


async def test_spdy_exec_reports_the_exit_code(server: APIServer) -> None:
    conn = await Tls.open(server)
    try:
        writer, reader = await _spdy_exec(server, "command=echo-stdin&command=7", conn)
        conn.writer.write(writer.data(3, b"typed") + writer.data(3, b"", FLAG_FIN))
        frames = await _frames(conn, reader)
    finally:
        conn.close()
    assert [f.stream_id for f in frames if isinstance(f, SynReply)] == [1, 3, 5]
    stdout = b"".join(f.data for f in frames if isinstance(f, Data) and f.stream_id == 5)
    assert stdout == b"typed"
    status = orjson.loads(
        b"".join(f.data for f in frames if isinstance(f, Data) and f.stream_id == 1)
    )
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "7"}]
    assert any(isinstance(f, GoAway) for f in frames)


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x80\x03\x00\x01\x00\x00\x00\x02xx",  # a SYN_STREAM cut short
        b"\x80\x02\x00\x06\x00\x00\x00\x04abcd",  # SPDY/2
        b"\x00\x00\x00\x00\x00\x00\x00\x01x",  # data for stream 0
        b"\x80\x03\x00\x01\x00\xff\xff\xff",  # a control frame of 16 MiB
        b"\xff" * 512,  # noise
    ],
)
async def test_hostile_spdy_frames_end_only_their_connection(
    server: APIServer, garbage: bytes
) -> None:
    conn = await Tls.open(server)
    try:
        _, reader = await _spdy_exec(server, "command=hold", conn)
        conn.writer.write(garbage)
        frames = await _frames(conn, reader)  # ends: the server closed the connection
        assert any(isinstance(f, GoAway) and f.status == 1 for f in frames)
    finally:
        conn.close()
    async with connect(server) as http:
        assert (await http.get("/readyz")).status == 200


def _websocket_headers(server: APIServer, protocol: str) -> dict[str, str]:
    return {
        **token(server),
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
        "Sec-WebSocket-Protocol": protocol,
    }


async def _messages(conn: Tls, ws: Connection, stop_after: int | None = None) -> list[Any]:
    """Events until the server closes (answered), or until `stop_after` messages."""
    events: list[Any] = []
    while data := await asyncio.wait_for(conn.reader.read(65536), 10):
        ws.receive_data(data)
        for event in ws.events():
            events.append(event)
            if isinstance(event, CloseConnection):
                if ws.state.name == "REMOTE_CLOSING":
                    conn.writer.write(ws.send(event.response()))
                return events
        if stop_after is not None and sum(isinstance(e, Message) for e in events) >= stop_after:
            return events
    return events


async def test_websocket_exec_with_the_v5_close_signal(server: APIServer) -> None:
    conn = await Tls.open(server)
    try:
        target = f"{EXEC}?command=echo-stdin&command=0&container=c&stdin=1&stdout=1"
        headers = _websocket_headers(server, "v5.channel.k8s.io, v4.channel.k8s.io")
        status, answer, _ = await conn.request("GET", target, headers)
        assert status == 101
        assert answer["sec-websocket-protocol"] == "v5.channel.k8s.io"
        ws = Connection(ConnectionType.CLIENT)
        conn.writer.write(ws.send(BytesMessage(b"\x00typed")) + ws.send(BytesMessage(b"\xff\x00")))
        events = await _messages(conn, ws)
    finally:
        conn.close()
    messages = [bytes(e.data) for e in events if isinstance(e, Message)]
    assert messages[0] == b"\x01"  # the empty message on stdout: connected
    assert b"\x01typed" in messages
    assert orjson.loads(messages[-1][1:]) == {"metadata": {}, "status": "Success"}
    assert messages[-1][0] == 3


async def test_an_unmasked_websocket_frame_ends_the_connection(server: APIServer) -> None:
    conn = await Tls.open(server)
    try:
        target = f"{EXEC}?command=hold&container=c&stdin=1&stdout=1"
        status, _, _ = await conn.request(
            "GET", target, _websocket_headers(server, "v4.channel.k8s.io")
        )
        assert status == 101
        conn.writer.write(b"\x82\x02\x00x")  # a client's frame must be masked
        ws = Connection(ConnectionType.CLIENT)
        events = await _messages(conn, ws)
        closing = [e for e in events if isinstance(e, CloseConnection)]
        assert closing and closing[0].code == 1002
    finally:
        conn.close()


async def test_an_upgraded_connection_outlives_the_http_timeouts(server: APIServer) -> None:
    conn = await Tls.open(server)
    try:
        writer, reader = await _spdy_exec(server, "command=hold&command=0", conn)
        for _ in range(3):  # three timeouts go by, each seen closing an idle connection
            idle = await Tls.open(server)
            assert await idle.until_closed() == b""
            idle.close()
        conn.writer.write(writer.data(3, b"", FLAG_FIN))
        frames = await _frames(conn, reader)
    finally:
        conn.close()
    stdout = b"".join(f.data for f in frames if isinstance(f, Data) and f.stream_id == 5)
    assert stdout == b"held\n"


async def test_port_forward_over_websocket_reports_a_closed_port(server: APIServer) -> None:
    conn = await Tls.open(server)
    try:
        target = "/api/v1/namespaces/default/pods/web/portforward?ports=8080"
        status, _, _ = await conn.request(
            "GET", target, _websocket_headers(server, "v4.channel.k8s.io")
        )
        assert status == 101
        events = await _messages(conn, Connection(ConnectionType.CLIENT))
    finally:
        conn.close()
    messages = [bytes(e.data) for e in events if isinstance(e, Message)]
    port = struct.pack("<H", 8080)
    assert messages[:2] == [b"\x00" + port, b"\x01" + port]
    assert messages[2].startswith(b"\x01error forwarding port 8080 to pod web")
    assert b"connection refused" in messages[2]


async def test_the_metrics_count_an_upgrade_as_101(server: APIServer) -> None:
    conn = await Tls.open(server)
    try:
        writer, reader = await _spdy_exec(server, "command=echo-stdin&command=0", conn)
        conn.writer.write(writer.data(3, b"", FLAG_FIN))
        await _frames(conn, reader)
    finally:
        conn.close()

    async def counted() -> bool:
        text = server.metrics.render().decode()
        return 'code="101"' in text and 'subresource="exec"' in text

    await eventually(counted, timeout=10)


async def test_websocket_base64_channels(server: APIServer) -> None:
    conn = await Tls.open(server)
    try:
        target = f"{EXEC}?command=echo-stdin&command=2&container=c&stdin=1&stdout=1"
        headers = _websocket_headers(server, "v4.base64.channel.k8s.io")
        status, answer, _ = await conn.request("GET", target, headers)
        assert status == 101
        assert answer["sec-websocket-protocol"] == "v4.base64.channel.k8s.io"
        ws = Connection(ConnectionType.CLIENT)
        conn.writer.write(ws.send(TextMessage("0" + base64.b64encode(b"typed").decode())))
        events = await _messages(conn, ws, stop_after=2)
        conn.writer.write(ws.send(CloseConnection(1000)))
        events += await _messages(conn, ws)
    finally:
        conn.close()
    texts = [e.data for e in events if isinstance(e, TextMessage)]
    assert texts[0] == "1"  # stdout, open, nothing on it yet
    assert texts[1] == "1" + base64.b64encode(b"typed").decode()
