"""The console's options, shared by `kubeforge dev` and `kubeforge run`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from kubeforge._client.config import ClusterConfig

if TYPE_CHECKING:
    from kubeforge._console.server import Console

__all__ = [
    "DEFAULT_HISTORY",
    "ConsoleHistory",
    "ConsoleOption",
    "ConsolePort",
    "ConsoleSettings",
]

DEFAULT_HISTORY = 5000

ConsoleOption = Annotated[
    bool,
    typer.Option(
        "--console/--no-console",
        help="Serve the console on 127.0.0.1: the cluster's objects and every reconcile on a "
        "timeline, read-only, for the browser that opens the printed link.",
    ),
]
ConsolePort = Annotated[
    int, typer.Option(help="The console's port on 127.0.0.1 (0 picks a free one).")
]
ConsoleHistory = Annotated[
    int,
    typer.Option(min=1, help="Timeline entries the console keeps (the oldest go first)."),
]


@dataclass(frozen=True)
class ConsoleSettings:
    """What the console options ask for."""

    enabled: bool = True
    port: int = 0
    history: int = DEFAULT_HISTORY

    async def start(self, config: ClusterConfig, title: str) -> Console | None:
        """The console for the cluster of `config`, started (None when turned off)."""
        if not self.enabled:
            return None
        from kubeforge._client.client import Client
        from kubeforge._console.server import Console

        console = Console(
            Client(config, field_manager="kubeforge-console"),
            history=self.history,
            port=self.port,
            title=title,
        )
        try:
            await console.start()
        except BaseException:
            await console.stop()
            raise
        return console
