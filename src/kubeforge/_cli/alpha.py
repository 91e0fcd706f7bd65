"""`kubeforge alpha`: commands whose behaviour may still change, as kubebuilder's `alpha`
group holds `generate` and `update` (pkg/cli/alpha.go)."""

from __future__ import annotations

import typer

from kubeforge._cli.generate import generate
from kubeforge._cli.update import update

__all__ = ["app"]

app = typer.Typer(
    help="Re-scaffold a project (generate) or upgrade its scaffold (update); may still change.",
    no_args_is_help=True,
)
app.command("generate")(generate)
app.command("update")(update)
