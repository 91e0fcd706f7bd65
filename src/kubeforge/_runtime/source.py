"""Sources of events from outside the cluster, for operators driven by external systems.

A controller can watch, besides informers, any async iterable (`builder.watches_source`):
each item it yields is a *generic event*. A `Request` is queued as it is; any other item is
an object (a dict or a typed resource) that the watch's handler maps to requests (the
object itself by default, its owner, or a map function), after the predicates' `generic`.

`Channel` is a ready-made source fed by `send(item)`, from the event loop or from any
thread (a webhook from a CI system, a message-queue consumer, a timer). Every controller
watching a channel gets every item sent after it started; items sent before any controller
listens are kept for the first one. controller-runtime's `source.Channel` plays this part.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["Channel"]


class _Subscriber:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.items: deque[Any] = deque()
        self.wakeup = asyncio.Event()


class Channel:
    """A source of generic events: `send(item)` delivers `item` to every controller watching
    the channel. Safe to call from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: list[_Subscriber] = []
        self._early: deque[Any] = deque()
        self._closed = False

    def send(self, item: Any) -> None:
        """Deliver `item` (an object, or a Request) to the controllers watching."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the channel is closed")
            if not self._subscribers:
                self._early.append(item)
                return
            subscribers = list(self._subscribers)
            for subscriber in subscribers:
                subscriber.items.append(item)
        for subscriber in subscribers:
            _wake(subscriber)

    def close(self) -> None:
        """End the channel: every watching controller stops reading it."""
        with self._lock:
            self._closed = True
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            _wake(subscriber)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._stream()

    async def _stream(self) -> AsyncIterator[Any]:
        subscriber = _Subscriber(asyncio.get_running_loop())
        with self._lock:
            subscriber.items.extend(self._early)
            self._early.clear()
            self._subscribers.append(subscriber)
        try:
            while True:
                with self._lock:
                    batch = list(subscriber.items)
                    subscriber.items.clear()
                    closed = self._closed
                for item in batch:
                    yield item
                if closed:
                    return
                if not batch:
                    await subscriber.wakeup.wait()
                    subscriber.wakeup.clear()
        finally:
            with self._lock:
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)


def _wake(subscriber: _Subscriber) -> None:
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is subscriber.loop:
        subscriber.wakeup.set()
    elif not subscriber.loop.is_closed():
        subscriber.loop.call_soon_threadsafe(subscriber.wakeup.set)
