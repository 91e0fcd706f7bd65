"""exec and attach on an upgraded connection, over WebSockets or SPDY, as the kubelet's
streaming server runs them (k8s.io/kubelet pkg/cri/streaming/remotecommand: httpstream.go,
websocket.go, exec.go) and kube-apiserver's WebSocket translator for `v5.channel.k8s.io`
(k8s.io/apiserver pkg/util/proxy/streamtranslator.go, websocket.go).

The client's streams are stdin, stdout, stderr (as asked), an error stream that carries the
outcome, and, with a terminal, a resize stream. The outcome is a metav1.Status in JSON from
`v4.channel.k8s.io` on (an exit code other than 0 is a Failure with reason NonZeroExitCode
and the code as its ExitCode cause); before that, only a failure's message is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from kubeforge.apiserver.request.errors import StatusError
from kubeforge.apiserver.streaming.bytestream import IDLE_TIMEOUT, ByteStream, within
from kubeforge.apiserver.streaming.runtime import (
    InputStream,
    ProcessStreams,
    StreamFailed,
    TerminalSize,
)
from kubeforge.apiserver.streaming.spdysession import SpdySession, SpdyStream
from kubeforge.apiserver.streaming.websocket import Channels, WebSocket

__all__ = [
    "SPDY_PROTOCOLS",
    "WEBSOCKET_PROTOCOLS",
    "Runner",
    "StreamOptions",
    "serve_spdy",
    "serve_websocket",
]

log = logging.getLogger("kubeforge.apiserver.streaming")

V5, V4, V3, V2, V1 = (
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
)
# SPDY: v5 is v4 there (its close signal is SPDY's own FIN).
SPDY_PROTOCOLS = (V5, V4, V3, V2, V1)
# WebSockets: v5 as kube-apiserver's translator serves it, the rest as the kubelet does
# ("" when the client names no subprotocol).
WEBSOCKET_PROTOCOLS = (V5, V4, "v4.base64.channel.k8s.io", V1, "base64.channel.k8s.io", "")
_JSON_STATUS = frozenset({V5, V4, "v4.base64.channel.k8s.io"})
_RESIZING = frozenset({V5, V4, V3})

STDIN, STDOUT, STDERR, ERROR, RESIZE = range(5)
# kube's DefaultStreamCreationTimeout: how long a SPDY client has to open its streams.
STREAM_CREATION_TIMEOUT = 30.0
# How long the server waits for the client to close the connection once the outcome is
# written (the translator's finishTimeout bounds the same wait).
FINISH_TIMEOUT = 15.0

# Runs the command (or attaches): its exit code, or None for an attach that ended.
Runner = Callable[[ProcessStreams], Awaitable[int | None]]


@dataclass(frozen=True)
class StreamOptions:
    """The streams a request asks for (stdin, stdout, stderr, tty query parameters)."""

    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool

    @classmethod
    def from_query(cls, query: Mapping[str, list[str]], terminal: bool = True) -> StreamOptions:
        """As remotecommand.NewOptions reads them; with a terminal stderr is stdout.
        `terminal` False: no terminal, whatever was asked."""

        def flag(name: str) -> bool:
            return (query.get(name) or [""])[0] in ("1", "true", "True")

        tty = flag("tty") and terminal
        options = cls(flag("stdin"), flag("stdout"), flag("stderr") and not tty, tty)
        if not (options.stdin or options.stdout or options.stderr):
            raise StatusError.bad_request("you must specify at least 1 of stdin, stdout, stderr")
        return options


def _status(protocol: str, code: int | None, error: str | None) -> bytes:
    """The outcome as the error stream carries it (b"" for a success before v4)."""
    if protocol not in _JSON_STATUS:
        if error is not None:
            return f"error executing command in container: {error}".encode()
        if code:
            return f"command terminated with non-zero exit code: exit code {code}".encode()
        return b""
    status: dict[str, Any]
    if error is not None:
        message = f"error executing command in container: {error}"
        status = {
            "metadata": {},
            "status": "Failure",
            "message": f"Internal error occurred: {message}",
            "reason": "InternalError",
            "details": {"causes": [{"message": message}]},
            "code": 500,
        }
    elif code:
        status = {
            "metadata": {},
            "status": "Failure",
            "message": f"command terminated with non-zero exit code: exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
        }
    else:
        status = {"metadata": {}, "status": "Success"}
    return orjson.dumps(status)


async def _resizes(stream: InputStream) -> AsyncIterator[TerminalSize]:
    """Terminal sizes from a stream of JSON objects (`{"Width":80,"Height":24}`)."""
    decoder = json.JSONDecoder()
    pending = ""
    while data := await stream.read():
        pending += data.decode("utf-8", "replace")
        if len(pending) > 4096:  # no size needs this much: the client is not sending sizes
            return
        while pending.strip():
            text = pending.lstrip()
            try:
                value, end = decoder.raw_decode(text)
            except ValueError:
                break
            pending = text[end:]
            if isinstance(value, dict):
                width, height = value.get("Width"), value.get("Height")
                if isinstance(width, int) and isinstance(height, int):
                    yield TerminalSize(width, height)


async def _run(runner: Runner, streams: ProcessStreams) -> tuple[int | None, str | None]:
    try:
        return await runner(streams), None
    except StreamFailed as exc:
        return None, str(exc)


# WebSockets --------------------------------------------------------------------------------


class _ChannelWriter:
    def __init__(self, channels: Channels, channel: int) -> None:
        self._channels = channels
        self._channel = channel

    async def write(self, data: bytes) -> None:
        if data:
            await self._channels.write(self._channel, data)


async def serve_websocket(
    stream: ByteStream, protocol: str, options: StreamOptions, runner: Runner
) -> None:
    """Run an exec or attach on a WebSocket (the 101 answer already sent)."""
    ws = WebSocket(stream, IDLE_TIMEOUT)
    readable = ([STDIN] if options.stdin else []) + ([RESIZE] if options.tty else [])
    channels = Channels(ws, readable, base64="base64" in protocol, close_signal=protocol == V5)
    reading = asyncio.create_task(channels.run())
    try:
        # An empty message on the lowest writable channel tells the client it is connected.
        first = STDOUT if options.stdout else STDERR if options.stderr else ERROR
        await channels.write(first, b"")
        streams = ProcessStreams(
            stdin=channels.readers[STDIN] if options.stdin else None,
            stdout=_ChannelWriter(channels, STDOUT) if options.stdout else None,
            stderr=_ChannelWriter(channels, STDERR) if options.stderr else None,
            tty=options.tty,
            resizes=_resizes(channels.readers[RESIZE]) if options.tty else None,
        )
        running = asyncio.create_task(_run(runner, streams))
        done, _ = await asyncio.wait({running, reading}, return_when=asyncio.FIRST_COMPLETED)
        if running not in done:  # the client went away first
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await running
            return
        code, error = running.result()
        status = _status(protocol, code, error)
        if status:
            await channels.write(ERROR, status)
        await ws.close()
        with contextlib.suppress(TimeoutError):
            await within(FINISH_TIMEOUT, asyncio.shield(reading))
    except ConnectionResetError:
        pass
    finally:
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reading
        stream.close()


# SPDY ---------------------------------------------------------------------------------------


async def serve_spdy(
    stream: ByteStream, protocol: str, options: StreamOptions, runner: Runner
) -> None:
    """Run an exec or attach on a SPDY connection (the 101 answer already sent)."""
    session = SpdySession(stream, IDLE_TIMEOUT)
    reading = asyncio.create_task(session.run())
    try:
        expected = 1 + options.stdin + options.stdout + options.stderr
        if options.tty and protocol in _RESIZING:
            expected += 1
        try:
            found = await within(STREAM_CREATION_TIMEOUT, _streams(session, expected))
        except TimeoutError:
            log.debug("spdy: timed out waiting for the client to create its streams")
            return
        if found is None:
            return
        error_stream = found.get("error")
        streams = ProcessStreams(
            stdin=found.get("stdin") if options.stdin else None,
            stdout=found.get("stdout") if options.stdout else None,
            stderr=found.get("stderr") if options.stderr else None,
            tty=options.tty,
            resizes=_resizes(found["resize"]) if "resize" in found else None,
        )
        if protocol == V1 and "stdin" in found:
            await found["stdin"].close()  # what a v1 server has always done
        running = asyncio.create_task(_run(runner, streams))
        done, _ = await asyncio.wait({running, reading}, return_when=asyncio.FIRST_COMPLETED)
        if running not in done:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await running
            return
        code, error = running.result()
        if "stdin" in found:
            found["stdin"].discard()
        status = _status(protocol, code, error)
        if error_stream is not None:
            if status:
                await error_stream.write(status)
            await error_stream.close()
        for name in ("stdout", "stderr"):
            if name in found:
                await found[name].close()
        await session.close()
        with contextlib.suppress(TimeoutError):
            await within(FINISH_TIMEOUT, asyncio.shield(reading))
    except ConnectionResetError:
        pass
    finally:
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reading
        stream.close()


async def _streams(session: SpdySession, expected: int) -> dict[str, SpdyStream] | None:
    """The streams the client opens, by type, once it has opened all it should."""
    found: dict[str, SpdyStream] = {}
    count = 0
    while count < expected:
        stream = await session.accept()
        if stream is None:
            return None
        kind = stream.headers.get("streamtype", "")
        if kind not in ("error", "stdin", "stdout", "stderr", "resize"):
            log.debug("spdy: a stream of unexpected type %r", kind)
            continue
        found[kind] = stream
        count += 1
    return found
