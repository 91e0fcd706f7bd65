"""Serving in the foreground until Ctrl-C or SIGTERM (`kubeforge apiserver`, `kubeforge dev`)."""

from __future__ import annotations

import asyncio
import signal

__all__ = ["until_stopped"]


async def until_stopped() -> None:
    """Return once the process gets SIGINT or SIGTERM, so the caller shuts down in order.

    The handlers stay installed: a second signal during that shutdown is absorbed rather than
    interrupting it halfway with KeyboardInterrupt."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
