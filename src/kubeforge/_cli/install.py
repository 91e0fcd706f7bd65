"""`kubeforge install` / `uninstall`: the project's CRDs (config/crd/bases) in a cluster.

install server-side applies every CRD (field manager `kubeforge`, taking over fields other
managers hold) and waits until each is Established; uninstall deletes them and waits until
they are gone (with them, every object of their kinds).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from kubeforge._cli.connections import (
    ContextOption,
    KubeconfigOption,
    StepFailed,
    cluster_config,
    describe_cluster,
    run_against,
)
from kubeforge._cli.project import fail
from kubeforge._client.client import Client
from kubeforge._client.config import ClusterConfig
from kubeforge._client.errors import ApiError, NotFound

__all__ = ["install", "read_crds", "uninstall"]

CRD_KIND = "apiextensions.k8s.io/v1/CustomResourceDefinition"
FIELD_MANAGER = "kubeforge"

DirOption = Annotated[
    Path, typer.Option("--dir", help="The project root (CRDs are read from config/crd/bases).")
]
TimeoutOption = Annotated[float, typer.Option(help="Seconds to wait for the CRDs.")]


def read_crds(directory: Path) -> list[dict[str, Any]]:
    """The CRDs in <directory>/config/crd/bases, in file order (ends the command if none)."""
    bases = directory / "config" / "crd" / "bases"
    files = sorted(bases.glob("*.yaml")) if bases.is_dir() else []
    crds: list[dict[str, Any]] = []
    for path in files:
        try:
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (OSError, yaml.YAMLError) as exc:
            raise fail(f"{path}: {exc}") from None
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                if not (doc.get("metadata") or {}).get("name"):
                    raise fail(f"{path}: a CustomResourceDefinition without metadata.name")
                crds.append(doc)
    if not crds:
        raise fail(f"no CRDs in {bases}; run `kubeforge manifests` first")
    return crds


def _name(crd: dict[str, Any]) -> str:
    return str(crd["metadata"]["name"])


def install(
    directory: DirOption = Path("."),
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    timeout: TimeoutOption = 60.0,
) -> None:
    """Install the project's CRDs into the cluster and wait until they are established."""
    crds = read_crds(directory)
    config = cluster_config(kubeconfig, context)
    run_against(_install(config, crds, timeout), config)


def uninstall(
    directory: DirOption = Path("."),
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    timeout: TimeoutOption = 60.0,
) -> None:
    """Delete the project's CRDs (and all their objects) from the cluster."""
    crds = read_crds(directory)
    config = cluster_config(kubeconfig, context)
    run_against(_uninstall(config, crds, timeout), config)


async def _install(config: ClusterConfig, crds: list[dict[str, Any]], timeout: float) -> None:
    typer.echo(f"installing {len(crds)} CRD(s) into {describe_cluster(config)}")
    async with Client(config, field_manager=FIELD_MANAGER) as client:
        for crd in crds:
            try:
                await client.apply(crd, field_manager=FIELD_MANAGER, force=True)
            except ApiError as exc:
                raise StepFailed(f"the server rejected CRD {_name(crd)}: {exc.message}") from None
            typer.echo(f"applied      {_name(crd)}")
        # The machine's time, as everywhere in the CLI: it waits for a cluster as a user does.
        started = time.monotonic()

        async def established(name: str) -> str | None:
            try:
                await client.wait_established([name], timeout)
            except TimeoutError:
                return await _not_established(client, name)
            typer.echo(f"established  {name} ({time.monotonic() - started:.1f}s)")
            return None

        problems = await asyncio.gather(*(established(_name(crd)) for crd in crds))
    failed = [p for p in problems if p]
    if failed:
        raise StepFailed(f"not established after {timeout:g}s: " + "; ".join(failed))


async def _not_established(client: Client, name: str) -> str:
    """Why a CRD is not established: its conditions that are not True."""
    try:
        crd = await client.get(CRD_KIND, name)
    except ApiError as exc:
        return f"{name} ({exc.message})"
    reasons = [
        f"{c.get('type')}={c.get('status')} {c.get('reason') or ''}: {c.get('message') or ''}"
        for c in (crd.get("status") or {}).get("conditions") or []
        if c.get("status") != "True"
    ]
    return f"{name} ({'; '.join(reasons) or 'no conditions reported'})"


async def _uninstall(config: ClusterConfig, crds: list[dict[str, Any]], timeout: float) -> None:
    typer.echo(f"deleting {len(crds)} CRD(s) from {describe_cluster(config)}")
    async with Client(config) as client:
        names: list[str] = []
        for crd in crds:
            name = _name(crd)
            try:
                await client.delete(CRD_KIND, name)
            except NotFound:
                typer.echo(f"not found    {name}")
                continue
            except ApiError as exc:
                raise StepFailed(f"cannot delete CRD {name}: {exc.message}") from None
            typer.echo(f"deleting     {name}")
            names.append(name)
        started = time.monotonic()

        async def gone(name: str) -> None:
            while True:
                try:
                    await client.get(CRD_KIND, name)
                except NotFound:
                    typer.echo(f"deleted      {name} ({time.monotonic() - started:.1f}s)")
                    return
                await asyncio.sleep(0.1)

        try:
            await asyncio.wait_for(asyncio.gather(*(gone(n) for n in names)), timeout)
        except TimeoutError:
            left = [n for n in names if await _exists(client, n)]
            raise StepFailed(
                f"still present after {timeout:g}s (objects with finalizers?): {', '.join(left)}"
            ) from None


async def _exists(client: Client, name: str) -> bool:
    try:
        await client.get(CRD_KIND, name)
    except NotFound:
        return False
    return True
