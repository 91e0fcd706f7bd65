"""`kubeforge migrate-storage KIND`: every object of a CRD rewritten in its storage version,
then `status.storedVersions` trimmed to it (_client/storagemigration.py says how).

    $ kubeforge migrate-storage ats.cnat.kubeforge.dev
    migrating ats.cnat.kubeforge.dev to v1 (stored versions: v1alpha1, v1)
      1000/1000 objects  rewritten 812  already v1 188
    status.storedVersions: v1alpha1, v1 -> v1

After it, a version other than the storage version may be removed from the CRD. It is safe
to run while controllers write the objects, and to run again after an interruption.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kubeforge._cli.connections import ContextOption, KubeconfigOption, cluster_config, run_against
from kubeforge._cli.project import fail
from kubeforge._client.client import Client
from kubeforge._client.config import ClusterConfig
from kubeforge._client.storagemigration import (
    DEFAULT_CHUNK_SIZE,
    MigrationError,
    MigrationProgress,
    find_crd,
    migrate_storage,
)

__all__ = ["migrate_storage_command"]

FIELD_MANAGER = "kubeforge-migrate-storage"


def migrate_storage_command(
    kind: Annotated[
        str,
        typer.Argument(
            help="The CRD (ats.cnat.kubeforge.dev), or its kind, plural or short name, "
            "optionally followed by .<group> (At, ats, at.cnat.kubeforge.dev).",
            show_default=False,
        ),
    ],
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    chunk_size: Annotated[
        int, typer.Option(min=1, help="Objects listed per page (the list's limit).")
    ] = DEFAULT_CHUNK_SIZE,
) -> None:
    """Rewrite every object of a CRD in its storage version, then trim status.storedVersions
    to that version (so the older versions can be dropped from the CRD)."""
    config = cluster_config(kubeconfig, context)
    try:
        run_against(_migrate(config, kind, chunk_size), config)
    except MigrationError as exc:
        raise fail(str(exc)) from None


async def _migrate(config: ClusterConfig, kind: str, chunk_size: int) -> None:
    async with Client(config, field_manager=FIELD_MANAGER) as client:
        crd = await find_crd(client, kind)
        name = crd["metadata"]["name"]
        shown = _Display(sys.stdout.isatty())
        result = await migrate_storage(
            client, name, chunk_size=chunk_size, on_progress=shown.progress
        )
    shown.done(result)


class _Display:
    """The progress line: rewritten in place on a terminal, one line per page otherwise."""

    def __init__(self, terminal: bool) -> None:
        self.terminal = terminal
        self.started = False
        self.pending = False

    def progress(self, progress: MigrationProgress) -> None:
        if not self.started:
            self.started = True
            typer.echo(
                f"migrating {progress.crd} to {progress.storage_version} (stored versions: "
                f"{', '.join(progress.stored_versions_before) or 'none'})"
            )
        total = "?" if progress.total is None else str(progress.total)
        line = (
            f"  {progress.seen}/{total} objects  rewritten {progress.rewritten}  "
            f"already {progress.storage_version} {progress.current}"
        )
        if progress.gone:
            line += f"  deleted meanwhile {progress.gone}"
        if progress.conflicts:
            line += f"  conflicts retried {progress.conflicts}"
        if self.terminal:
            typer.echo("\r\033[K" + line, nl=False)
            self.pending = True
        else:
            typer.echo(line)

    def done(self, progress: MigrationProgress) -> None:
        if self.pending:
            typer.echo()
        before = ", ".join(progress.stored_versions_before) or "none"
        after = ", ".join(progress.stored_versions)
        if progress.trimmed:
            typer.echo(f"status.storedVersions: {before} -> {after}")
        else:
            typer.echo(f"status.storedVersions: {after} (already)")
