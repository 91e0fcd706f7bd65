"""`kubeforge demo`: short, narrated scenarios that run end to end on this machine."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kubeforge._testing.kubectl import Kubectl

if TYPE_CHECKING:
    from kubeforge._cluster.options import ClusterOptions

__all__ = ["demo"]

GREETING_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: greetings.demo.kubeforge.dev
spec:
  group: demo.kubeforge.dev
  scope: Namespaced
  names:
    plural: greetings
    singular: greeting
    kind: Greeting
    shortNames: [gr]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Message
      type: string
      jsonPath: .spec.message
    - name: Times
      type: integer
      jsonPath: .spec.times
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [message]
            properties:
              message: {type: string, minLength: 1}
              times: {type: integer, minimum: 1, maximum: 10, default: 1}
"""

GREETING = """\
apiVersion: demo.kubeforge.dev/v1
kind: Greeting
metadata:
  name: hello
spec:
  message: hello, world
"""


class Narrator:
    """Runs kubectl against the demo server and shows each command with its output."""

    def __init__(self, kubeconfig: Path, workdir: Path) -> None:
        try:
            self.kubectl = Kubectl(kubeconfig, cache_dir=workdir / "cache")
        except FileNotFoundError as exc:
            raise typer.Exit(_fail(str(exc))) from None

    def say(self, text: str) -> None:
        typer.secho(f"\n# {text}", fg=typer.colors.CYAN)

    async def run(self, *args: str, stdin: str | None = None) -> str:
        typer.secho("$ kubectl " + " ".join(args), bold=True)
        result = await self.kubectl.run(*args, stdin=stdin, check=False)
        text = result.out + result.err
        typer.echo(text.rstrip())
        if result.code != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} exited with {result.code}")
        return text

    async def start(self, *args: str) -> asyncio.subprocess.Process:
        typer.secho("$ kubectl " + " ".join(args) + " &", bold=True)
        return await self.kubectl.start(*args)


async def _apiserver_demo() -> None:
    from kubeforge._apiserver.server import APIServer

    with tempfile.TemporaryDirectory(prefix="kubeforge-demo-") as tmp:
        workdir = Path(tmp)
        async with APIServer() as server:
            kubeconfig = server.write_kubeconfig(workdir / "kubeconfig")
            typer.secho(f"kubeforge API server running at {server.url}", fg=typer.colors.GREEN)
            k = Narrator(kubeconfig, workdir)

            k.say("The server speaks Kubernetes: discovery, namespaces, versions.")
            await k.run("get", "namespaces")

            k.say("Install a CustomResourceDefinition and wait until it is established.")
            await k.run("apply", "-f", "-", stdin=GREETING_CRD)
            await k.run(
                "wait",
                "--for=condition=established",
                "--timeout=30s",
                "crd/greetings.demo.kubeforge.dev",
            )

            k.say("Create a custom resource; the schema fills in the default for `times`.")
            await k.run("apply", "-f", "-", stdin=GREETING)
            await k.run("get", "greetings")

            k.say("Watch it while it changes (kubectl get -w, served as Table events).")
            watcher = await k.start("get", "greetings", "-w", "--output-watch-events")
            assert watcher.stdout is not None
            header = await asyncio.wait_for(watcher.stdout.readline(), 30)
            added = await asyncio.wait_for(watcher.stdout.readline(), 30)
            await k.run("patch", "greeting", "hello", "--type=merge", "-p", '{"spec":{"times":3}}')
            modified = await asyncio.wait_for(watcher.stdout.readline(), 30)
            await k.run("delete", "greeting", "hello")
            deleted = await asyncio.wait_for(watcher.stdout.readline(), 30)
            watcher.kill()
            await watcher.wait()
            typer.secho("watch output:", bold=True)
            for line in (header, added, modified, deleted):
                typer.echo("  " + line.decode().rstrip())

            k.say("Invalid objects are rejected with the field path.")
            bad = GREETING.replace("hello, world", "hi").replace("message: hi", "message: ''")
            try:
                await k.run("apply", "-f", "-", stdin=bad)
            except RuntimeError:
                typer.echo("(rejected, as it should be)")
            else:
                raise RuntimeError("an invalid greeting was accepted")

            k.say("Clean up.")
            await k.run("delete", "crd", "greetings.demo.kubeforge.dev")
        typer.secho("\ndemo finished", fg=typer.colors.GREEN)


def _demo_cluster(root: Path) -> ClusterOptions:
    """The development cluster a project's demo plays on: the defaults, or what its
    pyproject.toml asks for under `[tool.kubeforge.demo]` (`nodes`, and `images`: image ->
    directory relative to the project, run as local processes as `kubeforge dev --image`
    runs them)."""
    from kubeforge._cluster.options import ClusterOptions

    try:
        with (root / "pyproject.toml").open("rb") as file:
            settings = tomllib.load(file).get("tool", {}).get("kubeforge", {}).get("demo", {})
    except FileNotFoundError:
        return ClusterOptions()
    except tomllib.TOMLDecodeError as exc:
        raise RuntimeError(f"{root / 'pyproject.toml'}: {exc}") from None
    nodes = settings.get("nodes", 1)
    images = settings.get("images", {})
    if not isinstance(nodes, int) or nodes < 1 or not isinstance(images, dict):
        raise RuntimeError(
            f"{root / 'pyproject.toml'}: [tool.kubeforge.demo] takes nodes (a number of at "
            "least 1) and images (a table of image = directory)"
        )
    return ClusterOptions(
        nodes=nodes, images={str(image): root / str(path) for image, path in images.items()}
    )


def _fail(message: str) -> int:
    typer.secho(message, fg=typer.colors.RED, err=True)
    return 1


async def _project_demo(root: Path) -> None:
    """Start a development cluster, install the project's CRDs, run its controllers in this
    process and play its demo.sh with kubectl pointed at the cluster."""
    from kubeforge._cli.project import load_project
    from kubeforge._testing.env import TestEnv

    script = root / "demo.sh"
    if not script.is_file():
        raise RuntimeError(f"{script}: missing; it is the scenario the demo plays")
    project = load_project(root)
    logging.basicConfig(level=logging.WARNING, format="  [%(name)s] %(message)s", stream=sys.stdout)
    # The project's own loggers tell the story next to kubectl's output.
    for name in ("main", "controllers", "api", project.name):
        logging.getLogger(name).setLevel(logging.INFO)
    crds = root / "config" / "crd" / "bases"
    with tempfile.TemporaryDirectory(prefix="kubeforge-demo-") as tmp:
        workdir = Path(tmp)
        options = _demo_cluster(root)
        async with TestEnv(crd_paths=[crds], options=options, use_existing_cluster=False) as env:
            kubeconfig = env.write_kubeconfig(workdir / "kubeconfig")
            assert env.cluster is not None  # use_existing_cluster=False: one was started
            typer.secho(
                f"development cluster running at {env.cluster.url}; "
                f"CRDs installed: {', '.join(env.installed) or 'none'}",
                fg=typer.colors.GREEN,
            )
            async with env.run_manager(project.setup) as manager:
                running = [*manager.controllers, *manager.runnables]
                typer.secho(
                    f"{project.name} controllers running: {', '.join(running) or 'none'}",
                    fg=typer.colors.GREEN,
                )
                environment = dict(
                    os.environ, KUBECONFIG=str(kubeconfig), KUBECACHEDIR=str(workdir / "cache")
                )
                proc = await asyncio.create_subprocess_exec(
                    "bash", str(script), cwd=root, env=environment
                )
                code = await proc.wait()
                if code != 0:
                    raise RuntimeError(f"{script} exited with status {code}")
                typer.secho("\nstopping the controllers and the cluster", fg=typer.colors.GREEN)
    typer.secho("demo finished", fg=typer.colors.GREEN)


def _find_project(name: str) -> Path | None:
    """A project directory: `name` itself, or examples/<name> from here."""
    for candidate in (Path(name), Path("examples") / name):
        if (candidate / "demo.sh").is_file():
            return candidate.resolve()
    return None


def _examples() -> list[str]:
    base = Path("examples")
    return sorted(p.parent.name for p in base.glob("*/demo.sh")) if base.is_dir() else []


def demo(
    name: Annotated[
        str,
        typer.Argument(
            help="apiserver (the bare API server and kubectl), an example's name (cnat, "
            "useless, ...) or a project directory holding demo.sh"
        ),
    ] = "cnat",
) -> None:
    """Run a narrated demo end to end and exit 0 when everything worked."""
    if name == "apiserver":
        scenario = _apiserver_demo()
    else:
        root = _find_project(name)
        if root is None:
            choices = ", ".join(["apiserver", *_examples()])
            raise typer.Exit(_fail(f"no demo {name!r}; choose one of: {choices}"))
        scenario = _project_demo(root)
    try:
        asyncio.run(scenario)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as exc:  # report any failure plainly and exit non-zero
        typer.secho(f"demo failed: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None


if __name__ == "__main__":  # pragma: no cover
    typer.run(demo)
