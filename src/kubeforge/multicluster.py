"""Controllers that span clusters, after kubernetes-sigs/multicluster-runtime: a
`MultiClusterManager` runs controllers (built as `fleet.controller().for_(...)...`) across
the clusters a provider engages while the manager runs, each cluster with its own cache and
client. Requests name their cluster (`ClusterRequest`); a reconciler's `client` goes to the
cluster of the request at hand, and `current_cluster()` names it. Providers:
`KubeconfigProvider` (kubeconfig files, contexts, settings; `add`/`remove` at run time) and
`KubeconfigSecretProvider` (kubeconfig Secrets in a namespace, watched). A provider of one's
own implements `Provider` and keeps its clusters in a `ClusterSet`.
"""

from __future__ import annotations

from kubeforge._runtime.clusterset import ClusterSet
from kubeforge._runtime.mcbuilder import MultiClusterBuilder
from kubeforge._runtime.mccontroller import MultiClusterController
from kubeforge._runtime.mcmanager import MultiClusterManager
from kubeforge._runtime.multicluster import (
    LOCAL_CLUSTER,
    Aware,
    Cluster,
    ClusterNotFound,
    ClusterRequest,
    Provider,
    current_cluster,
)
from kubeforge._runtime.providers import (
    DEFAULT_KUBECONFIG_KEY,
    DEFAULT_KUBECONFIG_LABEL,
    KubeconfigProvider,
    KubeconfigSecretProvider,
    MakeCluster,
)

__all__ = [
    "DEFAULT_KUBECONFIG_KEY",
    "DEFAULT_KUBECONFIG_LABEL",
    "LOCAL_CLUSTER",
    "Aware",
    "Cluster",
    "ClusterNotFound",
    "ClusterRequest",
    "ClusterSet",
    "KubeconfigProvider",
    "KubeconfigSecretProvider",
    "MakeCluster",
    "MultiClusterBuilder",
    "MultiClusterController",
    "MultiClusterManager",
    "Provider",
    "current_cluster",
]
