"""A SPDY/3.1 connection, the server's end, as moby/spdystream (what client-go dials) runs
one: the client opens streams (SYN_STREAM, odd ids, each answered at once with SYN_REPLY),
both sides send data and half-close a stream with FIN, RST_STREAM ends one at once, PING is
answered, GOAWAY ends the connection. Flow control is TCP's: spdystream sends no
WINDOW_UPDATE and honours none, so neither does this end (WINDOW_UPDATE and SETTINGS are
read and ignored).

A protocol error, or a limit broken, ends the connection with GOAWAY (PROTOCOL_ERROR).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from kubeforge.apiserver.streaming.bytestream import ByteStream, IdleTimer
from kubeforge.apiserver.streaming.spdyframes import (
    CANCEL,
    FLAG_FIN,
    FLAG_UNIDIRECTIONAL,
    GOAWAY_OK,
    GOAWAY_PROTOCOL_ERROR,
    PROTOCOL_ERROR,
    REFUSED_STREAM,
    Data,
    Frame,
    FrameReader,
    FrameWriter,
    GoAway,
    Headers,
    Limits,
    Ping,
    RstStream,
    SpdyProtocolError,
    SynStream,
)

__all__ = ["MAX_STREAMS", "SpdySession", "SpdyStream"]

log = logging.getLogger("kubeforge.apiserver.streaming")

# Streams a connection may open in all: an exec opens five at most; port forwarding two
# per forwarded connection.
MAX_STREAMS = 10_000
# Streams open at once.
MAX_OPEN_STREAMS = 256
# Writes are cut to frames of at most this much.
_MAX_WRITE = 32 * 1024
# Chunks waiting in a stream before reading from the connection waits for its reader.
_STREAM_BACKLOG = 16


class SpdyStream:
    """One stream the client opened: its headers, what it sends, and our side of it."""

    def __init__(self, session: SpdySession, stream_id: int, headers: dict[str, str]) -> None:
        self.session = session
        self.stream_id = stream_id
        self.headers = headers
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(_STREAM_BACKLOG)
        self.remote_closed = False  # the client sent FIN (or the stream was reset)
        self.local_closed = False  # we sent FIN
        self.reset = False
        self.discarding = False

    # what the client sends ------------------------------------------------------------------

    async def _deliver(self, data: bytes) -> None:
        if data and not self.remote_closed and not self.discarding:
            await self._queue.put(data)

    def _end(self) -> None:
        if not self.remote_closed:
            self.remote_closed = True
            try:
                self._queue.put_nowait(b"")
            except asyncio.QueueFull:
                asyncio.get_running_loop().create_task(self._queue.put(b""))

    async def read(self) -> bytes:
        """The next bytes; b"" once the client has closed its side (or reset the stream)."""
        if self.remote_closed and self._queue.empty():
            return b""
        return await self._queue.get()

    def discard(self) -> None:
        """Drop whatever the client still sends on this stream."""
        self.discarding = True
        while not self._queue.empty():
            self._queue.get_nowait()

    # our side -------------------------------------------------------------------------------

    async def write(self, data: bytes) -> None:
        """Send data (ConnectionResetError once the stream or connection is gone)."""
        if self.reset or self.local_closed:
            raise ConnectionResetError(f"stream {self.stream_id} is closed")
        for start in range(0, len(data), _MAX_WRITE):
            chunk = data[start : start + _MAX_WRITE]
            await self.session.send(self.session.writer.data(self.stream_id, chunk))

    async def close(self) -> None:
        """Half-close: FIN on our side (once)."""
        if self.reset or self.local_closed:
            return
        self.local_closed = True
        try:
            await self.session.send(self.session.writer.data(self.stream_id, b"", FLAG_FIN))
        except ConnectionResetError:
            pass
        self.session.forget_if_done(self)

    async def abort(self, status: int = CANCEL) -> None:
        """RST_STREAM: end both sides at once."""
        if self.reset:
            return
        self.reset = self.local_closed = True
        self._end()
        try:
            await self.session.send(self.session.writer.rst_stream(self.stream_id, status))
        except ConnectionResetError:
            pass
        self.session.forget_if_done(self)


class SpdySession:
    """The server's end of a SPDY connection: `accept()` gives each stream the client opens."""

    def __init__(
        self, stream: ByteStream, idle_timeout: float, limits: Limits | None = None
    ) -> None:
        self.stream = stream
        self.reader = FrameReader(limits)
        self.writer = FrameWriter()
        self.streams: dict[int, SpdyStream] = {}
        self._incoming: deque[SpdyStream] = deque()
        self._arrived = asyncio.Event()
        self._last_id = 0
        self._opened = 0
        self._closed = False
        self._peer_gone = False  # the client sent GOAWAY: it opens no more streams
        self._goaway_sent = False
        self._idle = IdleTimer(idle_timeout, stream.abort)

    @property
    def closed(self) -> bool:
        return self._closed

    async def run(self) -> None:
        """Read frames until the connection ends."""
        try:
            while not self._closed:
                data = await self.stream.read()
                if not data:
                    break
                self._idle.touch()
                for frame in self.reader.feed(data):
                    await self._handle(frame)
        except SpdyProtocolError as exc:
            log.debug("spdy: protocol error: %s", exc)
            await self._goaway(GOAWAY_PROTOCOL_ERROR)
            self.stream.close()
        except ConnectionResetError:
            pass
        finally:
            self._finish()

    def _finish(self) -> None:
        self._closed = True
        self._idle.cancel()
        for stream in self.streams.values():
            stream.reset = True
            stream._end()
        self._arrived.set()

    async def _handle(self, frame: Frame) -> None:
        if isinstance(frame, Data):
            stream = self.streams.get(frame.stream_id)
            if stream is None:
                if frame.stream_id > self._last_id:
                    raise SpdyProtocolError(f"data for stream {frame.stream_id}, never opened")
                return  # a stream we have let go of: what is still in flight is dropped
            await stream._deliver(frame.data)
            if frame.flags & FLAG_FIN:
                stream._end()
                self.forget_if_done(stream)
        elif isinstance(frame, SynStream):
            await self._open(frame)
        elif isinstance(frame, RstStream):
            stream = self.streams.pop(frame.stream_id, None)
            if stream is not None:
                stream.reset = stream.local_closed = True
                stream._end()
        elif isinstance(frame, Ping):
            if frame.ping_id & 1:  # the client's (odd) pings are answered; ours have none
                await self.send(self.writer.ping(frame.ping_id))
        elif isinstance(frame, GoAway):
            # The client opens nothing more; what is open goes on until it closes.
            self._peer_gone = True
            self._arrived.set()
        elif (
            isinstance(frame, Headers)
            and frame.stream_id not in self.streams
            and frame.stream_id > self._last_id
        ):
            raise SpdyProtocolError(f"HEADERS for stream {frame.stream_id}, never opened")
        # SETTINGS and WINDOW_UPDATE change nothing here; SYN_REPLY is a client's frame.

    async def _open(self, frame: SynStream) -> None:
        stream_id = frame.stream_id
        if stream_id % 2 == 0 or stream_id <= self._last_id:
            # SPDY/3 2.3.2: a stream id that is not new and odd is a protocol error.
            raise SpdyProtocolError(f"SYN_STREAM with stream id {stream_id}")
        self._last_id = stream_id
        self._opened += 1
        if self._goaway_sent:
            await self.send(self.writer.rst_stream(stream_id, REFUSED_STREAM))
            return
        if self._opened > MAX_STREAMS or len(self.streams) >= MAX_OPEN_STREAMS:
            await self.send(self.writer.rst_stream(stream_id, REFUSED_STREAM))
            return
        if frame.associated:
            await self.send(self.writer.rst_stream(stream_id, PROTOCOL_ERROR))
            return
        headers = {name: values[0] if values else "" for name, values in frame.headers.items()}
        stream = SpdyStream(self, stream_id, headers)
        self.streams[stream_id] = stream
        if frame.flags & (FLAG_FIN | FLAG_UNIDIRECTIONAL):
            stream._end()
        await self.send(self.writer.syn_reply(stream_id, {}))
        self._incoming.append(stream)
        self._arrived.set()

    def forget_if_done(self, stream: SpdyStream) -> None:
        if stream.remote_closed and stream.local_closed:
            self.streams.pop(stream.stream_id, None)

    async def accept(self) -> SpdyStream | None:
        """The next stream the client opens; None once the connection has ended."""
        while not self._incoming:
            if self._closed or self._peer_gone:
                return None
            self._arrived.clear()
            await self._arrived.wait()
        return self._incoming.popleft()

    async def send(self, frame: bytes) -> None:
        if self._closed and self._goaway_sent:
            raise ConnectionResetError("the connection is closed")
        self._idle.touch()
        await self.stream.write(frame)

    async def wait_closed(self) -> None:
        """Until the connection has ended."""
        while not self._closed:
            self._arrived.clear()
            await self._arrived.wait()

    async def _goaway(self, status: int) -> None:
        if self._goaway_sent:
            return
        try:
            await self.stream.write(self.writer.goaway(self._last_id, status))
        except ConnectionResetError:
            pass
        self._goaway_sent = True

    async def close(self) -> None:
        """GOAWAY, then close the connection once what was written has been sent."""
        await self._goaway(GOAWAY_OK)
        self._closed = True
        self._idle.cancel()
        self.stream.close()
        self._arrived.set()
