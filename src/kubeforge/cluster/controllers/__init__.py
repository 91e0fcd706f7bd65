"""kubeforge.cluster.controllers."""
