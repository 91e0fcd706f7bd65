"""`kubeforge run`: the project's controllers, running against a cluster from this machine.

Like kubebuilder's `make run` (`go run ./cmd/main.go`): a Manager is built from the
kubeconfig, the project's `setup(manager)` registers its controllers, and the manager runs
until SIGTERM or SIGINT (exit 0). Losing leadership or caches that never sync end it with
status 1.

What the project depends on comes from kubeforge's environment and then from the project's
`.venv` (_cluster/projectenv.py), so its own dependencies need not be installed where
kubeforge is.

With `--as-service-account` the project's `config/rbac` is installed first (with the
kubeconfig's credentials) and the controllers run with tokens of its ServiceAccount, so a
permission their `@rbac` rules lack is refused here, before deploy; each refusal is logged
with the rule that would allow it.

When `setup` registers webhooks, the webhook server listens on this machine (127.0.0.1:9443
by default) with a certificate generated for the run, and once it answers — before the
caches list anything, since their first list may need the conversion webhook — the project's
webhook configurations are registered with the cluster (with the kubeconfig's credentials)
as `<project>-local-mutating-webhook-configuration` and `...-validating-...`, calling it by
URL, and the CRDs it converts are pointed at it; on the way out the configurations are
deleted and the CRDs get their own conversion back.

Unless `--no-console`, the console serves the cluster and the project's reconciles on
127.0.0.1 (`console: <link>` is printed; docs/devcluster.md, "Console").

`manager_main` is the same manager as a project's own command (the container's `manager`):
the same flags, but in a pod the webhook server listens on every interface and nothing is
registered, since the deployed configurations call it through its Service.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import inspect
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kubeforge._cli.connections import (
    ContextOption,
    KubeconfigOption,
    cluster_config,
    describe_cluster,
)
from kubeforge._cli.consoleoptions import (
    DEFAULT_HISTORY,
    ConsoleHistory,
    ConsoleOption,
    ConsolePort,
    ConsoleSettings,
)
from kubeforge._cli.project import Project, ProjectError, fail, open_project
from kubeforge._client.client import Client
from kubeforge._client.config import ClusterConfig
from kubeforge._client.errors import ApiError
from kubeforge._cluster.projectenv import VENV, ProjectEnvironment
from kubeforge._runtime.leaderelection import LeadershipLost
from kubeforge._runtime.localwebhooks import (
    LOCAL_HOST,
    LocalServing,
    WebhookRegistration,
    register_webhook_server,
    serve_locally,
)
from kubeforge._runtime.logs import configure_logging
from kubeforge._runtime.manager import Manager
from kubeforge._webhook.certwatcher import CertificateError
from kubeforge._webhook.server import DEFAULT_PORT, WebhookServer

if TYPE_CHECKING:
    from kubeforge._console.server import Console

__all__ = ["ManagerFlags", "manager_main", "run"]

log = logging.getLogger("kubeforge.run")


class LogFormatChoice(StrEnum):
    """The values of --log-format."""

    text = "text"
    json = "json"


class _NotSynced(Exception):
    """The caches did not sync; the message names the kinds that did not."""


class _NotRegistered(Exception):
    """The webhook configurations could not be registered with the cluster."""


FIELD_MANAGER = "kubeforge-run"

# The manager's flags, as kubebuilder's cmd/main.go declares them, shared by `kubeforge run`
# and a project's `manager` command (manager_main).
MetricsBindAddress = Annotated[
    str,
    typer.Option(help="Where /metrics is served: :8443 for HTTPS, :8080 for HTTP; 0 turns it off."),
]
MetricsSecure = Annotated[
    bool,
    typer.Option(
        "--metrics-secure/--no-metrics-secure",
        help="Serve /metrics over HTTPS to callers the API server authenticates and "
        "authorizes (TokenReview and SubjectAccessReview); --no-metrics-secure for HTTP.",
    ),
]
MetricsCertPath = Annotated[
    str,
    typer.Option(help="The directory holding the metrics server's tls.crt and tls.key."),
]
HealthProbeBindAddress = Annotated[
    str, typer.Option(help="Where /healthz and /readyz are served; 0 turns them off.")
]
LeaderElect = Annotated[
    bool,
    typer.Option(
        "--leader-elect/--no-leader-elect", help="Run controllers only while holding the lease."
    ),
]
LeaderElectionId = Annotated[
    str | None, typer.Option(help="The Lease's name (default: <project>-leader-election).")
]
WebhookHost = Annotated[
    str,
    typer.Option(
        help="The address the webhook server listens on; empty or 0.0.0.0: every interface "
        "(`kubeforge run` registers it to be called at 127.0.0.1 then)."
    ),
]
WebhookPort = Annotated[
    int, typer.Option(help="The port the webhook server listens on; 0 picks a free one.")
]
WebhookCertPath = Annotated[
    str,
    typer.Option(
        help="The directory holding the webhook server's certificate. The manager's default: "
        "<tmp>/k8s-webhook-server/serving-certs; `kubeforge run`'s: a CA and certificate "
        "generated for the run. `kubeforge run` registers the directory's ca.crt (or else the "
        "certificate itself) as the caBundle."
    ),
]
WebhookCertName = Annotated[str, typer.Option(help="The webhook certificate's file name.")]
WebhookCertKey = Annotated[str, typer.Option(help="The webhook key's file name.")]
LogFormat = Annotated[
    LogFormatChoice,
    typer.Option(
        help="text: one readable line per record; json: one JSON object per line "
        "(time, level, logger, message, and the reconcile's controller, object_kind, "
        "object_namespace, object_name and reconcile_id)."
    ),
]


@dataclass(frozen=True)
class ManagerFlags:
    """What the flags ask of the manager."""

    metrics_bind_address: str = "0"
    metrics_secure: bool = True
    metrics_cert_path: str = ""
    health_probe_bind_address: str = ":8081"
    leader_elect: bool = False
    leader_election_id: str | None = None
    webhook_host: str = ""
    webhook_port: int = DEFAULT_PORT
    webhook_cert_path: str = ""
    webhook_cert_name: str = "tls.crt"
    webhook_cert_key: str = "tls.key"

    def manager(self, config: ClusterConfig, name: str) -> Manager:
        """A Manager for `config` as the flags configure it (`name`: the project's)."""
        webhook_server = WebhookServer(
            host=self.webhook_host,
            port=self.webhook_port,
            cert_dir=self.webhook_cert_path or None,
            cert_name=self.webhook_cert_name,
            key_name=self.webhook_cert_key,
        )
        return Manager(
            config,
            metrics_bind_address=self.metrics_bind_address,
            secure_metrics=self.metrics_secure,
            metrics_cert_dir=self.metrics_cert_path or None,
            health_probe_bind_address=self.health_probe_bind_address,
            leader_election=self.leader_elect,
            leader_election_id=self.leader_election_id or f"{name}-leader-election",
            webhook_server=webhook_server,
        )


def run(
    directory: Annotated[
        Path, typer.Option("--dir", help="The project root (holds api/, controllers/, main.py).")
    ] = Path("."),
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    metrics_bind_address: MetricsBindAddress = "0",
    metrics_secure: MetricsSecure = True,
    metrics_cert_path: MetricsCertPath = "",
    health_probe_bind_address: HealthProbeBindAddress = ":8081",
    leader_elect: LeaderElect = False,
    leader_election_id: LeaderElectionId = None,
    webhook_host: WebhookHost = LOCAL_HOST,
    webhook_port: WebhookPort = DEFAULT_PORT,
    webhook_cert_path: WebhookCertPath = "",
    webhook_cert_name: WebhookCertName = "tls.crt",
    webhook_cert_key: WebhookCertKey = "tls.key",
    as_service_account: Annotated[
        bool,
        typer.Option(
            "--as-service-account",
            help="Install config/rbac and run as its ServiceAccount, with only the "
            "permissions the project's @rbac rules grant.",
        ),
    ] = False,
    log_format: LogFormat = LogFormatChoice.text,
    console: ConsoleOption = True,
    console_port: ConsolePort = 0,
    console_history: ConsoleHistory = DEFAULT_HISTORY,
) -> None:
    """Run the project's controllers and webhooks until SIGTERM or SIGINT."""
    project = open_project(directory)
    config = cluster_config(kubeconfig, context)
    configure_logging(log_format.value)
    flags = ManagerFlags(
        metrics_bind_address=metrics_bind_address,
        metrics_secure=metrics_secure,
        metrics_cert_path=metrics_cert_path,
        health_probe_bind_address=health_probe_bind_address,
        leader_elect=leader_elect,
        leader_election_id=leader_election_id,
        webhook_host=webhook_host,
        webhook_port=webhook_port,
        webhook_cert_path=webhook_cert_path,
        webhook_cert_name=webhook_cert_name,
        webhook_cert_key=webhook_cert_key,
    )
    # Reconcilers may import project modules, and what the project depends on, lazily, as
    # they could under `python main.py`.
    sys.path.insert(0, str(project.root))
    environment = ProjectEnvironment.of(project.root)  # load_project checked it
    environment.activate()
    if unmet := environment.missing():
        typer.secho(
            f"warning: {', '.join(unmet)}: required by {project.root / 'pyproject.toml'} but "
            f"installed in neither kubeforge's environment nor the project's {VENV}",
            err=True,
            fg=typer.colors.YELLOW,
        )
    view = ConsoleSettings(console, console_port, console_history)
    _main(_run(project, config, flags, as_service_account=as_service_account, view=view), config)


def manager_main(
    setup: Callable[[Manager], Any], *, name: str, argv: Sequence[str] | None = None
) -> None:
    """The command line of a project's manager (its container's entrypoint): kubebuilder's
    flags, the cluster from --kubeconfig, KUBECONFIG, ~/.kube/config or, in a pod, the
    in-cluster configuration; runs `setup`'s controllers and webhooks until SIGTERM.

    `name` names the project (the default leader election Lease is `<name>-leader-election`).
    Boolean flags also take Go's form, `--leader-elect=true`, `--metrics-secure=false`. The
    webhook server listens on every interface (port 9443) with the certificate of
    --webhook-cert-path, as controller-runtime's does; it registers nothing with the cluster
    (config/webhook's configurations, deployed with the manager, call it through its Service).
    Its log records are `kubeforge run`'s (`--log-format`): a reconcile's lines carry its
    controller, object and reconcile id.
    """
    command = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @command.command(help=f"Run the {name} manager until SIGTERM or SIGINT.")
    def manager(
        kubeconfig: KubeconfigOption = None,
        context: ContextOption = None,
        metrics_bind_address: MetricsBindAddress = "0",
        metrics_secure: MetricsSecure = True,
        metrics_cert_path: MetricsCertPath = "",
        health_probe_bind_address: HealthProbeBindAddress = ":8081",
        leader_elect: LeaderElect = False,
        leader_election_id: LeaderElectionId = None,
        webhook_host: WebhookHost = "",
        webhook_port: WebhookPort = DEFAULT_PORT,
        webhook_cert_path: WebhookCertPath = "",
        webhook_cert_name: WebhookCertName = "tls.crt",
        webhook_cert_key: WebhookCertKey = "tls.key",
        log_format: LogFormat = LogFormatChoice.text,
    ) -> None:
        config = cluster_config(kubeconfig, context)
        # The same records as `kubeforge run` writes: each reconcile's controller, object
        # and reconcile id on every line logged during it.
        configure_logging(log_format.value)
        flags = ManagerFlags(
            metrics_bind_address=metrics_bind_address,
            metrics_secure=metrics_secure,
            metrics_cert_path=metrics_cert_path,
            health_probe_bind_address=health_probe_bind_address,
            leader_elect=leader_elect,
            leader_election_id=leader_election_id,
            webhook_host=webhook_host,
            webhook_port=webhook_port,
            webhook_cert_path=webhook_cert_path,
            webhook_cert_name=webhook_cert_name,
            webhook_cert_key=webhook_cert_key,
        )
        _main(_run_setup(setup, name, config, flags), config)

    args = list(sys.argv[1:] if argv is None else argv)
    command(args=_go_booleans(args), prog_name="manager")


_BOOLEANS = ("--leader-elect", "--metrics-secure")


def _go_booleans(args: list[str]) -> list[str]:
    """`--flag=true` / `--flag=false` (Go's flag package) as `--flag` / `--no-flag`."""
    out = []
    for arg in args:
        name, sep, value = arg.partition("=")
        if sep and name.lstrip("-") in (b.lstrip("-") for b in _BOOLEANS):
            truth = value.strip().lower()
            if truth in ("true", "1", "t"):
                arg = "--" + name.lstrip("-")
            elif truth in ("false", "0", "f"):
                arg = "--no-" + name.lstrip("-")
        out.append(arg)
    return out


def _main(step: Awaitable[None], config: ClusterConfig) -> None:
    """Run the manager's coroutine; its errors end the command with one line."""
    try:
        asyncio.run(_coroutine(step))
    except ProjectError as exc:
        raise fail(str(exc)) from None
    except LeadershipLost:
        raise fail("leader election lost: another instance leads now; exiting") from None
    except _NotSynced as exc:
        raise fail(str(exc)) from None
    except _NotRegistered as exc:
        raise fail(f"cannot register the webhooks with the cluster: {exc}") from None
    except ConnectionError as exc:
        raise fail(f"cannot reach the API server at {config.server}: {exc}") from None
    except ApiError as exc:
        raise fail(str(exc)) from None
    except CertificateError as exc:
        raise fail(f"the webhook server cannot start: {exc}") from None
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
            raise fail(
                f"cannot listen: {exc.strerror} (see --health-probe-bind-address, "
                "--metrics-bind-address and --webhook-port)"
            ) from None
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        # Interrupted before the manager took over the signals.
        raise typer.Exit(130) from None


async def _coroutine(step: Awaitable[None]) -> None:
    await step


async def _run(
    project: Project,
    config: ClusterConfig,
    flags: ManagerFlags,
    *,
    as_service_account: bool,
    view: ConsoleSettings | None = None,
) -> None:
    # The kubeconfig's credentials install RBAC and register webhooks; the controllers may
    # run as the project's ServiceAccount, which may do neither.
    async with Client(config, field_manager="kubeforge") as admin:
        manager_config = config
        if as_service_account:
            from kubeforge._runtime.serviceaccount import (
                as_service_account as account_config,
                install_rbac,
            )

            try:
                account = await install_rbac(admin, project.root / "config" / "rbac")
            except (OSError, ValueError) as exc:
                raise ProjectError(f"cannot install config/rbac: {exc}") from None
            log.info("installed config/rbac; running as service account %s", account)
            manager_config = account_config(admin, config, account)
        await _run_manager(
            project.call_setup,
            project.setup_error,
            project.name,
            manager_config,
            flags,
            register_with=admin,
            console=view,
            console_config=config,
        )


async def _run_setup(
    setup: Callable[[Manager], Any], name: str, config: ClusterConfig, flags: ManagerFlags
) -> None:
    def call(manager: Manager) -> Awaitable[Any] | None:
        try:
            result = setup(manager)
        except Exception as exc:
            raise _setup_error(exc) from None
        return result if inspect.isawaitable(result) else None

    await _run_manager(call, _setup_error, name, config, flags)


def _setup_error(exc: BaseException) -> ProjectError:
    return ProjectError(f"setup(manager) failed: {type(exc).__name__}: {exc}")


async def _run_manager(
    call_setup: Callable[[Manager], Awaitable[Any] | None],
    setup_error: Callable[[BaseException], ProjectError],
    name: str,
    config: ClusterConfig,
    flags: ManagerFlags,
    *,
    register_with: Client | None = None,
    console: ConsoleSettings | None = None,
    console_config: ClusterConfig | None = None,
) -> None:
    """Build the manager, let setup register with it, and run it. With `register_with` (the
    admin client of `kubeforge run`), its webhooks are served on this machine and registered
    with the cluster while it runs. With `console`, the console serves the cluster (read
    with `console_config`, the kubeconfig's credentials) and the manager's reconciles."""
    manager = flags.manager(config, name)
    local: _LocalWebhooks | None = None
    view: Console | None = None
    try:
        pending = call_setup(manager)
        if pending is not None:
            try:
                await pending
            except Exception as exc:
                raise setup_error(exc) from None
        names = ", ".join([*manager.controllers, *manager.runnables]) or "none"
        log.info("project %s: controllers %s; cluster %s", name, names, describe_cluster(config))
        if register_with is not None:
            local = _serve_webhooks(name, manager, register_with, flags)
        if console is not None:
            view = await console.start(console_config or config, f"kubeforge run {name}")
        if view is not None:
            view.observe(manager, name)
            typer.echo(f"console: {view.login_url}")
    except BaseException:
        await manager.api_reader.close()
        if local is not None:
            local.cleanup()
        raise
    try:
        await manager.run()
    except TimeoutError as exc:
        if manager.synced:
            raise
        raise _NotSynced(_sync_failure(manager)) from exc
    finally:
        if view is not None:
            await view.stop()
        if local is not None:
            local.cleanup()
    log.info("stopped")


@dataclass
class _LocalWebhooks:
    """The webhook server of this run, on this machine, and its registration."""

    serving: LocalServing
    admin: Client
    name_prefix: str

    @contextlib.asynccontextmanager
    async def registered(self, server: WebhookServer) -> AsyncIterator[WebhookRegistration]:
        """The manager's webhook registration: once the server answers (before the caches
        list anything) until the caches have stopped (while the server still answers)."""
        try:
            registration = await register_webhook_server(
                self.admin,
                server,
                ca_bundle=self.serving.ca_bundle,
                name_prefix=self.name_prefix,
                field_manager=FIELD_MANAGER,
            )
        except (ApiError, OSError, TimeoutError) as exc:
            raise _NotRegistered(str(exc)) from None
        try:
            yield registration
        finally:
            await _unregister(registration)

    def cleanup(self) -> None:
        self.serving.cleanup()


async def _unregister(registration: WebhookRegistration) -> None:
    """Delete the configurations and restore the CRDs' conversion; a cluster that cannot be
    reached any more keeps them, for the next run to take over and remove."""
    names, crds = registration.names, registration.crds
    try:
        await registration.remove()
    except (ApiError, OSError) as exc:
        log.warning(
            "could not remove the webhook registration (configurations %s; conversion of %s): "
            "%s (the next run takes it over and removes it when it stops; kubectl delete "
            "removes the configurations)",
            ", ".join(names) or "none",
            ", ".join(crds) or "no CRD",
            exc,
        )


def _serve_webhooks(
    name: str, manager: Manager, admin: Client, flags: ManagerFlags
) -> _LocalWebhooks | None:
    """Serve the webhooks `setup` registered on this machine and register them with the
    cluster while the manager runs (None when there are none)."""
    server = manager.webhook_server
    if not server.webhooks:
        return None
    serving = serve_locally(
        server,
        host=flags.webhook_host,
        port=flags.webhook_port,
        cert_dir=flags.webhook_cert_path or None,
    )
    local = _LocalWebhooks(serving, admin, f"{name}-local-")
    manager.add_webhook_registration(local.registered)
    log.info("webhooks: %s", ", ".join(entry.path for entry in server.webhooks))
    return local


def _sync_failure(manager: Manager) -> str:
    waiting = sorted(
        {
            str(informer.name)
            for controller in manager.controllers.values()
            for informer in controller.informers
            if not informer.synced.is_set()
        }
    )
    if not waiting:
        return "the caches did not sync in time"
    return (
        "the caches did not sync in time; still listing "
        + ", ".join(waiting)
        + " (are the CRDs installed? try `kubeforge install`)"
    )
