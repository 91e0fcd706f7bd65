"""`kubeforge apiserver`: run the embedded API server in the foreground."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from kubeforge._apiserver.http.server import ConnectionLimits
from kubeforge._cli.connections import (
    DEFAULTS,
    BodyTimeout,
    HeaderTimeout,
    IdleTimeout,
    MaxConnections,
    MaxHeaderBytes,
)
from kubeforge._cli.signals import stop_on_signals, until_stopped

__all__ = ["apiserver"]


def apiserver(
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one).")] = 6443,
    kubeconfig: Annotated[
        Path, typer.Option(help="Where to write the kubeconfig for this server.")
    ] = Path(".kubeforge/kubeconfig"),
    bind: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    kubernetes_version: Annotated[
        str, typer.Option("--kubernetes-version", help="Version reported by /version.")
    ] = "1.33.0",
    context: Annotated[str, typer.Option(help="Context name in the kubeconfig.")] = "kubeforge",
    header_timeout: HeaderTimeout = DEFAULTS.header_timeout,
    body_timeout: BodyTimeout = DEFAULTS.body_timeout,
    idle_timeout: IdleTimeout = DEFAULTS.idle_timeout,
    max_connections: MaxConnections = DEFAULTS.max_connections,
    max_header_bytes: MaxHeaderBytes = DEFAULTS.max_header_bytes,
) -> None:
    """Run a Kubernetes API server (HTTPS, bearer token) until interrupted."""
    limits = ConnectionLimits(
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        idle_timeout=idle_timeout,
        max_connections=max_connections,
        max_header_bytes=max_header_bytes,
    )
    asyncio.run(_run(bind, port, kubernetes_version, kubeconfig, context, limits))


async def _run(
    bind: str,
    port: int,
    kubernetes_version: str,
    kubeconfig: Path,
    context: str,
    limits: ConnectionLimits,
) -> None:
    # Imported here: `kubeforge --help` and the other commands need none of the server.
    from kubeforge._apiserver.config import ServerConfig
    from kubeforge._apiserver.server import APIServer, tune_gc

    config = ServerConfig(
        host=bind, port=port, kubernetes_version=kubernetes_version, connections=limits
    )
    server = APIServer(config)
    stopping = stop_on_signals()
    await server.start()
    tune_gc()
    path = server.write_kubeconfig(kubeconfig, context=context)
    typer.echo(f"kubeforge API server listening on {server.url}")
    typer.echo(f"kubeconfig written to {path} (context {context!r})")
    typer.echo(f"  export KUBECONFIG={path.resolve()}")
    typer.echo("  kubectl get namespaces")
    try:
        await until_stopped(stopping)
    finally:
        typer.echo("shutting down")
        await server.stop()
