"""kubeforge._runtime."""
