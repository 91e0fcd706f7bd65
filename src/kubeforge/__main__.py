"""`python -m kubeforge` runs the `kubeforge` command."""

from kubeforge._cli.main import app

app(prog_name="kubeforge")
