"""`kubeforge dev`: run a development cluster in the foreground."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Annotated

import typer

from kubeforge.apiserver.httpserver import ConnectionLimits
from kubeforge.cli.connections import (
    DEFAULTS,
    BodyTimeout,
    HeaderTimeout,
    IdleTimeout,
    MaxConnections,
    MaxHeaderBytes,
)
from kubeforge.cli.project import fail
from kubeforge.cluster.options import ClusterOptions

__all__ = ["dev"]


def dev(
    port: Annotated[int, typer.Option(help="Port of the API server.")] = 6443,
    kubeconfig: Annotated[
        Path, typer.Option(help="Where to write the kubeconfig (context kubeforge-dev).")
    ] = Path(".kubeforge/kubeconfig"),
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Keep the cluster's state here (SQLite); in memory when unset."),
    ] = None,
    nodes: Annotated[int, typer.Option(help="Number of simulated nodes.")] = 1,
    exec_pods: Annotated[
        bool,
        typer.Option(
            "--exec-pods",
            help="Run containers' commands as local processes on THIS machine (no image, no "
            "isolation) so `kubectl logs` shows their real output. Off by default.",
        ),
    ] = False,
    bind: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    header_timeout: HeaderTimeout = DEFAULTS.header_timeout,
    body_timeout: BodyTimeout = DEFAULTS.body_timeout,
    idle_timeout: IdleTimeout = DEFAULTS.idle_timeout,
    max_connections: MaxConnections = DEFAULTS.max_connections,
    max_header_bytes: MaxHeaderBytes = DEFAULTS.max_header_bytes,
) -> None:
    """Run a development cluster: API server, built-in controllers and simulated nodes."""
    from kubeforge.apiserver.persistence import DataDirInUse

    options = ClusterOptions(nodes=nodes, exec_pods=exec_pods)
    limits = ConnectionLimits(
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        idle_timeout=idle_timeout,
        max_connections=max_connections,
        max_header_bytes=max_header_bytes,
    )
    try:
        asyncio.run(_run(options, port, kubeconfig, data_dir, bind, limits))
    except DataDirInUse as exc:
        raise fail(f"{exc}; stop it first, or choose another --data-dir") from None


async def _run(
    options: ClusterOptions,
    port: int,
    kubeconfig: Path,
    data_dir: Path | None,
    bind: str,
    limits: ConnectionLimits,
) -> None:
    from kubeforge.apiserver.server import tune_gc
    from kubeforge.cluster.devcluster import CONTEXT, DevCluster

    cluster = DevCluster(options, host=bind, port=port, data_dir=data_dir, connections=limits)
    await cluster.start()
    tune_gc()
    path = cluster.write_kubeconfig(kubeconfig)
    typer.echo(f"kubeforge development cluster running at {cluster.url}")
    typer.echo(
        f"  nodes: {options.nodes}"
        + ("  (--exec-pods: commands run locally)" if options.exec_pods else "")
    )
    if data_dir is not None:
        typer.echo(f"  state kept in {data_dir}")
    typer.echo(f"kubeconfig written to {path} (context {CONTEXT!r}); try:")
    typer.echo(f"  export KUBECONFIG={path.resolve()}")
    typer.echo("  kubectl get nodes")
    typer.echo("  kubectl create deployment web --image=nginx --replicas=3")
    typer.echo("Ctrl-C stops the cluster.")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        typer.echo("stopping the cluster")
        await cluster.stop()
