"""`kubeforge dev`: run a development cluster in the foreground; `kubeforge dev kubeconfig`
mints a kubeconfig for any user and groups of that cluster; `kubeforge dev node` takes one
of its simulated nodes down and brings it back."""

from __future__ import annotations

import asyncio
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

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
from kubeforge._cli.consoleoptions import (
    DEFAULT_HISTORY,
    ConsoleHistory,
    ConsoleOption,
    ConsolePort,
    ConsoleSettings,
)
from kubeforge._cli.project import fail
from kubeforge._cli.signals import stop_on_signals, until_stopped
from kubeforge._cluster.controllernames import KNOWN, enabled_controllers
from kubeforge._cluster.options import ClusterOptions

__all__ = ["app", "dev", "kubeconfig", "node"]

app = typer.Typer(
    invoke_without_command=True,
    help="Run a development cluster: API server, built-in controllers and simulated nodes.",
)

DEFAULT_KUBECONFIG = Path(".kubeforge/kubeconfig")
# How long `kubeforge dev node` waits for the kubelet to report the health asked.
NODE_HEALTH_TIMEOUT = 30.0


class HealthChoice(StrEnum):
    """The healths a simulated node can be given (kubeforge._cluster.nodehealth)."""

    ready = "ready"
    not_ready = "not-ready"
    unreachable = "unreachable"


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
    node_monitor_grace_period: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="Seconds a node may go without renewing its Lease or posting status before "
            "the node lifecycle controller marks it Unknown (kube-controller-manager's flag).",
        ),
    ] = 50.0,
    bind: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    console: ConsoleOption = True,
    console_port: ConsolePort = 0,
    console_history: ConsoleHistory = DEFAULT_HISTORY,
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
        node_monitor_grace_period=node_monitor_grace_period,
    )
    limits = ConnectionLimits(
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        idle_timeout=idle_timeout,
        max_connections=max_connections,
        max_header_bytes=max_header_bytes,
    )
    try:
        settings = ConsoleSettings(console, console_port, console_history)
        asyncio.run(_run(options, port, kubeconfig, data_dir, bind, limits, settings))
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


@app.command("node")
def node(
    name: Annotated[str, typer.Argument(help="The simulated node, e.g. kubeforge-node-1.")],
    health: Annotated[
        HealthChoice,
        typer.Argument(
            help="not-ready: its kubelet reports NotReady; unreachable: it loses contact with "
            "the API server; ready: back to normal."
        ),
    ],
    cluster_kubeconfig: Annotated[
        Path,
        typer.Option("--kubeconfig", help="The kubeconfig `kubeforge dev` wrote."),
    ] = DEFAULT_KUBECONFIG,
) -> None:
    """Take a simulated node of a running development cluster down, or bring it back, to
    try an operator's failover: its pods are evicted once its taints' tolerationSeconds
    (300 s by default) run out, and replaced on other nodes."""
    if not cluster_kubeconfig.exists():
        raise fail(f"no kubeconfig at {cluster_kubeconfig}: start `kubeforge dev` first")
    message = asyncio.run(_set_node_health(cluster_kubeconfig, name, health.value))
    typer.echo(message)


async def _set_node_health(kubeconfig: Path, name: str, health: str) -> str:
    """Ask the node's kubelet for `health` and wait until it reports it; what to print."""
    from kubeforge import clock
    from kubeforge._client.client import Client
    from kubeforge._client.errors import ApiError, NotFound
    from kubeforge._cluster.nodehealth import HEALTHS, request_health

    wanted = next(h for h in HEALTHS if h == health)
    try:
        async with Client.from_kubeconfig(str(kubeconfig)) as client:
            try:
                await request_health(client, name, wanted)
            except NotFound:
                raise fail(f"no node {name!r} in the cluster") from None
            except ValueError as exc:
                raise fail(str(exc)) from None
            if wanted == "unreachable":
                return (
                    f"node {name}: its kubelet stopped renewing its Lease and posting status; "
                    "the node lifecycle controller marks it Unknown after the node monitor "
                    "grace period (--node-monitor-grace-period, 50 s by default)"
                )
            expected = "True" if wanted == "ready" else "False"
            deadline = clock.monotonic() + NODE_HEALTH_TIMEOUT
            while True:
                found = await client.get("v1/Node", name)
                conditions = (found.get("status") or {}).get("conditions") or []
                ready: dict[str, Any] = next(
                    (c for c in conditions if c.get("type") == "Ready"), {}
                )
                if ready.get("status") == expected:
                    return f"node {name}: {'Ready' if expected == 'True' else 'NotReady'}"
                if clock.monotonic() > deadline:
                    raise fail(f"node {name}: its kubelet did not report {wanted} in time")
                await clock.sleep(0.1)
    except (ApiError, OSError) as exc:
        raise fail(f"cannot reach the cluster of {kubeconfig}: {exc}") from None


async def _run(
    options: ClusterOptions,
    port: int,
    kubeconfig: Path,
    data_dir: Path | None,
    bind: str,
    limits: ConnectionLimits,
    console: ConsoleSettings,
) -> None:
    from kubeforge._apiserver.server import tune_gc
    from kubeforge._cluster.devcluster import CONTEXT, DevCluster

    stopping = stop_on_signals()
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
    # The console shares the cluster's process: its watches of every kind skip TLS.
    view = await console.start(cluster.in_process_config(), "kubeforge dev")
    if view is not None and cluster.manager is not None:
        # The built-in controllers run on kubeforge's runtime: their reconciles are shown.
        view.observe(cluster.manager, "kube-controller-manager")
    typer.echo(f"kubeforge development cluster running at {cluster.url}")
    if view is not None:
        typer.echo(f"console: {view.login_url}")
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
    first = "kubeforge-node" if options.nodes == 1 else "kubeforge-node-0"
    if options.nodes:
        typer.echo(f"  kubeforge dev node {first} unreachable   # take a node down")
    typer.echo("Ctrl-C stops the cluster.")
    try:
        await until_stopped(stopping)
    finally:
        typer.echo("stopping the cluster")
        if view is not None:
            await view.stop()
        await cluster.stop()
