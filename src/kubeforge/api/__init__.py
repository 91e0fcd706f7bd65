"""kubeforge.api."""
