"""kubeforge._cli."""
