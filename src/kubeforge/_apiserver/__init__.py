"""The embedded Kubernetes API server.

async with kubeforge.apiserver.APIServer() as server:
    server.write_kubeconfig("kubeconfig")

Its stages are sub-packages, each importing only those below it (docs/concepts.md draws
them; tests/unit/test_layering.py holds the code to it), from the bottom: `http` (framing),
`request` (what is asked, decoded; Status errors), `webhookclient` (calling webhooks),
`types` (served types, schemas, defaults, strategies, validation, conversion), `storage`
(store, watch fan-out, persistence, managed fields, patches, commits), `printing` (tables),
`discovery` (discovery and OpenAPI documents), `handlers` (one module per verb family, the
write pipeline), `admission`, `auth` and `controllers` (the server's own loops). The modules
here are the top: `server` puts the stages together, `router` sends each request to its
stage, `config`, `tls` and `kubeconfig` are the server's settings and credentials.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubeforge._apiserver.config import ServerConfig
    from kubeforge._apiserver.http.server import ConnectionLimits
    from kubeforge._apiserver.server import APIServer, serve, tune_gc

__all__ = ["APIServer", "ConnectionLimits", "ServerConfig", "serve", "tune_gc"]


def __getattr__(name: str) -> Any:
    # Importing the server pulls in every part of it; submodules stay importable alone.
    if name == "ServerConfig":
        from kubeforge._apiserver import config
        return config.ServerConfig
    if name == "ConnectionLimits":
        from kubeforge._apiserver.http import server as http

        return http.ConnectionLimits
    if name in __all__:
        from kubeforge._apiserver import server
        return getattr(server, name)
    raise AttributeError(name)
