"""What the streaming protocols run on: a connection's bytes in both directions (the HTTP
layer's `Upgraded`, or SPDY tunnelled through WebSocket messages), and the idle timeout
that ends a connection nothing has crossed for a while.

Its timeouts are the machine's time, as a connection's are: they bound I/O, whatever clock the
cluster's objects live by."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

__all__ = ["IDLE_TIMEOUT", "ByteStream", "IdleTimer", "within"]

T = TypeVar("T")

# The kubelet's --streaming-connection-idle-timeout default, which kube-apiserver's stream
# translator uses as well (k8s.io/apiserver pkg/util/proxy/websocket.go).
IDLE_TIMEOUT = 4 * 60 * 60.0


class ByteStream(Protocol):
    """A connection's bytes: `read()` gives b"" once the peer has closed it."""

    async def read(self) -> bytes: ...
    async def write(self, data: bytes) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...


class IdleTimer:
    """Calls `expired()` once `timeout` seconds pass without `touch()`; one timer, moved
    lazily as the connection's HTTP timers are."""

    def __init__(self, timeout: float, expired: Callable[[], None]) -> None:
        self.timeout = timeout
        self._expired = expired
        self._last = time.monotonic()
        self._timer: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(
            timeout, self._check
        )

    def touch(self) -> None:
        self._last = time.monotonic()

    def _check(self) -> None:
        if self._timer is None:
            return
        remaining = self._last + self.timeout - time.monotonic()
        if remaining > 0:
            self._timer = asyncio.get_running_loop().call_later(remaining, self._check)
            return
        self._timer = None
        self._expired()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


async def within(seconds: float, awaitable: Awaitable[T]) -> T:
    """`awaitable`'s result, or TimeoutError once `seconds` have passed."""
    task = asyncio.ensure_future(awaitable)
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    timer = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if expired and (current is None or current.cancelling() == 0):
            raise TimeoutError from None
        raise
    finally:
        timer.cancel()
        if not task.done():
            task.cancel()
