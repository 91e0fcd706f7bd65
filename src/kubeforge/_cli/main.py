"""The `kubeforge` command."""

from __future__ import annotations

import typer

from kubeforge._cli.alpha import app as alpha_app
from kubeforge._cli.apiserver import apiserver
from kubeforge._cli.create import app as create_app
from kubeforge._cli.demo import demo
from kubeforge._cli.deploy import build_installer, deploy, undeploy
from kubeforge._cli.dev import app as dev_app
from kubeforge._cli.edit import CONTEXT as EDIT_CONTEXT, edit
from kubeforge._cli.init import init
from kubeforge._cli.install import install, uninstall
from kubeforge._cli.manifests import manifests
from kubeforge._cli.migrate import migrate_storage_command
from kubeforge._cli.run import run
from kubeforge._cli.version import version

app = typer.Typer(
    name="kubeforge",
    help="Build Kubernetes operators in Python, the kubebuilder way.",
    no_args_is_help=True,
    add_completion=False,
)
app.command("init")(init)
app.add_typer(create_app, name="create")
app.command("edit", context_settings=EDIT_CONTEXT)(edit)
app.command("apiserver")(apiserver)
app.command("demo")(demo)
app.add_typer(dev_app, name="dev")
app.command("manifests")(manifests)
app.command("install")(install)
app.command("uninstall")(uninstall)
app.command("run")(run)
app.command("deploy")(deploy)
app.command("undeploy")(undeploy)
app.command("build-installer")(build_installer)
app.command("migrate-storage")(migrate_storage_command)
app.command("version")(version)
app.add_typer(alpha_app, name="alpha")


if __name__ == "__main__":  # pragma: no cover
    app()
