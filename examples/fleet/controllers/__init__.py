"""The controllers of fleet: one module per kind (`kubeforge create api`)."""
