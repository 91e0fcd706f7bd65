"""kubeforge.cluster."""
