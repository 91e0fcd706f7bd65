"""The API types of kvstore: one package per version (`kubeforge create api`)."""
