"""WebSockets for exec, attach and port-forward: the opening handshake on top of the HTTP
layer's upgrade, frames by wsproto (RFC 6455, sans-IO), and Kubernetes' channel protocol on
top (k8s.io/apimachinery pkg/util/httpstream/wsstream/conn.go).

Each message starts with the number of its channel (0 stdin, 1 stdout, 2 stderr, 3 error,
4 resize for exec and attach; a data and an error channel per port for port forwarding); in
the `base64.` variants it is the digit of that number and the rest is base64 text. In
`v5.channel.k8s.io` the message [255, n] closes channel n (the client's end of stdin).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from wsproto import ConnectionType
from wsproto.connection import Connection, ConnectionState
from wsproto.events import (
    BytesMessage,
    CloseConnection,
    Event,
    Message,
    Ping,
    TextMessage,
)
from wsproto.frame_protocol import CloseReason
from wsproto.utilities import LocalProtocolError, RemoteProtocolError, generate_accept_token

from kubeforge.apiserver.request.errors import StatusError
from kubeforge.apiserver.streaming.bytestream import ByteStream, IdleTimer

__all__ = [
    "CLOSE_CHANNEL",
    "Channels",
    "Fragment",
    "WebSocket",
    "handshake_headers",
    "is_websocket",
    "offered_protocols",
]

log = logging.getLogger("kubeforge.apiserver.streaming")

CLOSE_CHANNEL = 255
# A base64 message is decoded whole: this is the most one may hold.
MAX_BASE64_MESSAGE = 1 << 20
# Chunks waiting in a channel before reading from the connection waits for its reader.
_CHANNEL_BACKLOG = 16


def is_websocket(headers: Mapping[str, str]) -> bool:
    """Whether a request asks for a WebSocket (wsstream.IsWebSocketRequest)."""
    upgrade = str(headers.get("Upgrade", "")).strip().lower()
    tokens = {t.strip().lower() for t in str(headers.get("Connection", "")).split(",")}
    return upgrade == "websocket" and "upgrade" in tokens


def offered_protocols(headers: Mapping[str, str]) -> list[str]:
    """The subprotocols the client offers, in its order of preference."""
    text = str(headers.get("Sec-WebSocket-Protocol", ""))
    return [p.strip() for p in text.split(",") if p.strip()]


def handshake_headers(headers: Mapping[str, str], protocol: str) -> dict[str, str]:
    """The headers of the 101 answer to a WebSocket request (RFC 6455 4.2.2); a request
    that is not a valid opening handshake is refused with 400."""
    version = str(headers.get("Sec-WebSocket-Version", "")).strip()
    if version != "13":
        raise StatusError.bad_request("websocket: unsupported version: only version 13 is served")
    key = str(headers.get("Sec-WebSocket-Key", "")).strip()
    try:
        valid = len(base64.b64decode(key, validate=True)) == 16
    except (binascii.Error, ValueError):
        valid = False
    if not valid:
        raise StatusError.bad_request("websocket: the Sec-WebSocket-Key header is not valid")
    answer: dict[str, str] = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Accept": generate_accept_token(key.encode("ascii")).decode("ascii"),
    }
    if protocol:
        answer["Sec-WebSocket-Protocol"] = protocol
    return answer


@dataclass(frozen=True)
class Fragment:
    """A piece of a message as it arrives: `first` and `last` mark the message's ends."""

    data: bytes
    text: bool
    first: bool
    last: bool


class WebSocket:
    """The server's end of a WebSocket on a connection's bytes."""

    def __init__(self, stream: ByteStream, idle_timeout: float) -> None:
        self._stream = stream
        self._ws = Connection(ConnectionType.SERVER)
        self._pending: deque[Event] = deque()
        self._in_message = False
        self._closed = False
        self._idle = IdleTimer(idle_timeout, stream.abort)

    async def receive(self) -> Fragment | None:
        """The next piece of a message; None once the connection has ended (its close
        handshake answered, or broken)."""
        while True:
            while self._pending:
                event = self._pending.popleft()
                fragment = await self._handle(event)
                if fragment is not None:
                    return fragment
                if self._closed:
                    return None
            if self._closed:
                return None
            data = await self._stream.read()
            self._idle.touch()
            if not data:
                self._end()
                return None
            try:
                self._ws.receive_data(data)
                self._pending.extend(self._ws.events())
            except (RemoteProtocolError, LocalProtocolError) as exc:
                await self._fail(exc)
                return None
            except Exception as exc:  # wsproto's ParseFailed and what it raises from it
                await self._fail(exc)
                return None

    async def _handle(self, event: Event) -> Fragment | None:
        if isinstance(event, Message):
            first = not self._in_message
            self._in_message = not event.message_finished
            if isinstance(event, TextMessage):
                return Fragment(event.data.encode(), True, first, event.message_finished)
            assert isinstance(event, BytesMessage)
            return Fragment(bytes(event.data), False, first, event.message_finished)
        if isinstance(event, Ping):
            await self._send_bytes(self._ws.send(event.response()))
        elif isinstance(event, CloseConnection):
            if self._ws.state is ConnectionState.REMOTE_CLOSING:
                await self._send_bytes(self._ws.send(event.response()))
            elif self._ws.state is ConnectionState.OPEN:
                # wsproto's report of a frame that broke the protocol (1002 and why).
                log.debug("websocket: %s", event.reason)
                await self._send_bytes(self._ws.send(CloseConnection(event.code, event.reason)))
            self._end()
        return None

    async def _fail(self, exc: Exception) -> None:
        """A frame broke the protocol: close with 1002 and end the connection."""
        log.debug("websocket: protocol error: %s", exc)
        try:
            if self._ws.state is ConnectionState.OPEN:
                closing = CloseConnection(CloseReason.PROTOCOL_ERROR, "protocol error")
                await self._send_bytes(self._ws.send(closing))
        except (LocalProtocolError, ConnectionResetError):
            pass
        self._end()

    def _end(self) -> None:
        self._closed = True
        self._idle.cancel()
        self._stream.close()

    async def _send_bytes(self, data: bytes) -> None:
        try:
            await self._stream.write(data)
        except ConnectionResetError:
            self._end()

    async def send(self, data: bytes, text: bool = False) -> None:
        """Send one message (raises ConnectionResetError once the connection is closed)."""
        if self._ws.state is not ConnectionState.OPEN:
            raise ConnectionResetError("the websocket is closed")
        message: TextMessage | BytesMessage
        message = TextMessage(data.decode("ascii")) if text else BytesMessage(data)
        self._idle.touch()
        await self._stream.write(self._ws.send(message))

    async def close(self, code: int = CloseReason.NORMAL_CLOSURE, reason: str = "") -> None:
        """Start the close handshake; the peer's answer ends `receive()`."""
        if self._ws.state in (ConnectionState.OPEN, ConnectionState.REMOTE_CLOSING):
            await self._send_bytes(self._ws.send(CloseConnection(code, reason or None)))

    def end(self) -> None:
        """Close the connection once what was written has been sent."""
        self._end()

    def abort(self) -> None:
        self._end()
        self._stream.abort()


class ChannelReader:
    """What the client sends on one channel."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(_CHANNEL_BACKLOG)
        self._ended = False

    async def put(self, data: bytes) -> None:
        if not self._ended and data:
            await self._queue.put(data)

    def end(self) -> None:
        if not self._ended:
            self._ended = True
            try:
                self._queue.put_nowait(b"")
            except asyncio.QueueFull:
                # The reader is behind: it finds the end after what is queued.
                asyncio.get_running_loop().create_task(self._queue.put(b""))

    async def read(self) -> bytes:
        if self._ended and self._queue.empty():
            return b""
        return await self._queue.get()


class Channels:
    """Kubernetes' channel protocol on a WebSocket: `readable` channels deliver what the
    client sends on them, `write()` sends on any channel."""

    def __init__(
        self, ws: WebSocket, readable: Iterable[int], *, base64: bool, close_signal: bool
    ) -> None:
        self.ws = ws
        self.base64 = base64
        self.close_signal = close_signal
        self.readers = {channel: ChannelReader() for channel in readable}

    async def run(self) -> None:
        """Read the client's messages into their channels until the connection ends."""
        channel: int | None = None
        text_parts: list[bytes] = []
        size = 0
        try:
            while (fragment := await self.ws.receive()) is not None:
                data = fragment.data
                if self.base64:
                    if fragment.first:
                        text_parts, size = [], 0
                    size += len(data)
                    if size > MAX_BASE64_MESSAGE:
                        await self.ws.close(CloseReason.MESSAGE_TOO_BIG, "message too big")
                        continue
                    text_parts.append(data)
                    if fragment.last:
                        await self._deliver_base64(b"".join(text_parts))
                    continue
                if fragment.first:
                    if not data:
                        channel = None
                        continue
                    channel, data = data[0], data[1:]
                    if channel == CLOSE_CHANNEL and self.close_signal:
                        self._close_signal(data)
                        channel = None
                        continue
                elif channel is None and data:
                    # A message that began empty: its first byte names its channel.
                    channel, data = data[0], data[1:]
                if channel is not None:
                    await self._deliver(channel, data)
        finally:
            for reader in self.readers.values():
                reader.end()

    def _close_signal(self, data: bytes) -> None:
        if len(data) == 1 and data[0] in self.readers:
            self.readers[data[0]].end()

    async def _deliver_base64(self, message: bytes) -> None:
        if not message:
            return
        channel = message[0] - ord("0")
        try:
            data = base64.b64decode(message[1:], validate=True)
        except (binascii.Error, ValueError):
            log.debug("websocket: a base64 message that is not base64 was ignored")
            return
        await self._deliver(channel, data)

    async def _deliver(self, channel: int, data: bytes) -> None:
        reader = self.readers.get(channel)
        if reader is not None:  # other channels are ignored, as wsstream ignores them
            await reader.put(data)

    async def write(self, channel: int, data: bytes) -> None:
        """Send `data` on `channel` (an empty message tells the client the channel is open)."""
        if self.base64:
            text = bytes([ord("0") + channel]) + base64.b64encode(data)
            await self.ws.send(text, text=True)
        else:
            await self.ws.send(bytes([channel]) + data)
