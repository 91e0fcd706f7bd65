"""The development cluster in Python: `DevCluster` is what `kubeforge dev` runs (the API
server, the built-in controllers, simulated nodes), configured by `ClusterOptions` (the
command's flags; `ClusterOptions.bare()` is an API server alone). docs/devcluster.md is the
guide.

Names are loaded on first use: `ClusterOptions` alone does not import the cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubeforge._lazyload import lazy_exports

__all__ = ["ClusterOptions", "DevCluster"]

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "ClusterOptions": "kubeforge._cluster.options",
    "DevCluster": "kubeforge._cluster.devcluster",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from kubeforge._cluster.devcluster import DevCluster as DevCluster
    from kubeforge._cluster.options import ClusterOptions as ClusterOptions
