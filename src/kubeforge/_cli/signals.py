"""Serving in the foreground until Ctrl-C or SIGTERM (`kubeforge apiserver`, `kubeforge dev`)."""

from __future__ import annotations

import asyncio
import signal

__all__ = ["stop_on_signals", "until_stopped"]


def stop_on_signals() -> asyncio.Event:
    """An event set on SIGINT or SIGTERM, from now on. Called before a command starts what
    it serves, so that a signal during the start (a script that stops the process as soon
    as it answers) still ends in an orderly shutdown, not the default handler's death.

    The handlers stay installed: a second signal during that shutdown is absorbed rather than
    interrupting it halfway with KeyboardInterrupt."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def until_stopped(stop: asyncio.Event | None = None) -> None:
    """Return once the process gets SIGINT or SIGTERM (`stop`, from `stop_on_signals`,
    when the handlers were installed earlier), so the caller shuts down in order."""
    await (stop if stop is not None else stop_on_signals()).wait()
