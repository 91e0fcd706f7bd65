"""The embedded Kubernetes API server.

async with kubeforge.apiserver.APIServer() as server:
    server.write_kubeconfig("kubeconfig")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubeforge.apiserver.http.server import ConnectionLimits
    from kubeforge.apiserver.server import APIServer, ServerConfig, serve, tune_gc

__all__ = ["APIServer", "ConnectionLimits", "ServerConfig", "serve", "tune_gc"]


def __getattr__(name: str) -> Any:
    # Importing the server pulls in every part of it; submodules stay importable alone.
    if name in __all__:
        from kubeforge.apiserver import server

        return getattr(server, name)
    raise AttributeError(name)
