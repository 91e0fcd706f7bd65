"""A client of an API server in its own process: whole exchanges handed to the server as
their parts, no socket between (a development cluster's own components, decision 63).

The server answers them through the same handler as its connections' requests; the client
sends the same header fields it would send over a connection (its credentials among them),
so the server authenticates and authorizes them as it would those. Watches and other
streams still go over a connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

__all__ = ["InProcessServer"]


class InProcessServer(Protocol):
    """An API server in this process that answers a client's whole exchanges itself
    (`APIServer.exchange`)."""

    async def exchange(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """The status, header fields and body answering one request (header field names
        in lower case); OSError when the server is not serving."""
        ...
