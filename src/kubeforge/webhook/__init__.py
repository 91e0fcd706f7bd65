"""kubeforge.webhook."""
