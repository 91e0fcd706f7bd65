"""kubeforge.testing."""
