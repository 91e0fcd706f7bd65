"""`kubeforge version`: the release and what it runs on, as `kubebuilder version` prints its
build information (its release, the Kubernetes version it vendors, the OS and architecture)."""

from __future__ import annotations

import platform
import sys

import typer

from kubeforge._apiserver.config import ServerConfig
from kubeforge._version import __version__

__all__ = ["version", "version_lines"]


def version_lines() -> list[str]:
    """What `kubeforge version` prints, one fact a line."""
    implementation = platform.python_implementation()
    return [
        f"kubeforge: {__version__}",
        f"Kubernetes API: v{ServerConfig.kubernetes_version} "
        "(served by `kubeforge dev` and the test environment)",
        f"Python: {platform.python_version()} ({implementation}, {sys.executable})",
        f"Platform: {sys.platform}/{platform.machine()}",
    ]


def version() -> None:
    """Print kubeforge's release, the Kubernetes API version it serves, Python and the platform."""
    for line in version_lines():
        typer.echo(line)
