"""Connection options of the commands, each with its help text in one place.

The cluster a client command talks to (`install`, `deploy`, `run`, `migrate-storage` ...):
`--kubeconfig` and `--context`, chosen as kubectl chooses them, and a step run against that
cluster whose failures end the command with one line. The limits the API server of
`kubeforge apiserver` and `kubeforge dev` puts on its clients' connections.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any

import typer

from kubeforge._apiserver.http.server import ConnectionLimits
from kubeforge._cli.project import fail
from kubeforge._client.config import ClusterConfig, ConfigError, load_config
from kubeforge._client.errors import ApiError

__all__ = [
    "DEFAULTS",
    "BodyTimeout",
    "ContextOption",
    "HeaderTimeout",
    "IdleTimeout",
    "KubeconfigOption",
    "MaxConnections",
    "MaxHeaderBytes",
    "StepFailed",
    "cluster_config",
    "describe_cluster",
    "run_against",
]

# -- the cluster a command talks to ----------------------------------------------------------

KubeconfigOption = Annotated[
    Path | None,
    typer.Option(help="The kubeconfig file (default: KUBECONFIG, ~/.kube/config, in-cluster)."),
]
ContextOption = Annotated[
    str | None, typer.Option(help="The kubeconfig context (default: the current context).")
]


class StepFailed(Exception):
    """A step against the cluster failed; the message says which and why."""


def cluster_config(kubeconfig: Path | None, context: str | None) -> ClusterConfig:
    """The cluster to talk to, as kubectl would choose it; a bad configuration ends the command."""
    try:
        return load_config(kubeconfig=kubeconfig, context=context)
    except ConfigError as exc:
        raise fail(str(exc)) from None


def describe_cluster(config: ClusterConfig) -> str:
    """The cluster as a command's output names it: its context, or else its server."""
    return f"context {config.context!r}" if config.context else config.server


def run_against(step: Coroutine[Any, Any, None], config: ClusterConfig) -> None:
    """Run `step` against the cluster of `config`; a StepFailed, an unreachable server or
    an error the server answered ends the command with one line."""
    try:
        asyncio.run(step)
    except StepFailed as exc:
        raise fail(str(exc)) from None
    except ConnectionError as exc:
        raise fail(f"cannot reach the API server at {config.server}: {exc}") from None
    except ApiError as exc:
        raise fail(str(exc)) from None


# -- the API server's connection limits ------------------------------------------------------

DEFAULTS = ConnectionLimits()  # kube-apiserver's values (see ConnectionLimits)

HeaderTimeout = Annotated[
    float,
    typer.Option(min=0.001, help="Seconds a client has to send a request's line and headers."),
]
BodyTimeout = Annotated[
    float, typer.Option(min=0.001, help="Seconds a client has to send a request's body.")
]
IdleTimeout = Annotated[
    float,
    typer.Option(min=0.001, help="Seconds a kept-alive connection may wait for its next request."),
]
MaxConnections = Annotated[
    int,
    typer.Option(min=1, help="Open connections served at once; more are answered 429 and closed."),
]
MaxHeaderBytes = Annotated[
    int, typer.Option(min=1024, help="Largest request line and headers, in bytes.")
]
