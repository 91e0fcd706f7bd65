"""Options of `kubeforge apiserver` and `kubeforge dev` for the API server's connections."""

from __future__ import annotations

from typing import Annotated

import typer

from kubeforge.apiserver.httpserver import ConnectionLimits

__all__ = [
    "BodyTimeout",
    "HeaderTimeout",
    "IdleTimeout",
    "MaxConnections",
    "MaxHeaderBytes",
    "connection_limits",
]

DEFAULTS = ConnectionLimits()

HeaderTimeout = Annotated[
    float,
    typer.Option(min=0.001, help="Seconds a client has to send a request's line and headers."),
]
BodyTimeout = Annotated[
    float, typer.Option(min=0.001, help="Seconds a client has to send a request's body.")
]
IdleTimeout = Annotated[
    float,
    typer.Option(min=0.001, help="Seconds a kept-alive connection may wait for its next request."),
]
MaxConnections = Annotated[
    int,
    typer.Option(min=1, help="Open connections served at once; more are answered 429 and closed."),
]
MaxHeaderBytes = Annotated[
    int, typer.Option(min=1024, help="Largest request line and headers, in bytes.")
]


def connection_limits(
    header_timeout: float,
    body_timeout: float,
    idle_timeout: float,
    max_connections: int,
    max_header_bytes: int,
) -> ConnectionLimits:
    return ConnectionLimits(
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        idle_timeout=idle_timeout,
        max_connections=max_connections,
        max_header_bytes=max_header_bytes,
    )
