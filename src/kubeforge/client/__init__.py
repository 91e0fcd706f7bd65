"""kubeforge.client."""
