"""`kubeforge run`: the project's controllers, running against a cluster from this machine.

Like kubebuilder's `make run` (`go run ./cmd/main.go`): a Manager is built from the
kubeconfig, the project's `setup(manager)` registers its controllers, and the manager runs
until SIGTERM or SIGINT (exit 0). Losing leadership or caches that never sync end it with
status 1.

With `--as-service-account` the project's `config/rbac` is installed first (with the
kubeconfig's credentials) and the controllers run with tokens of its ServiceAccount, so a
permission their `@rbac` rules lack is refused here, before deploy; each refusal is logged
with the rule that would allow it.

When `setup` registers webhooks, the webhook server listens on this machine (127.0.0.1:9443
by default) with a certificate generated for the run, and once it answers, the project's
webhook configurations are registered with the cluster (with the kubeconfig's credentials)
as `<project>-local-mutating-webhook-configuration` and `...-validating-...`, calling it by
URL; they are deleted again on the way out.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kubeforge.cli.install import ContextOption, KubeconfigOption, cluster_config
from kubeforge.cli.project import Project, ProjectError, fail, open_project
from kubeforge.client.client import Client
from kubeforge.client.config import ClusterConfig
from kubeforge.client.errors import ApiError
from kubeforge.runtime.leaderelection import LeadershipLost
from kubeforge.runtime.localwebhooks import (
    LOCAL_HOST,
    LocalServing,
    WebhookRegistration,
    register_webhook_server,
    serve_locally,
)
from kubeforge.runtime.logs import configure_logging
from kubeforge.runtime.manager import Manager
from kubeforge.webhook.certwatcher import CertificateError
from kubeforge.webhook.server import DEFAULT_PORT

__all__ = ["run"]

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


@dataclass(frozen=True)
class WebhookOptions:
    """Where and how the webhook server serves (the --webhook-* flags)."""

    host: str = LOCAL_HOST
    port: int = DEFAULT_PORT
    cert_path: Path | None = None
    cert_name: str = "tls.crt"
    cert_key: str = "tls.key"


def run(
    directory: Annotated[
        Path, typer.Option("--dir", help="The project root (holds api/, controllers/, main.py).")
    ] = Path("."),
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    metrics_bind_address: Annotated[
        str, typer.Option(help="Where /metrics is served, e.g. :8080; 0 turns it off.")
    ] = "0",
    metrics_secure: Annotated[
        bool,
        typer.Option(
            "--metrics-secure",
            help="Serve /metrics over HTTPS to callers the API server authenticates and "
            "authorizes (TokenReview and SubjectAccessReview).",
        ),
    ] = False,
    health_probe_bind_address: Annotated[
        str, typer.Option(help="Where /healthz and /readyz are served; 0 turns them off.")
    ] = ":8081",
    leader_elect: Annotated[
        bool,
        typer.Option("--leader-elect", help="Run controllers only while holding the lease."),
    ] = False,
    leader_election_id: Annotated[
        str | None,
        typer.Option(help="The Lease's name (default: <project>-leader-election)."),
    ] = None,
    as_service_account: Annotated[
        bool,
        typer.Option(
            "--as-service-account",
            help="Install config/rbac and run as its ServiceAccount, with only the "
            "permissions the project's @rbac rules grant.",
        ),
    ] = False,
    log_format: Annotated[
        LogFormatChoice,
        typer.Option(
            help="text: one readable line per record; json: one JSON object per line "
            "(time, level, logger, message, and the reconcile's controller, object_kind, "
            "object_namespace, object_name and reconcile_id)."
        ),
    ] = LogFormatChoice.text,
    webhook_host: Annotated[
        str,
        typer.Option(
            help="Address the webhook server listens on; the cluster calls it at "
            "https://<this address>:<port> (0.0.0.0: all interfaces, called at 127.0.0.1)."
        ),
    ] = LOCAL_HOST,
    webhook_port: Annotated[
        int, typer.Option(help="Port of the webhook server; 0 picks a free one.")
    ] = DEFAULT_PORT,
    webhook_cert_path: Annotated[
        Path | None,
        typer.Option(
            help="The directory that contains the webhook certificate (its ca.crt, or else "
            "the certificate itself, becomes the caBundle); default: a CA and certificate "
            "generated for this run."
        ),
    ] = None,
    webhook_cert_name: Annotated[
        str, typer.Option(help="The name of the webhook certificate file.")
    ] = "tls.crt",
    webhook_cert_key: Annotated[
        str, typer.Option(help="The name of the webhook key file.")
    ] = "tls.key",
) -> None:
    """Run the project's controllers until SIGTERM or SIGINT."""
    project = open_project(directory)
    config = cluster_config(kubeconfig, context)
    configure_logging(log_format.value)
    # Reconcilers may import project modules lazily, as they could under `python main.py`.
    sys.path.insert(0, str(project.root))
    try:
        asyncio.run(
            _run(
                project,
                config,
                metrics_bind_address=metrics_bind_address,
                metrics_secure=metrics_secure,
                health_probe_bind_address=health_probe_bind_address,
                leader_election=leader_elect,
                leader_election_id=leader_election_id or f"{project.name}-leader-election",
                as_service_account=as_service_account,
                webhooks=WebhookOptions(
                    webhook_host,
                    webhook_port,
                    webhook_cert_path,
                    webhook_cert_name,
                    webhook_cert_key,
                ),
            )
        )
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


async def _run(
    project: Project,
    config: ClusterConfig,
    *,
    metrics_bind_address: str,
    metrics_secure: bool,
    health_probe_bind_address: str,
    leader_election: bool,
    leader_election_id: str,
    as_service_account: bool = False,
    webhooks: WebhookOptions | None = None,
) -> None:
    # The kubeconfig's credentials install RBAC and register webhooks; the controllers may
    # run as the project's ServiceAccount, which may do neither.
    async with Client(config, field_manager="kubeforge") as admin:
        manager_config = config
        if as_service_account:
            from kubeforge.runtime.serviceaccount import as_service_account as account_config
            from kubeforge.runtime.serviceaccount import install_rbac

            try:
                account = await install_rbac(admin, project.root / "config" / "rbac")
            except (OSError, ValueError) as exc:
                raise ProjectError(f"cannot install config/rbac: {exc}") from None
            log.info("installed config/rbac; running as service account %s", account)
            manager_config = account_config(admin, config, account)
        await _run_manager(
            project,
            manager_config,
            admin,
            metrics_bind_address=metrics_bind_address,
            metrics_secure=metrics_secure,
            health_probe_bind_address=health_probe_bind_address,
            leader_election=leader_election,
            leader_election_id=leader_election_id,
            webhooks=webhooks or WebhookOptions(),
        )


async def _run_manager(
    project: Project,
    config: ClusterConfig,
    admin: Client,
    *,
    metrics_bind_address: str,
    metrics_secure: bool,
    health_probe_bind_address: str,
    leader_election: bool,
    leader_election_id: str,
    webhooks: WebhookOptions,
) -> None:
    manager = Manager(
        config,
        metrics_bind_address=metrics_bind_address,
        secure_metrics=metrics_secure,
        health_probe_bind_address=health_probe_bind_address,
        leader_election=leader_election,
        leader_election_id=leader_election_id,
    )
    pending = project.call_setup(manager)
    if pending is not None:
        try:
            await pending
        except Exception as exc:
            raise project.setup_error(exc) from None
    names = ", ".join([*manager.controllers, *manager.runnables]) or "none"
    where = f"context {config.context!r}" if config.context else config.server
    log.info("project %s: controllers %s; cluster %s", project.name, names, where)
    try:
        local = _serve_webhooks(project, manager, admin, webhooks)
    except BaseException:
        await manager.api_reader.close()
        raise
    try:
        await manager.run()
    except TimeoutError as exc:
        if manager.synced:
            raise
        raise _NotSynced(_sync_failure(manager)) from exc
    finally:
        if local is not None:
            await local.unregister()
            local.serving.cleanup()
    log.info("stopped")


@dataclass
class _LocalWebhooks:
    """The webhook server of this run, on this machine, and its registration."""

    serving: LocalServing
    admin: Client
    name_prefix: str
    registration: WebhookRegistration | None = None

    async def run(self, stopping: asyncio.Event, manager: Manager) -> None:
        """Register once the server answers; unregister when the manager stops (before the
        webhook server, which it stops last)."""
        try:
            self.registration = await register_webhook_server(
                self.admin,
                manager.webhook_server,
                ca_bundle=self.serving.ca_bundle,
                name_prefix=self.name_prefix,
                field_manager=FIELD_MANAGER,
            )
        except (ApiError, OSError, TimeoutError) as exc:
            raise _NotRegistered(str(exc)) from None
        try:
            await stopping.wait()
        finally:
            await self.unregister()

    async def unregister(self) -> None:
        """Delete the registration (once); a cluster that cannot be reached any more leaves
        it behind, to be replaced by the next run."""
        registration = self.registration
        if registration is None:
            return
        self.registration = None
        names = registration.names
        try:
            await registration.remove()
        except (ApiError, OSError) as exc:
            log.warning(
                "could not remove the webhook configurations %s: %s (the next run takes "
                "them over; kubectl delete removes them)",
                ", ".join(names),
                exc,
            )


def _serve_webhooks(
    project: Project, manager: Manager, admin: Client, options: WebhookOptions
) -> _LocalWebhooks | None:
    """Serve the webhooks `setup` registered on this machine and register them with the
    cluster while the manager runs (None when there are none)."""
    server = manager.webhook_server
    if not server.webhooks:
        return None
    server.cert_name = options.cert_name
    server.key_name = options.cert_key
    serving = serve_locally(
        server, host=options.host, port=options.port, cert_dir=options.cert_path
    )
    local = _LocalWebhooks(serving, admin, f"{project.name}-local-")

    async def register_webhooks(stopping: asyncio.Event) -> None:
        await local.run(stopping, manager)

    manager.add(register_webhooks, need_leader_election=False)
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
