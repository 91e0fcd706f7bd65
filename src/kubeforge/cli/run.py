"""`kubeforge run`: the project's controllers, running against a cluster from this machine.

Like kubebuilder's `make run` (`go run ./cmd/main.go`): a Manager is built from the
kubeconfig, the project's `setup(manager)` registers its controllers, and the manager runs
until SIGTERM or SIGINT (exit 0). Losing leadership or caches that never sync end it with
status 1.

With `--as-service-account` the project's `config/rbac` is installed first (with the
kubeconfig's credentials) and the controllers run with tokens of its ServiceAccount, so a
permission their `@rbac` rules lack is refused here, before deploy; each refusal is logged
with the rule that would allow it.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import sys
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
from kubeforge.runtime.logs import configure_logging
from kubeforge.runtime.manager import Manager
from kubeforge.webhook.certwatcher import CertificateError

__all__ = ["run"]

log = logging.getLogger("kubeforge.run")


class LogFormatChoice(StrEnum):
    """The values of --log-format."""

    text = "text"
    json = "json"


class _NotSynced(Exception):
    """The caches did not sync; the message names the kinds that did not."""


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
            )
        )
    except ProjectError as exc:
        raise fail(str(exc)) from None
    except LeadershipLost:
        raise fail("leader election lost: another instance leads now; exiting") from None
    except _NotSynced as exc:
        raise fail(str(exc)) from None
    except ConnectionError as exc:
        raise fail(f"cannot reach the API server at {config.server}: {exc}") from None
    except ApiError as exc:
        raise fail(str(exc)) from None
    except CertificateError as exc:
        raise fail(f"the webhook server cannot start: {exc}") from None
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
            raise fail(
                f"cannot listen: {exc.strerror} (see --health-probe-bind-address and "
                "--metrics-bind-address)"
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
) -> None:
    if not as_service_account:
        await _run_manager(
            project,
            config,
            metrics_bind_address=metrics_bind_address,
            metrics_secure=metrics_secure,
            health_probe_bind_address=health_probe_bind_address,
            leader_election=leader_election,
            leader_election_id=leader_election_id,
        )
        return
    from kubeforge.runtime.serviceaccount import as_service_account as account_config
    from kubeforge.runtime.serviceaccount import install_rbac

    async with Client(config, field_manager="kubeforge") as admin:
        try:
            account = await install_rbac(admin, project.root / "config" / "rbac")
        except (OSError, ValueError) as exc:
            raise ProjectError(f"cannot install config/rbac: {exc}") from None
        log.info("installed config/rbac; running as service account %s", account)
        await _run_manager(
            project,
            account_config(admin, config, account),
            metrics_bind_address=metrics_bind_address,
            metrics_secure=metrics_secure,
            health_probe_bind_address=health_probe_bind_address,
            leader_election=leader_election,
            leader_election_id=leader_election_id,
        )


async def _run_manager(
    project: Project,
    config: ClusterConfig,
    *,
    metrics_bind_address: str,
    metrics_secure: bool,
    health_probe_bind_address: str,
    leader_election: bool,
    leader_election_id: str,
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
        await manager.run()
    except TimeoutError as exc:
        if manager.synced:
            raise
        raise _NotSynced(_sync_failure(manager)) from exc
    log.info("stopped")


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
