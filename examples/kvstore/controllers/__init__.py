"""The controllers of kvstore: one module per kind (`kubeforge create api`)."""
