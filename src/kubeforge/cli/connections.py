"""Options of `kubeforge apiserver` and `kubeforge dev` for the API server's connections."""

from __future__ import annotations

from typing import Annotated

import typer

from kubeforge.apiserver.http.server import ConnectionLimits

__all__ = [
    "DEFAULTS",
    "BodyTimeout",
    "HeaderTimeout",
    "IdleTimeout",
    "MaxConnections",
    "MaxHeaderBytes",
]

DEFAULTS = ConnectionLimits()  # kube-apiserver's values (see ConnectionLimits)

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
