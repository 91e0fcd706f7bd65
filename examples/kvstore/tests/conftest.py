"""The cluster the tests run on: three nodes, so that a member can fail over to another, and
the store's image `kvstore:0.1` run from store/ as processes of this machine, so that what a
member writes lands in its volume's directory and outlives its pod.

On an existing cluster (KUBEFORGE_USE_EXISTING_CLUSTER=1) these options do not apply: the
cluster must have several nodes and run the image, as `kubeforge dev --nodes 3 --image
kvstore:0.1=store` (`make dev`) does, or kind with the image loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kubeforge.cluster import ClusterOptions

STORE = Path(__file__).resolve().parents[1] / "store"


@pytest.fixture
def kubeforge_cluster_options() -> ClusterOptions:
    return ClusterOptions(nodes=3, images={"kvstore:0.1": STORE})
