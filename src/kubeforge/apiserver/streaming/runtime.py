"""What the server asks of the node that runs a pod's containers: kube-apiserver reaches the
kubelet over HTTPS, and the kubelet its container runtime (CRI's Exec, Attach and
PortForward); here the node registers a `StreamingRuntime` with the server
(`APIServer(streams=...)`), and the server speaks the client's protocol itself.

A bare API server has none: its exec, attach and port-forward requests are refused before
anything is upgraded, as kube-apiserver refuses them for a pod no node can be reached for.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "ContainerRef",
    "InputStream",
    "OutputStream",
    "ProcessStreams",
    "StreamFailed",
    "StreamRefused",
    "StreamingRuntime",
    "TerminalSize",
]


@dataclass(frozen=True)
class ContainerRef:
    """A pod (and one of its containers: "" for port forwarding) on the node it is bound to."""

    namespace: str
    pod: str
    uid: str
    node: str
    container: str = ""


@dataclass(frozen=True)
class TerminalSize:
    """A terminal's size, as client-go's TerminalSize sends it (columns and rows)."""

    width: int
    height: int


class StreamRefused(Exception):
    """Refused before the connection switches protocols: answered with this status (the
    node's answer to kube-apiserver's upgrade request, which kubectl shows as `unable to
    upgrade connection: <message>`)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


class StreamFailed(Exception):
    """The command could not be run once the streams were open; reported on the error
    stream as the kubelet reports it (`error executing command in container: ...`)."""


class InputStream(Protocol):
    async def read(self) -> bytes:
        """The next bytes from the client; b"" once it has closed its side."""


class OutputStream(Protocol):
    async def write(self, data: bytes) -> None:
        """Send bytes to the client (waits while it reads slower than they come)."""


@dataclass
class ProcessStreams:
    """The streams of an exec or attach, as the client asked for them. `resizes` gives the
    terminal's size each time the client sends one (only with `tty`)."""

    stdin: InputStream | None
    stdout: OutputStream | None
    stderr: OutputStream | None
    tty: bool
    resizes: AsyncIterator[TerminalSize] | None = None


class StreamingRuntime(Protocol):
    """Runs exec, attach and port forwarding for the pods of the nodes it serves."""

    def check(self, target: ContainerRef, subresource: str) -> None:
        """Raise StreamRefused unless `subresource` (exec, attach, portforward) can reach
        `target` now (its pod is on the node, its container is running)."""

    async def exec(self, target: ContainerRef, command: list[str], streams: ProcessStreams) -> int:
        """Run `command` in the container; its exit code. Raise StreamFailed when it cannot
        run (a command that does not exist exits with 126 or 127 as it would in a shell)."""

    async def attach(self, target: ContainerRef, streams: ProcessStreams) -> None:
        """Stream the container's output (and feed its input) until it ends or the client
        leaves."""

    async def port_forward(
        self, target: ContainerRef, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to `port` of the pod; OSError (as connecting raises it) when nothing
        listens there."""
