"""`kubeforge deploy`, `undeploy` and `build-installer`: the project's config/default in a cluster.

kubebuilder's Makefile targets, with one tool:

- deploy: set the manager's image in config/manager/kustomization.yaml (what `kustomize edit
  set image controller=IMG` writes) and, with --replicas, its replica count (`kustomize edit
  set replicas`), build config/default with kustomize, server-side apply
  every object (field manager `kubeforge`), waiting for CRDs to be established before
  anything else, then wait until each Deployment has rolled out and is available, printing
  its progress and what holds its pods back.
- undeploy: delete what config/default builds, in reverse order, and wait until it is gone.
- build-installer: the same build, written to dist/install.yaml.

The build is kustomize's own (`kubectl kustomize`, or `$KUSTOMIZE build` when set), so
`kubectl kustomize config/default` gives exactly the objects deploy applies (decision 0024).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from kubeforge._api.meta import GroupVersionKind
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
from kubeforge._client.discovery import NoKindMatch
from kubeforge._client.errors import ApiError, NotFound

__all__ = ["build", "build_installer", "deploy", "set_image", "set_replicas", "undeploy"]

FIELD_MANAGER = "kubeforge"
IMAGE_NAME = "controller"  # the image name config/manager/manager.yaml uses
MANAGER = "controller-manager"  # the Deployment config/manager/manager.yaml defines
CRD = "CustomResourceDefinition"

DirOption = Annotated[Path, typer.Option("--dir", help="The project root (holds config/default).")]
ImageOption = Annotated[
    str | None,
    typer.Option(
        "--img",
        help="The manager's image, e.g. registry.example.com/guestbook:v1 (default: the one "
        "config/manager/kustomization.yaml names).",
    ),
]
ReplicasOption = Annotated[
    int | None,
    typer.Option(
        "--replicas",
        min=0,
        help="How many replicas of the manager to run (written to "
        "config/manager/kustomization.yaml). Replicas share a sharded controller's objects; "
        "other controllers run in the one that leads.",
    ),
]
KustomizeOption = Annotated[
    str | None,
    typer.Option(
        help="The kustomize command that builds a directory (default: $KUSTOMIZE build, or "
        "kubectl kustomize)."
    ),
]

# Where to find each kind when the cluster does not serve it.
_MISSING_HINTS = {
    "cert-manager.io": "config/certmanager needs cert-manager: https://cert-manager.io/docs/installation/",
    "monitoring.coreos.com": "config/prometheus needs the Prometheus Operator's CRDs",
}


# building -----------------------------------------------------------------------------------


def _kustomize_command(kustomize: str | None) -> list[str]:
    if kustomize:
        return shlex.split(kustomize)
    from_env = os.environ.get("KUSTOMIZE")
    if from_env:
        return [from_env, "build"]
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise fail(
            "neither kubectl nor kustomize found: install kubectl (it embeds kustomize) "
            "or set KUSTOMIZE to a kustomize binary"
        )
    return [kubectl, "kustomize"]


def build(root: Path, kustomize: str | None = None) -> tuple[str, list[dict[str, Any]]]:
    """The YAML stream kustomize builds from `root`/config/default, and its objects."""
    target = root / "config" / "default"
    if not (target / "kustomization.yaml").is_file():
        raise fail(
            f"{target}/kustomization.yaml: missing; is {root} a project made by `kubeforge init`?"
        )
    command = [*_kustomize_command(kustomize), str(target)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise fail(f"{shlex.join(command)}: {exc}") from None
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise fail(f"kustomize cannot build config/default: {' '.join(message) or 'failed'}")
    try:
        documents = [d for d in yaml.safe_load_all(done.stdout) if d]
    except yaml.YAMLError as exc:
        raise fail(f"kustomize's output is not YAML: {exc}") from None
    objects = [d for d in documents if isinstance(d, dict) and d.get("kind")]
    return done.stdout, objects


def split_image(image: str) -> dict[str, str]:
    """An image reference as kustomize's images entry: newName and newTag (or digest)."""
    if "@" in image:
        name, digest = image.split("@", 1)
        return {"newName": name, "digest": digest}
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        return {"newName": image[:colon], "newTag": image[colon + 1 :]}
    return {"newName": image}


def _edit_manager_kustomization(root: Path, field: str, name: str, wanted: dict[str, Any]) -> bool:
    """Make the entry `name` of the list `field` of config/manager/kustomization.yaml read
    `wanted` (with its name), as `kustomize edit set` does; whether the file changed."""
    path = root / "config" / "manager" / "kustomization.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise fail(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise fail(f"{path}: not a kustomization")
    entries = data.setdefault(field, [])
    entry = next((e for e in entries if isinstance(e, dict) and e.get("name") == name), None)
    if entry is None:
        entry = {"name": name}
        entries.append(entry)
    wanted = {"name": name, **wanted}
    if entry == wanted:
        return False
    entry.clear()
    entry.update(wanted)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return True


def set_image(root: Path, image: str) -> bool:
    """Point the `controller` image of config/manager/kustomization.yaml at `image`, as
    `kustomize edit set image controller=<image>` does; whether the file changed."""
    if not image or any(c.isspace() for c in image):
        raise fail(f"invalid image {image!r}")
    return _edit_manager_kustomization(root, "images", IMAGE_NAME, split_image(image))


def set_replicas(root: Path, count: int) -> bool:
    """Run `count` replicas of the manager: the `replicas` entry of
    config/manager/kustomization.yaml, as `kustomize edit set replicas
    controller-manager=<count>` writes it; whether the file changed."""
    if count < 0:
        raise fail(f"invalid replica count {count}")
    return _edit_manager_kustomization(root, "replicas", MANAGER, {"count": count})


def _describe(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    name = meta.get("name", "?")
    namespace = meta.get("namespace")
    return f"{obj.get('kind')} {namespace}/{name}" if namespace else f"{obj.get('kind')} {name}"


# commands -----------------------------------------------------------------------------------


def _set(root: Path, image: str | None, replicas: int | None) -> None:
    """--img and --replicas, written where kustomize reads them."""
    if image is not None and set_image(root, image):
        typer.echo(f"image        {IMAGE_NAME}={image} (config/manager/kustomization.yaml)")
    if replicas is not None and set_replicas(root, replicas):
        typer.echo(f"replicas     {MANAGER}={replicas} (config/manager/kustomization.yaml)")


def deploy(
    image: ImageOption = None,
    directory: DirOption = Path("."),
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    wait: Annotated[
        bool,
        typer.Option("--wait/--no-wait", help="Wait until the manager's Deployment is available."),
    ] = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the rollout.")] = 300.0,
    kustomize: KustomizeOption = None,
    replicas: ReplicasOption = None,
) -> None:
    """Deploy the manager to the cluster: config/default (with --img as its image and
    --replicas replicas), server-side applied, then wait until the manager is available."""
    root = directory.resolve()
    _set(root, image, replicas)
    _, objects = build(root, kustomize)
    config = cluster_config(kubeconfig, context)
    run_against(_deploy(config, objects, wait=wait, timeout=timeout), config)


def undeploy(
    directory: DirOption = Path("."),
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="Wait until everything is gone.")
    ] = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the deletions.")] = 120.0,
    kustomize: KustomizeOption = None,
) -> None:
    """Delete from the cluster everything `deploy` applies (the CRDs too, and with them
    every object of their kinds)."""
    _, objects = build(directory.resolve(), kustomize)
    config = cluster_config(kubeconfig, context)
    run_against(_undeploy(config, objects, wait=wait, timeout=timeout), config)


def build_installer(
    image: ImageOption = None,
    directory: DirOption = Path("."),
    output: Annotated[
        Path, typer.Option(help="Where to write the installer (relative to the project).")
    ] = Path("dist/install.yaml"),
    kustomize: KustomizeOption = None,
    replicas: ReplicasOption = None,
) -> None:
    """Write dist/install.yaml: everything `deploy` applies, in one file for
    `kubectl apply -f`."""
    root = directory.resolve()
    _set(root, image, replicas)
    text, objects = build(root, kustomize)
    target = output if output.is_absolute() else root / output
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    typer.echo(f"wrote        {output} ({len(objects)} objects)")


# deploy -------------------------------------------------------------------------------------


async def _deploy(
    config: ClusterConfig, objects: list[dict[str, Any]], *, wait: bool, timeout: float
) -> None:
    typer.echo(f"deploying {len(objects)} objects to {describe_cluster(config)}")
    async with Client(config, field_manager=FIELD_MANAGER) as client:
        await _check_served(client, objects)
        crds = [o for o in objects if o.get("kind") == CRD]
        for obj in crds:
            await _apply(client, obj)
        if crds:
            names = [o["metadata"]["name"] for o in crds]
            try:
                await client.wait_established(names, timeout=60)
            except TimeoutError:
                raise StepFailed(f"CRDs not established after 60s: {', '.join(names)}") from None
            client.discovery.invalidate()
        for obj in objects:
            if obj.get("kind") != CRD:
                await _apply(client, obj)
        deployments = [o for o in objects if o.get("kind") == "Deployment"]
        if wait:
            for deployment in deployments:
                await _wait_available(client, deployment, timeout)


async def _check_served(client: Client, objects: list[dict[str, Any]]) -> None:
    """Refuse before applying anything when the cluster lacks a kind the build uses (that
    the build's own CRDs do not bring)."""
    own = set()
    for crd in (o for o in objects if o.get("kind") == CRD):
        spec = crd.get("spec") or {}
        for version in spec.get("versions") or []:
            own.add((spec.get("group"), version.get("name"), (spec.get("names") or {}).get("kind")))
    missing: dict[str, list[str]] = {}
    for obj in objects:
        gvk = GroupVersionKind.parse(f"{obj.get('apiVersion')}/{obj.get('kind')}")
        if (gvk.group, gvk.version, gvk.kind) in own:
            continue
        try:
            await client.resource(gvk)
        except NoKindMatch:
            missing.setdefault(gvk.group, []).append(f"{gvk.kind} ({gvk.api_version})")
    if missing:
        parts = []
        for group, kinds in sorted(missing.items()):
            hint = _MISSING_HINTS.get(group, f"install what serves {group} first")
            parts.append(f"{', '.join(sorted(set(kinds)))}: {hint}")
        raise StepFailed("the cluster does not serve " + "; ".join(parts))


async def _apply(client: Client, obj: dict[str, Any]) -> None:
    try:
        await client.apply(obj, field_manager=FIELD_MANAGER, force=True)
    except ApiError as exc:
        raise StepFailed(f"the server rejected {_describe(obj)}: {exc.message}") from None
    typer.echo(f"applied      {_describe(obj)}")


@dataclass
class _Rollout:
    """What `kubectl rollout status` reads from a Deployment."""

    done: bool
    message: str


def _rollout(deployment: dict[str, Any]) -> _Rollout:
    meta = deployment.get("metadata") or {}
    spec = deployment.get("spec") or {}
    status = deployment.get("status") or {}
    name = meta.get("name")
    if status.get("observedGeneration", 0) < meta.get("generation", 0):
        return _Rollout(False, "waiting for the deployment controller to see the change")
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Progressing" and condition.get("reason") == (
            "ProgressDeadlineExceeded"
        ):
            raise StepFailed(f"deployment {name} exceeded its progress deadline")
    wanted = spec.get("replicas", 1)
    updated = status.get("updatedReplicas", 0)
    replicas = status.get("replicas", 0)
    available = status.get("availableReplicas", 0)
    if updated < wanted:
        return _Rollout(False, f"{updated} of {wanted} new replicas updated")
    if replicas > updated:
        return _Rollout(False, f"{replicas - updated} old replicas pending termination")
    if available < updated:
        return _Rollout(False, f"{available} of {updated} updated replicas available")
    return _Rollout(True, f"{available} of {wanted} replicas available")


async def _pod_problems(client: Client, deployment: dict[str, Any]) -> list[str]:
    """Why the Deployment's pods are not ready: their containers' waiting reasons."""
    meta = deployment.get("metadata") or {}
    labels = (((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels")) or {}
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    try:
        pods = await client.list("v1/Pod", namespace=meta.get("namespace"), label_selector=selector)
    except ApiError:
        return []
    problems = []
    for pod in pods:
        pod_name = (pod.get("metadata") or {}).get("name")
        status = pod.get("status") or {}
        for container in status.get("containerStatuses") or []:
            waiting = (container.get("state") or {}).get("waiting") or {}
            reason = waiting.get("reason")
            if reason and reason not in ("ContainerCreating", "PodInitializing"):
                message = waiting.get("message") or ""
                problems.append(f"pod {pod_name}: {reason}{': ' + message if message else ''}")
        if status.get("phase") == "Pending" and not status.get("containerStatuses"):
            for condition in status.get("conditions") or []:
                if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                    problems.append(
                        f"pod {pod_name}: {condition.get('message') or 'unschedulable'}"
                    )
    return problems


async def _wait_available(client: Client, deployment: dict[str, Any], timeout: float) -> None:
    meta = deployment["metadata"]
    name, namespace = meta["name"], meta.get("namespace")
    # The machine's time, as everywhere in the CLI: it waits for a cluster as a user does.
    started = time.monotonic()
    shown: tuple[str, ...] = ()
    while True:
        current = await client.get("apps/v1/Deployment", name, namespace=namespace)
        rollout = _rollout(current)
        elapsed = time.monotonic() - started
        if rollout.done:
            typer.echo(
                f"available    Deployment {namespace}/{name}: {rollout.message} ({elapsed:.1f}s)"
            )
            return
        problems = await _pod_problems(client, current)
        # A problem is shown again only when its reason changes, not its back-off time.
        state = (rollout.message, *(p.split(": ")[1] for p in problems))
        if state != shown:
            typer.echo(f"waiting      Deployment {namespace}/{name}: {rollout.message}")
            for problem in problems:
                typer.echo(f"             {problem}")
            shown = state
        if elapsed > timeout:
            why = "; ".join(problems) or rollout.message
            raise StepFailed(
                f"Deployment {namespace}/{name} not available after {timeout:g}s: {why}"
            )
        await asyncio.sleep(1.0)


# undeploy -----------------------------------------------------------------------------------


async def _undeploy(
    config: ClusterConfig, objects: list[dict[str, Any]], *, wait: bool, timeout: float
) -> None:
    typer.echo(f"deleting {len(objects)} objects from {describe_cluster(config)}")
    async with Client(config, field_manager=FIELD_MANAGER) as client:
        deleting: list[dict[str, Any]] = []
        # Reverse order: webhooks and the manager go first, the namespace and CRDs last.
        for obj in reversed(objects):
            try:
                await client.delete_object(obj, propagation_policy="Background")
            except (NotFound, NoKindMatch):
                typer.echo(f"not found    {_describe(obj)}")
                continue
            except ApiError as exc:
                raise StepFailed(f"cannot delete {_describe(obj)}: {exc.message}") from None
            typer.echo(f"deleting     {_describe(obj)}")
            deleting.append(obj)
        if not wait:
            return
        started = time.monotonic()
        left = deleting
        while left:
            left = [obj for obj in left if await _exists(client, obj)]
            if not left:
                break
            if time.monotonic() - started > timeout:
                raise StepFailed(
                    f"still present after {timeout:g}s (finalizers?): "
                    + ", ".join(_describe(o) for o in left)
                )
            await asyncio.sleep(0.2)
        typer.echo(f"deleted      {len(deleting)} objects ({time.monotonic() - started:.1f}s)")


async def _exists(client: Client, obj: dict[str, Any]) -> bool:
    meta = obj.get("metadata") or {}
    try:
        await client.get(
            f"{obj['apiVersion']}/{obj['kind']}", meta["name"], namespace=meta.get("namespace")
        )
    except (NotFound, NoKindMatch):
        return False
    return True
