"""SPDY/3.1 frames as kubectl and client-go send them (github.com/moby/spdystream's `spdy`
package, which follows the SPDY/3 draft): reading with strict limits, and writing the few a
server sends. Decision 0049 says why this is written here rather than taken from a library.

A frame is an 8-byte head and a payload: a control frame (the top bit set) carries the
version (3), its type, flags and length; a data frame a stream id, flags and length. Header
blocks (SYN_STREAM, SYN_REPLY, HEADERS) are zlib-compressed with SPDY/3's dictionary, one
compression context per direction for the connection's whole life.

Anything malformed raises `SpdyProtocolError`; the session then ends the connection. Limits:
a frame's payload, a header block (compressed and inflated: a small block that inflates to
megabytes is refused before it does), the number and size of headers.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

__all__ = [
    "DICTIONARY",
    "FLAG_FIN",
    "FLAG_UNIDIRECTIONAL",
    "Data",
    "Frame",
    "FrameReader",
    "FrameWriter",
    "GoAway",
    "Headers",
    "Limits",
    "Ping",
    "RstStream",
    "Settings",
    "SpdyProtocolError",
    "SynReply",
    "SynStream",
    "WindowUpdate",
]

VERSION = 3
SYN_STREAM = 1
SYN_REPLY = 2
RST_STREAM = 3
SETTINGS = 4
PING = 6
GOAWAY = 7
HEADERS = 8
WINDOW_UPDATE = 9

FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02

# RST_STREAM status codes (SPDY/3 2.6.3), and GOAWAY's.
PROTOCOL_ERROR = 1
INVALID_STREAM = 2
REFUSED_STREAM = 3
CANCEL = 5
INTERNAL_ERROR = 6
STREAM_IN_USE = 8
STREAM_ALREADY_CLOSED = 9
FRAME_TOO_LARGE = 11
GOAWAY_OK = 0
GOAWAY_PROTOCOL_ERROR = 1


def _dictionary() -> bytes:
    """SPDY/3's header compression dictionary (draft 3, 2.6.10.1): length-prefixed header
    names and values, then common values run together."""
    words = [
        "options",
        "head",
        "post",
        "put",
        "delete",
        "trace",
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "accept-ranges",
        "age",
        "allow",
        "authorization",
        "cache-control",
        "connection",
        "content-base",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-md5",
        "content-range",
        "content-type",
        "date",
        "etag",
        "expect",
        "expires",
        "from",
        "host",
        "if-match",
        "if-modified-since",
        "if-none-match",
        "if-range",
        "if-unmodified-since",
        "last-modified",
        "location",
        "max-forwards",
        "pragma",
        "proxy-authenticate",
        "proxy-authorization",
        "range",
        "referer",
        "retry-after",
        "server",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "vary",
        "via",
        "warning",
        "www-authenticate",
        "method",
        "get",
        "status",
    ]
    words += ["200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive"]
    words += ["origin"]
    prefixed = b"".join(struct.pack(">I", len(w)) + w.encode() for w in words)
    tail = (
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417"
        "502504505203 Non-Authoritative Information204 No Content301 Moved Permanently"
        "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error"
        "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct "
        "Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,"
        "image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
        "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8"
        "charset=iso-8859-1,utf-,*,enq=0."
    )
    return prefixed + tail.encode()


DICTIONARY = _dictionary()


class SpdyProtocolError(Exception):
    """The peer broke the protocol (or a limit): the connection ends with GOAWAY."""


@dataclass(frozen=True)
class Limits:
    """What one connection may send. A data frame's payload may be as large as the protocol
    allows (16 MiB) only up to `max_data_frame`; control frames are small by nature."""

    max_data_frame: int = 1 << 22
    max_control_frame: int = 1 << 16
    max_header_block: int = 1 << 16  # inflated
    max_headers: int = 64


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    associated: int
    priority: int
    flags: int
    headers: dict[str, list[str]]


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    flags: int
    headers: dict[str, list[str]]


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Settings:
    entries: list[tuple[int, int, int]] = field(default_factory=list)  # (flags, id, value)


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_stream_id: int
    status: int


@dataclass(frozen=True)
class Headers:
    stream_id: int
    flags: int
    headers: dict[str, list[str]]


@dataclass(frozen=True)
class WindowUpdate:
    stream_id: int
    delta: int


@dataclass(frozen=True)
class Data:
    stream_id: int
    flags: int
    data: bytes


Frame = SynStream | SynReply | RstStream | Settings | Ping | GoAway | Headers | WindowUpdate | Data

_HEAD = struct.Struct(">II")
_STREAM_ID = 0x7FFFFFFF


class FrameReader:
    """Frames from a connection's bytes, as they arrive."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._buffer = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)

    def feed(self, data: bytes) -> list[Frame]:
        """The frames `data` completes (SpdyProtocolError for a malformed one)."""
        self._buffer += data
        frames: list[Frame] = []
        buffer = self._buffer
        while len(buffer) >= 8:
            first, second = _HEAD.unpack_from(buffer)
            length = second & 0xFFFFFF
            control = bool(first & 0x80000000)
            limit = self.limits.max_control_frame if control else self.limits.max_data_frame
            if length > limit:
                raise SpdyProtocolError(f"a frame of {length} bytes is over the limit of {limit}")
            if len(buffer) < 8 + length:
                break
            payload = bytes(buffer[8 : 8 + length])
            del buffer[: 8 + length]
            flags = second >> 24
            if control:
                frame = self._control(first, flags, payload)
                if frame is not None:
                    frames.append(frame)
            else:
                stream_id = first & _STREAM_ID
                if stream_id == 0:
                    raise SpdyProtocolError("a data frame for stream 0")
                frames.append(Data(stream_id, flags, payload))
        return frames

    def _control(self, first: int, flags: int, payload: bytes) -> Frame | None:
        version = (first >> 16) & 0x7FFF
        kind = first & 0xFFFF
        if version != VERSION:
            raise SpdyProtocolError(f"SPDY version {version}: only version 3 is spoken")
        if kind == SYN_STREAM:
            self._need(payload, 10, "SYN_STREAM")
            stream_id, associated = struct.unpack_from(">II", payload)
            stream_id &= _STREAM_ID
            if stream_id == 0:
                raise SpdyProtocolError("SYN_STREAM for stream 0")
            priority = payload[8] >> 5
            headers = self._header_block(payload[10:])
            return SynStream(stream_id, associated & _STREAM_ID, priority, flags, headers)
        if kind == SYN_REPLY:
            self._need(payload, 4, "SYN_REPLY")
            (stream_id,) = struct.unpack_from(">I", payload)
            return SynReply(stream_id & _STREAM_ID, flags, self._header_block(payload[4:]))
        if kind == HEADERS:
            self._need(payload, 4, "HEADERS")
            (stream_id,) = struct.unpack_from(">I", payload)
            return Headers(stream_id & _STREAM_ID, flags, self._header_block(payload[4:]))
        if kind == RST_STREAM:
            self._exact(payload, 8, "RST_STREAM")
            stream_id, status = struct.unpack(">II", payload)
            return RstStream(stream_id & _STREAM_ID, status)
        if kind == SETTINGS:
            self._need(payload, 4, "SETTINGS")
            (count,) = struct.unpack_from(">I", payload)
            if len(payload) != 4 + 8 * count:
                raise SpdyProtocolError("SETTINGS of the wrong length")
            entries = []
            for i in range(count):
                head, value = struct.unpack_from(">II", payload, 4 + 8 * i)
                entries.append((head >> 24, head & 0xFFFFFF, value))
            return Settings(entries)
        if kind == PING:
            self._exact(payload, 4, "PING")
            return Ping(struct.unpack(">I", payload)[0])
        if kind == GOAWAY:
            self._exact(payload, 8, "GOAWAY")
            last, status = struct.unpack(">II", payload)
            return GoAway(last & _STREAM_ID, status)
        if kind == WINDOW_UPDATE:
            self._exact(payload, 8, "WINDOW_UPDATE")
            stream_id, delta = struct.unpack(">II", payload)
            return WindowUpdate(stream_id & _STREAM_ID, delta & _STREAM_ID)
        return None  # SPDY/3 2.2.1: control frames of unknown types are ignored

    @staticmethod
    def _need(payload: bytes, size: int, what: str) -> None:
        if len(payload) < size:
            raise SpdyProtocolError(f"{what} is too short")

    @staticmethod
    def _exact(payload: bytes, size: int, what: str) -> None:
        if len(payload) != size:
            raise SpdyProtocolError(f"{what} of the wrong length")

    def _header_block(self, compressed: bytes) -> dict[str, list[str]]:
        """Inflate and parse a header block: names (lower-case, unique) to their values."""
        limit = self.limits.max_header_block
        try:
            block = self._inflate.decompress(compressed, limit + 1)
        except zlib.error as exc:
            raise SpdyProtocolError(f"a header block that does not inflate: {exc}") from None
        if len(block) > limit or self._inflate.unconsumed_tail:
            raise SpdyProtocolError(f"a header block over the limit of {limit} bytes")
        if len(block) < 4:
            raise SpdyProtocolError("an empty header block")
        (count,) = struct.unpack_from(">I", block)
        if count > self.limits.max_headers:
            raise SpdyProtocolError(f"{count} headers, over the limit of {self.limits.max_headers}")
        headers: dict[str, list[str]] = {}
        offset = 4
        for _ in range(count):
            name, offset = _string(block, offset)
            value, offset = _string(block, offset)
            if not name or name != name.lower():
                raise SpdyProtocolError("a header name that is empty or not lower-case")
            if name in headers:
                raise SpdyProtocolError(f"the header {name!r} twice")
            headers[name] = value.split("\0")
        if offset != len(block):
            raise SpdyProtocolError("bytes after the last header")
        return headers


def _string(block: bytes, offset: int) -> tuple[str, int]:
    if offset + 4 > len(block):
        raise SpdyProtocolError("a header block cut short")
    (size,) = struct.unpack_from(">I", block, offset)
    end = offset + 4 + size
    if end > len(block):
        raise SpdyProtocolError("a header block cut short")
    return block[offset + 4 : end].decode("latin-1"), end


class FrameWriter:
    """The frames a server sends, encoded."""

    def __init__(self) -> None:
        self._deflate = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zdict=DICTIONARY)

    def _control(self, kind: int, flags: int, payload: bytes) -> bytes:
        return _HEAD.pack(0x80000000 | VERSION << 16 | kind, flags << 24 | len(payload)) + payload

    def _header_block(self, headers: dict[str, str]) -> bytes:
        parts = [struct.pack(">I", len(headers))]
        for name, value in headers.items():
            raw_name, raw_value = name.lower().encode("latin-1"), value.encode("latin-1")
            parts.append(struct.pack(">I", len(raw_name)) + raw_name)
            parts.append(struct.pack(">I", len(raw_value)) + raw_value)
        block = b"".join(parts)
        return self._deflate.compress(block) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def syn_stream(self, stream_id: int, headers: dict[str, str], flags: int = 0) -> bytes:
        block = self._header_block(headers)
        return self._control(SYN_STREAM, flags, struct.pack(">IIH", stream_id, 0, 0) + block)

    def syn_reply(self, stream_id: int, headers: dict[str, str], flags: int = 0) -> bytes:
        block = self._header_block(headers)
        return self._control(SYN_REPLY, flags, struct.pack(">I", stream_id) + block)

    def rst_stream(self, stream_id: int, status: int) -> bytes:
        return self._control(RST_STREAM, 0, struct.pack(">II", stream_id, status))

    def ping(self, ping_id: int) -> bytes:
        return self._control(PING, 0, struct.pack(">I", ping_id))

    def goaway(self, last_stream_id: int, status: int = GOAWAY_OK) -> bytes:
        return self._control(GOAWAY, 0, struct.pack(">II", last_stream_id, status))

    def data(self, stream_id: int, data: bytes, flags: int = 0) -> bytes:
        return _HEAD.pack(stream_id & _STREAM_ID, flags << 24 | len(data)) + data
