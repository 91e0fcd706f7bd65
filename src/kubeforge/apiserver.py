"""The embedded Kubernetes API server: what `kubeforge apiserver` runs and every development
cluster and test environment is built on, usable alone.

    async with kubeforge.apiserver.APIServer() as server:
        server.write_kubeconfig("kubeconfig")

`ServerConfig` holds its settings and `ConnectionLimits` the HTTP layer's limits; `serve`
runs one until cancelled; `tune_gc` sets the garbage collector as a long-lived server wants
it. docs/apiserver.md is the guide.

Names are loaded on first use: the server's modules are imported by the first of them read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubeforge._lazyload import lazy_exports

__all__ = ["APIServer", "ConnectionLimits", "ServerConfig", "serve", "tune_gc"]

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "APIServer": "kubeforge._apiserver.server",
    "ConnectionLimits": "kubeforge._apiserver.http.server",
    "ServerConfig": "kubeforge._apiserver.config",
    "serve": "kubeforge._apiserver.server",
    "tune_gc": "kubeforge._apiserver.server",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from kubeforge._apiserver.config import ServerConfig as ServerConfig
    from kubeforge._apiserver.http.server import ConnectionLimits as ConnectionLimits
    from kubeforge._apiserver.server import (
        APIServer as APIServer,
        serve as serve,
        tune_gc as tune_gc,
    )
