"""`kubeforge dev`: run a development cluster in the foreground; `kubeforge dev kubeconfig`
mints a kubeconfig for any user and groups of that cluster."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
import yaml

from kubeforge._apiserver.http.server import ConnectionLimits
from kubeforge._cli.connections import (
    DEFAULTS,
    BodyTimeout,
    HeaderTimeout,
    IdleTimeout,
    MaxConnections,
    MaxHeaderBytes,
)
from kubeforge._cli.project import fail
from kubeforge._cli.signals import until_stopped
from kubeforge._cluster.controllernames import KNOWN, enabled_controllers
from kubeforge._cluster.options import ClusterOptions

__all__ = ["app", "dev", "kubeconfig"]

app = typer.Typer(
    invoke_without_command=True,
    help="Run a development cluster: API server, built-in controllers and simulated nodes.",
)

DEFAULT_KUBECONFIG = Path(".kubeforge/kubeconfig")


def _credentials_dir(kubeconfig: Path, data_dir: Path | None) -> Path:
    """Where the cluster keeps its CA and keys: in the data directory, or else next to the
    kubeconfig it writes."""
    return data_dir / "credentials" if data_dir is not None else kubeconfig.parent / "credentials"


@app.callback()
def dev(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port of the API server.")] = 6443,
    kubeconfig: Annotated[
        Path, typer.Option(help="Where to write the kubeconfig (context kubeforge-dev).")
    ] = DEFAULT_KUBECONFIG,
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
    image: Annotated[
        list[str] | None,
        typer.Option(
            "--image",
            metavar="IMAGE=DIR",
            help="Run containers of IMAGE as local processes on THIS machine from the project "
            "in DIR (its Dockerfile's entrypoint, its console scripts, this Python "
            "environment and then DIR/.venv), e.g. --image controller:latest=./ ; repeatable.",
        ),
    ] = None,
    cert_manager: Annotated[
        bool,
        typer.Option(
            "--cert-manager/--no-cert-manager",
            help="Serve cert-manager's Issuer, ClusterIssuer and Certificate kinds (self-signed "
            "and CA issuers, CA injection), as kubebuilder's config/default expects.",
        ),
    ] = True,
    controllers: Annotated[
        str,
        typer.Option(
            help="The built-in controllers to run, as kube-controller-manager's --controllers: "
            "'*' all, 'NAME' one more, '-NAME' one less, the first entry naming a controller "
            "decides (e.g. '*,-job'); '' none. Names: docs/devcluster.md.",
        ),
    ] = "*",
    bind: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    header_timeout: HeaderTimeout = DEFAULTS.header_timeout,
    body_timeout: BodyTimeout = DEFAULTS.body_timeout,
    idle_timeout: IdleTimeout = DEFAULTS.idle_timeout,
    max_connections: MaxConnections = DEFAULTS.max_connections,
    max_header_bytes: MaxHeaderBytes = DEFAULTS.max_header_bytes,
) -> None:
    """Run a development cluster: API server, built-in controllers and simulated nodes."""
    if ctx.invoked_subcommand is not None:
        return
    from kubeforge._apiserver.storage.persistence import DataDirInUse
    from kubeforge._cluster.projectenv import VENV, ProjectEnvironment, ProjectEnvironmentError
    from kubeforge._cluster.projects import parse_image_mapping

    images: dict[str, Path] = {}
    for mapping in image or ():
        try:
            name, directory = parse_image_mapping(mapping)
        except ValueError as exc:
            raise fail(f"--image {exc}") from None
        try:
            unmet = ProjectEnvironment.of(directory).missing()
        except ProjectEnvironmentError as exc:
            raise fail(f"--image {mapping!r}: {exc}") from None
        if unmet:
            typer.secho(
                f"warning: --image {name}: {', '.join(unmet)}: required by "
                f"{directory / 'pyproject.toml'} but installed in neither kubeforge's "
                f"environment nor the project's {VENV}",
                err=True,
                fg=typer.colors.YELLOW,
            )
        images[name] = directory
    try:
        enabled_controllers([controllers])
    except ValueError as exc:
        raise fail(f"--controllers: {exc}") from None
    options = ClusterOptions(
        nodes=nodes,
        exec_pods=exec_pods,
        images=images,
        cert_manager=cert_manager,
        controllers=(controllers,),
    )
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


@app.command("kubeconfig")
def kubeconfig(
    user: Annotated[str, typer.Option(help="The user name (the certificate's CN).")],
    group: Annotated[
        list[str] | None,
        typer.Option(help="A group of the user (the certificate's O); repeatable."),
    ] = None,
    cluster_kubeconfig: Annotated[
        Path,
        typer.Option("--kubeconfig", help="The kubeconfig `kubeforge dev` wrote."),
    ] = DEFAULT_KUBECONFIG,
    data_dir: Annotated[
        Path | None, typer.Option(help="The --data-dir the cluster runs with, if any.")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(help="Where to write it (default: next to --kubeconfig, kubeconfig-<user>)."),
    ] = None,
) -> None:
    """Write a kubeconfig for USER in GROUPs: a client certificate signed by the development
    cluster's CA, so kubectl and operators can be tried as other users under RBAC."""
    from kubeforge._apiserver.kubeconfig import write_kubeconfig
    from kubeforge._apiserver.tls import ServingCertificates, client_certificate
    from kubeforge._cluster.devcluster import CONTEXT

    credentials = _credentials_dir(cluster_kubeconfig, data_dir)
    files = [credentials / name for name in ("ca.crt", "tls.crt", "tls.key", "ca.key")]
    if not all(f.exists() for f in files):
        raise fail(
            f"no cluster credentials in {credentials}: start `kubeforge dev` first (with the "
            "same --kubeconfig or --data-dir)"
        )
    try:
        doc = yaml.safe_load(cluster_kubeconfig.read_text(encoding="utf-8"))
        server = str(doc["clusters"][0]["cluster"]["server"])
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError) as exc:
        raise fail(f"cannot read the cluster's kubeconfig {cluster_kubeconfig}: {exc}") from None
    certs = ServingCertificates(*(f.read_bytes() for f in files))
    groups = tuple(group or ())
    cert = client_certificate(certs, user, groups)
    target = output or cluster_kubeconfig.with_name(f"kubeconfig-{user}")
    write_kubeconfig(target, server, certs.ca_pem, None, CONTEXT, cert)
    typer.echo(f"kubeconfig for user {user!r} (groups {list(groups)}) written to {target}")
    typer.echo(f"  kubectl --kubeconfig {target} auth whoami")


async def _run(
    options: ClusterOptions,
    port: int,
    kubeconfig: Path,
    data_dir: Path | None,
    bind: str,
    limits: ConnectionLimits,
) -> None:
    from kubeforge._apiserver.server import tune_gc
    from kubeforge._cluster.devcluster import CONTEXT, DevCluster

    cluster = DevCluster(
        options,
        host=bind,
        port=port,
        data_dir=data_dir,
        credentials_dir=_credentials_dir(kubeconfig, data_dir),
        connections=limits,
    )
    await cluster.start()
    tune_gc()
    path = cluster.write_kubeconfig(kubeconfig)
    typer.echo(f"kubeforge development cluster running at {cluster.url}")
    typer.echo(
        f"  nodes: {options.nodes}"
        + ("  (--exec-pods: commands run locally)" if options.exec_pods else "")
    )
    off = [name for name in KNOWN if name not in cluster.controllers]
    if off:
        typer.echo(f"  controllers off: {', '.join(off) if len(off) < len(KNOWN) else 'all'}")
    for name, directory in options.images.items():
        typer.echo(f"  image {name}: runs from {directory} as local processes")
    if options.cert_manager:
        typer.echo("  cert-manager: Issuer, ClusterIssuer, Certificate (built in)")
    if data_dir is not None:
        typer.echo(f"  state kept in {data_dir}")
    typer.echo(f"kubeconfig written to {path} (context {CONTEXT!r}); try:")
    typer.echo(f"  export KUBECONFIG={path.resolve()}")
    typer.echo("  kubectl get nodes")
    typer.echo("  kubectl create deployment web --image=nginx --replicas=3")
    typer.echo("  kubeforge dev kubeconfig --user alice --group team-a   # another user")
    typer.echo("Ctrl-C stops the cluster.")
    try:
        await until_stopped()
    finally:
        typer.echo("stopping the cluster")
        await cluster.stop()
