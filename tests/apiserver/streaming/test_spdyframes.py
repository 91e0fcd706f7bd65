"""SPDY/3.1 framing and the server's session under hostile input: whatever bytes arrive, the
reader yields frames or refuses with SpdyProtocolError, and a session ends its connection
(GOAWAY, close) without raising; header blocks that inflate past the limit are refused."""

from __future__ import annotations

import asyncio
import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kubeforge._apiserver.streaming.spdyframes import (
    DICTIONARY,
    Data,
    FrameReader,
    FrameWriter,
    GoAway,
    Limits,
    Ping,
    SpdyProtocolError,
    SynReply,
    SynStream,
)
from kubeforge._apiserver.streaming.spdysession import SpdySession

BOUNDED = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def _control(kind: int, payload: bytes, flags: int = 0, version: int = 3) -> bytes:
    head = struct.pack(">II", 0x80000000 | version << 16 | kind, flags << 24 | len(payload))
    return head + payload


def test_the_dictionary_is_spdy3s() -> None:
    # SPDY/3's dictionary is 1423 bytes; zlib names a preset dictionary by its Adler-32.
    assert len(DICTIONARY) == 1423
    assert DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert DICTIONARY.endswith(b"charset=iso-8859-1,utf-,*,enq=0.")


def test_frames_round_trip() -> None:
    client, server = FrameWriter(), FrameReader()
    wire = client.syn_stream(1, {"streamtype": "error", "port": "80"})
    wire += client.syn_stream(3, {"streamtype": "data"}, flags=1)
    wire += client.data(1, b"hello", flags=1) + client.ping(7) + client.goaway(3)
    frames = server.feed(wire[:5]) + server.feed(wire[5:])  # in pieces, as reads come
    assert frames == [
        SynStream(1, 0, 0, 0, {"streamtype": ["error"], "port": ["80"]}),
        SynStream(3, 0, 0, 1, {"streamtype": ["data"]}),
        Data(1, 1, b"hello"),
        Ping(7),
        GoAway(3, 0),
    ]
    reply = FrameReader().feed(FrameWriter().syn_reply(5, {}))
    assert reply == [SynReply(5, 0, {})]


def test_a_header_block_that_inflates_past_the_limit_is_refused() -> None:
    count = 2000
    block = struct.pack(">I", count) + b"".join(
        struct.pack(">I", 7) + f"x{i:06d}".encode() + struct.pack(">I", 1000) + b"a" * 1000
        for i in range(count)
    )
    deflate = zlib.compressobj(zdict=DICTIONARY)
    compressed = deflate.compress(block) + deflate.flush(zlib.Z_SYNC_FLUSH)
    assert len(compressed) < 64 * 1024 < len(block)
    frame = _control(1, struct.pack(">IIH", 1, 0, 0) + compressed)
    with pytest.raises(SpdyProtocolError, match="over the limit"):
        FrameReader(Limits(max_header_block=64 * 1024)).feed(frame)


@pytest.mark.parametrize(
    "wire",
    [
        _control(1, b"\x00\x00\x00\x01"),  # SYN_STREAM too short
        _control(1, struct.pack(">IIH", 1, 0, 0) + b"not zlib at all"),
        _control(6, b"\x00\x00"),  # PING of the wrong length
        _control(6, b"\x00\x00\x00\x01", version=2),  # not SPDY/3
        struct.pack(">II", 0, 5) + b"hello",  # data for stream 0
        struct.pack(">II", 1, 1 << 23) + b"x",  # a data frame past the limit
        _control(4, b"\x00\x00\x00\x05"),  # SETTINGS counting entries it lacks
    ],
)
def test_malformed_frames_are_refused(wire: bytes) -> None:
    with pytest.raises(SpdyProtocolError):
        FrameReader(Limits(max_data_frame=1 << 22)).feed(wire)


@BOUNDED
@given(st.lists(st.binary(max_size=64), max_size=8))
def test_any_bytes_are_frames_or_a_protocol_error(chunks: list[bytes]) -> None:
    reader = FrameReader()
    try:
        for chunk in chunks:
            reader.feed(chunk)
    except SpdyProtocolError:
        pass


class _Wire:
    """A connection's bytes in memory: what the client sent, what the server wrote."""

    def __init__(self, incoming: list[bytes]) -> None:
        self.incoming = list(incoming)
        self.written = bytearray()
        self.closed = False

    async def read(self) -> bytes:
        return self.incoming.pop(0) if self.incoming and not self.closed else b""

    async def write(self, data: bytes) -> None:
        if self.closed:
            raise ConnectionResetError
        self.written += data

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True


_frames = st.one_of(
    st.binary(max_size=40),
    st.builds(lambda sid, h: FrameWriter().syn_stream(sid, h), st.integers(0, 9), st.just({})),
    st.builds(
        lambda sid, data, flags: FrameWriter().data(sid, data, flags),
        st.integers(0, 9),
        st.binary(max_size=16),
        st.integers(0, 255),
    ),
    st.builds(
        lambda kind, payload, flags: _control(kind, payload, flags),
        st.integers(0, 12),
        st.binary(max_size=24),
        st.integers(0, 255),
    ),
)


@BOUNDED
@given(st.lists(_frames, max_size=10))
def test_a_session_ends_hostile_connections_without_raising(frames: list[bytes]) -> None:
    async def serve() -> _Wire:
        wire = _Wire(frames)
        session = SpdySession(wire, idle_timeout=60)
        await session.run()
        while (stream := await session.accept()) is not None:
            assert stream.stream_id % 2 == 1
        return wire

    wire = asyncio.run(serve())
    # What the server wrote is itself well formed: replies, resets, pings, a GOAWAY.
    FrameReader().feed(bytes(wire.written))
