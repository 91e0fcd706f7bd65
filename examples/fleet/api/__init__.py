"""The API types of fleet: one package per version (`kubeforge create api`)."""
