"""kubeforge.runtime."""
