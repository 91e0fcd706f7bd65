"""The `kubeforge` command."""

from __future__ import annotations

import typer

from kubeforge.cli.apiserver import apiserver
from kubeforge.cli.demo import demo

app = typer.Typer(
    name="kubeforge",
    help="Build Kubernetes operators in Python, the kubebuilder way.",
    no_args_is_help=True,
    add_completion=False,
)
app.command("apiserver")(apiserver)
app.command("demo")(demo)


if __name__ == "__main__":  # pragma: no cover
    app()
