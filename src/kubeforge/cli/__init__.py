"""kubeforge.cli."""
