"""Port forwarding on an upgraded connection, as the kubelet's streaming server does it
(k8s.io/kubelet pkg/cri/streaming/portforward: websocket.go, httpstream.go), and SPDY
tunnelled through a WebSocket as kube-apiserver accepts it from kubectl 1.31 on
(`SPDY/3.1+portforward.k8s.io`, k8s.io/apiserver pkg/util/proxy/streamtunnel.go).

Over WebSockets the ports are the request's `ports`; each has a data channel (2n) and an
error channel (2n+1), both opened with the port as two little-endian bytes. Over SPDY the
client opens a pair of streams (`streamType` error and data, with `port` and `requestID`
headers) for each connection it forwards. A port nothing listens on gets the error on the
error stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Awaitable, Callable, Mapping

from kubeforge.apiserver.request.errors import StatusError
from kubeforge.apiserver.streaming.bytestream import IDLE_TIMEOUT, ByteStream, within
from kubeforge.apiserver.streaming.runtime import InputStream, OutputStream
from kubeforge.apiserver.streaming.spdysession import SpdySession, SpdyStream
from kubeforge.apiserver.streaming.websocket import Channels, WebSocket

__all__ = [
    "SPDY_PROTOCOL",
    "TUNNEL_PROTOCOL",
    "WEBSOCKET_PROTOCOLS",
    "Connector",
    "TunnelStream",
    "parse_ports",
    "serve_spdy",
    "serve_websocket",
]

log = logging.getLogger("kubeforge.apiserver.streaming")

SPDY_PROTOCOL = "portforward.k8s.io"
TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"
WEBSOCKET_PROTOCOLS = ("v4.channel.k8s.io", "v4.base64.channel.k8s.io", "")
STREAM_CREATION_TIMEOUT = 30.0
_READ_SIZE = 32 * 1024
# Ports one WebSocket request may forward.
MAX_PORTS = 64

# Opens a connection to a port of the pod (OSError when nothing listens there).
Connector = Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
# What an error is written as: "error forwarding port <port> to pod <pod>, uid <uid>: ..."
Describe = Callable[[int, BaseException], str]


def parse_ports(query: Mapping[str, list[str]]) -> list[int]:
    """The `ports` of a WebSocket port-forward request (portforward.NewV4Options)."""
    values = query.get("ports") or []
    if not values:
        raise StatusError.bad_request('query parameter "ports" is required')
    ports: list[int] = []
    for value in values:
        if not value:
            raise StatusError.bad_request('query parameter "ports" cannot be empty')
        for part in value.split(","):
            if not part.isdigit() or int(part) > 65535:
                raise StatusError.bad_request(f'unable to parse "{value}" as a port')
            if int(part) < 1:
                raise StatusError.bad_request(f'port "{value}" must be > 0')
            ports.append(int(part))
    if len(ports) > MAX_PORTS:
        raise StatusError.bad_request(f"at most {MAX_PORTS} ports may be forwarded at once")
    return ports


async def _pump_in(source: InputStream, writer: asyncio.StreamWriter) -> None:
    """The client's bytes to the pod's port; its end half-closes the connection."""
    try:
        while data := await source.read():
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def _forward(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    source: InputStream,
    sink: OutputStream,
) -> None:
    """Copy both ways until the pod's side ends (what the client sends after is dropped)."""
    inbound = asyncio.create_task(_pump_in(source, writer))
    try:
        while data := await reader.read(_READ_SIZE):
            await sink.write(data)
    except (ConnectionError, OSError):
        pass
    finally:
        inbound.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await inbound
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


# WebSockets -------------------------------------------------------------------------------


class _ChannelSink:
    def __init__(self, channels: Channels, channel: int) -> None:
        self._channels = channels
        self._channel = channel

    async def write(self, data: bytes) -> None:
        await self._channels.write(self._channel, data)


async def serve_websocket(
    stream: ByteStream, protocol: str, ports: list[int], connect: Connector, describe: Describe
) -> None:
    """Forward `ports` over the channels of one WebSocket until each connection ends."""
    ws = WebSocket(stream, IDLE_TIMEOUT)
    data_channels = [2 * i for i in range(len(ports))]
    channels = Channels(ws, data_channels, base64="base64" in protocol, close_signal=False)
    reading = asyncio.create_task(channels.run())

    async def one(index: int, port: int) -> None:
        data, error = 2 * index, 2 * index + 1
        try:
            reader, writer = await connect(port)
        except (OSError, ValueError) as exc:
            await channels.write(error, describe(port, exc).encode())
            return
        await _forward(reader, writer, channels.readers[data], _ChannelSink(channels, data))

    try:
        for index, port in enumerate(ports):
            prefix = struct.pack("<H", port)
            await channels.write(2 * index, prefix)
            await channels.write(2 * index + 1, prefix)

        async def every() -> None:
            await asyncio.gather(*(one(i, p) for i, p in enumerate(ports)))

        forwarding = asyncio.create_task(every())
        done, _ = await asyncio.wait([forwarding, reading], return_when=asyncio.FIRST_COMPLETED)
        if forwarding not in done:
            forwarding.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await forwarding
        await ws.close()
    except ConnectionResetError:
        pass
    finally:
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reading
        stream.close()


# SPDY ----------------------------------------------------------------------------------------


class _Pair:
    def __init__(self) -> None:
        self.data: SpdyStream | None = None
        self.error: SpdyStream | None = None
        self.complete = asyncio.Event()


async def serve_spdy(stream: ByteStream, connect: Connector, describe: Describe) -> None:
    """Forward each connection the client opens streams for, until it closes the SPDY
    connection (the 101 answer, or the WebSocket tunnel, already set up)."""
    session = SpdySession(stream, IDLE_TIMEOUT)
    reading = asyncio.create_task(session.run())
    pairs: dict[str, _Pair] = {}
    tasks: set[asyncio.Task[None]] = set()

    def spawn(coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def expire(request_id: str, pair: _Pair) -> None:
        with contextlib.suppress(TimeoutError):
            await within(STREAM_CREATION_TIMEOUT, pair.complete.wait())
            return
        pairs.pop(request_id, None)
        if pair.error is not None:
            with contextlib.suppress(ConnectionResetError):
                await pair.error.write(
                    f"(request={request_id}) timed out waiting for streams".encode()
                )
                await pair.error.close()

    async def forward(pair: _Pair, port: int) -> None:
        assert pair.data is not None and pair.error is not None
        data, error = pair.data, pair.error
        try:
            try:
                reader, writer = await connect(port)
            except (OSError, ValueError) as exc:
                await error.write(describe(port, exc).encode())
                return
            await _forward(reader, writer, data, data)
        except ConnectionResetError:
            pass
        finally:
            data.discard()
            await data.close()
            await error.close()

    try:
        while (opened := await session.accept()) is not None:
            port_text = opened.headers.get("port", "")
            kind = opened.headers.get("streamtype", "")
            if not port_text.isdigit() or not 0 < int(port_text) <= 65535:
                await opened.abort()
                continue
            if kind not in ("data", "error"):
                await opened.abort()
                continue
            request_id = opened.headers.get("requestid", "")
            if not request_id:
                # Clients before request ids open error then data, ids two apart
                # (what the kubelet assumes for them too).
                offset = 0 if kind == "error" else 2
                request_id = str(opened.stream_id - offset)
            pair = pairs.get(request_id)
            if pair is None:
                pair = pairs[request_id] = _Pair()
                spawn(expire(request_id, pair))
            if getattr(pair, kind) is not None:
                await opened.abort()
                continue
            setattr(pair, kind, opened)
            if pair.data is not None and pair.error is not None:
                pairs.pop(request_id, None)
                pair.complete.set()
                spawn(forward(pair, int(port_text)))
        await session.wait_closed()
    except ConnectionResetError:
        pass
    finally:
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reading
        stream.close()


# SPDY through a WebSocket --------------------------------------------------------------------


class TunnelStream:
    """A WebSocket's binary messages as one byte stream, for SPDY tunnelled through it
    (client-go's TunnelingConnection)."""

    def __init__(self, ws: WebSocket) -> None:
        self._ws = ws

    async def read(self) -> bytes:
        while (fragment := await self._ws.receive()) is not None:
            if fragment.text:
                self._ws.abort()  # "invalid message type received"
                return b""
            if fragment.data:
                return fragment.data
        return b""

    async def write(self, data: bytes) -> None:
        await self._ws.send(data)

    def close(self) -> None:
        task = asyncio.ensure_future(self._close())
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    async def _close(self) -> None:
        with contextlib.suppress(ConnectionResetError):
            await self._ws.close()
        self._ws.end()

    def abort(self) -> None:
        self._ws.abort()
