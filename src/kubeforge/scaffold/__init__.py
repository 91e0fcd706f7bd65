"""kubeforge.scaffold."""
